#!/usr/bin/env bash
# Installs the Debian packages the tests use and cannot build from module
# sources: PostgreSQL (for Trillian), Chromium and Node (the browser test),
# jq and OpenSSL (the stock-tools check of docs/evidence.md), a static
# busybox (the debug image's tools), and the real node's runc, CNI plugins
# and iptables (its containerd is built from module sources: Debian's 1.6
# has no image volumes).
# Only what is missing, and only with apt-get as root; otherwise it says
# what to install and fails.
set -euo pipefail
missing=()
compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || missing+=(postgresql)
command -v chromium >/dev/null || missing+=(chromium)
command -v npm >/dev/null || missing+=(nodejs npm)
command -v jq >/dev/null || missing+=(jq)
command -v openssl >/dev/null || missing+=(openssl)
[[ -x /bin/busybox ]] || missing+=(busybox-static)
command -v runc >/dev/null || missing+=(runc)
[[ -x /usr/lib/cni/bridge ]] || missing+=(containernetworking-plugins)
command -v iptables >/dev/null || missing+=(iptables)
((${#missing[@]})) || exit 0
if [[ $(id -u) != 0 ]] || ! command -v apt-get >/dev/null; then
  echo "the tests need these Debian packages: ${missing[*]} (apt-get install them as root)" >&2
  exit 1
fi
apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}"

#!/usr/bin/env bash
# Takes the static busybox for linux/ARCH out of Debian's busybox-static
# package, which apt fetches and checks against the archive's signed
# indexes: the debug image's tools for each architecture the images are
# built for (make image). Writes OUT_DIR/busybox and OUT_DIR/version (the
# package's version, for the image's SBOM). Adds ARCH to dpkg's foreign
# architectures when it is not the machine's own, which needs root.
#
# usage: hack/busybox.sh ARCH OUT_DIR
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 ARCH OUT_DIR" >&2; exit 2; }
arch=$1 out=$2
command -v apt-get >/dev/null || { echo "hack/busybox.sh: the debug image's busybox comes from Debian's busybox-static:$arch; apt-get is needed" >&2; exit 1; }
if [ "$arch" != "$(dpkg --print-architecture)" ] && ! dpkg --print-foreign-architectures | grep -qx "$arch"; then
  [ "$(id -u)" = 0 ] || { echo "hack/busybox.sh: adding $arch to dpkg's architectures needs root (dpkg --add-architecture $arch; apt-get update)" >&2; exit 1; }
  dpkg --add-architecture "$arch"
  apt-get update
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# apt drops to its own user to download; the folder is root's.
chmod 0777 "$work"
(cd "$work" && apt-get download "busybox-static:$arch" >/dev/null 2>&1) || {
  apt-get update >/dev/null
  (cd "$work" && apt-get download "busybox-static:$arch")
}
deb=$(ls "$work"/busybox-static_*_"$arch".deb)
dpkg-deb -x "$deb" "$work/x"
mkdir -p "$out"
install -m 0755 "$work/x/bin/busybox" "$out/busybox"
dpkg-deb -f "$deb" Version > "$out/version"
echo ">> busybox-static:$arch $(cat "$out/version") in $out"

#!/usr/bin/env bash
# Fetches the OpenAPI v3 documents each Kubernetes version's API server
# serves for its GA groups (api/openapi-spec/v3 in its module, the same
# definitions the server is built from) into DIR/<version>/, so the
# policies are type-checked against every version the chart claims
# (test/integration TestTypeCheckedOnEveryVersion). Only module sources
# from the Go module proxy; a version already fetched is kept.
#
# usage: hack/openapi-specs.sh DIR VERSION...
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 DIR VERSION..." >&2; exit 2; }
dir=$1; shift
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for v in "$@"; do
  out=$dir/$v
  [ -f "$out/api__v1_openapi.json" ] && continue
  # Outside any module, so nothing here edits a go.mod.
  src=$(cd "$work" && GOFLAGS=-mod=mod "${GO:-go}" mod download -json "k8s.io/kubernetes@$v" | grep -o '"Dir": "[^"]*"' | cut -d'"' -f4)
  [ -d "$src/api/openapi-spec/v3" ] || { echo "k8s.io/kubernetes@$v has no api/openapi-spec/v3" >&2; exit 1; }
  mkdir -p "$out.tmp"
  cp "$src"/api/openapi-spec/v3/*__v1_openapi.json "$out.tmp/"
  chmod u+w "$out.tmp"/*
  rm -rf "$out" && mv "$out.tmp" "$out"
  echo ">> OpenAPI v3 documents of Kubernetes $v: $(ls "$out" | wc -l) groups"
done

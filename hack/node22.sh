#!/usr/bin/env bash
# Unpacks Node.js 22 into bin/node22 from the npm registry (the
# node-linux-<arch> packages carry the official build). Backstage needs 22
# or 24; Debian's nodejs is 20. The tarball must match the pinned digest.
set -euo pipefail
version=22.23.5
case "$(uname -m)" in
  x86_64) arch=x64; want=sha512-3jhC+wcoWxKZxcRqF2sUSl0c9HEXFnur/nuIPx6O6CWKV0jOUWQm7Htw5SuXqqlMCEhi0cJqybFPEb5hhcBiMw== ;;
  aarch64) arch=arm64; want=sha512-e1LOUGKVruPGuLVutn8+Cgm5pI1APm4Kvh+zbb/qe/ZpD9s+TQby5iUgZOWmPpbSKpj0Td8DP1N0NEnXasHizg== ;;
  *) echo "no Node.js $version package for $(uname -m)" >&2; exit 1 ;;
esac
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "node-linux-$arch@$version" >/dev/null)
tgz=$tmp/node-linux-$arch-$version.tgz
got=sha512-$(openssl dgst -sha512 -binary "$tgz" | base64 -w0)
if [ "$got" != "$want" ]; then
  echo "node-linux-$arch@$version: digest $got, want $want" >&2
  exit 1
fi
rm -rf "$bin/node22"
mkdir -p "$bin/node22"
tar -xzf "$tgz" -C "$bin/node22" --strip-components=1
"$bin/node22/bin/node" --version

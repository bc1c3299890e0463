#!/usr/bin/env bash
# Builds an external tool once per machine, not once per clone: the
# outputs are kept in TOOLS_CACHE under a key made of everything that
# decides them (the tool module's files, the build command, the Go
# toolchain and platform), and a clone's bin/ gets them from there. A new
# clone, or a clean one in CI on the same machine, so skips the builds
# that take most of a fresh `make test`; a change to a tool's go.mod or
# go.sum is a new key, and so a new build.
#
# usage: hack/tool-cache.sh MODULE_DIR BIN_DIR 'OUTPUT...' 'BUILD COMMAND'
#        TOOL_CACHE_PROBE=1 hack/tool-cache.sh ...: exits 0 if built, 1 if not
# The command runs in MODULE_DIR with OUT set to an empty directory and
# must write every OUTPUT (a file name) into it.
set -euo pipefail
[ $# -eq 4 ] || { echo "usage: $0 MODULE_DIR BIN_DIR 'OUTPUT...' 'BUILD COMMAND'" >&2; exit 2; }
module=$1 bin=$2 outputs=$3 command=$4
cache=${TOOLS_CACHE:?TOOLS_CACHE is not set (the Makefile sets it)}

key=$( {
  "${GO:-go}" env GOVERSION GOOS GOARCH
  printf '%s\n' "$command" "$outputs"
  find "$module" -maxdepth 1 -type f -print0 | sort -z | xargs -0 sha256sum
} | sha256sum | cut -c1-16)
name=${outputs%% *}
dir=$cache/$name-$key

complete() { for o in $outputs; do [ -f "$1/$o" ] || return 1; done; }

# TOOL_CACHE_PROBE=1 only asks: is it built here? (make release-tools-cached)
if [ -n "${TOOL_CACHE_PROBE:-}" ]; then
  complete "$dir" && exit 0
  echo ">> $outputs: not in the tool cache" >&2
  exit 1
fi
mkdir -p "$cache" "$bin"
if complete "$dir"; then
  echo ">> $outputs: reused from $dir"
else
  tmp=$(mktemp -d "$cache/.building-$name-XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  # Niced: under make test a suite runs beside the build, and a test's
  # deadline matters where a build only finishes later.
  (cd "$module" && OUT=$tmp nice -n 10 bash -c "$command")
  complete "$tmp" || { echo "building $outputs in $module wrote only: $(ls "$tmp")" >&2; exit 1; }
  # Another clone may have finished the same build meanwhile; either is
  # the same build, so the first one kept wins.
  mv -T "$tmp" "$dir" 2>/dev/null || true
fi
for o in $outputs; do
  # A hard link where the cache and the clone share a file system; the
  # touch makes bin/ newer than the tool's go.sum, so make is satisfied.
  ln -f "$dir/$o" "$bin/$o" 2>/dev/null || cp -f "$dir/$o" "$bin/$o"
  touch "$bin/$o"
done

#!/usr/bin/env bash
# Runs each fuzz target for FUZZTIME. Go 1.26's fuzzing coordinator can
# report its own -fuzztime deadline as a failure ("context deadline
# exceeded", with no failing input) when a worker is mid-call as the time
# runs out on a busy machine (go.dev/issue/75804, fixed in Go 1.27). Such
# a run found nothing and wrote nothing, so it is run again, up to twice
# more (make test may build tools beside it); a failure that writes a
# failing input, or any other failure, fails at once.
#
# usage: hack/fuzz.sh FUZZTIME PKG:Target...
set -uo pipefail
[ $# -ge 2 ] || { echo "usage: $0 FUZZTIME PKG:Target..." >&2; exit 2; }
fuzztime=$1
shift
go=${GO:-go}

# fuzz_once PKG TARGET: 0 passed, 1 failed, 3 the coordinator's own deadline.
fuzz_once() {
  local pkg=$1 target=$2 out rc
  out=$("$go" test -run '^$' -fuzz "^$target\$" -fuzztime "$fuzztime" "./$pkg" 2>&1)
  rc=$?
  grep -v '^fuzz: elapsed' <<<"$out"
  [ $rc -eq 0 ] && return 0
  if grep -q '^    context deadline exceeded$' <<<"$out" && ! grep -q 'Failing input written to' <<<"$out"; then
    return 3
  fi
  return 1
}

for t in "$@"; do
  pkg=${t%%:*} target=${t##*:}
  echo ">> fuzzing $target in $pkg for $fuzztime"
  for try in 1 2 3; do
    fuzz_once "$pkg" "$target"
    rc=$?
    [ $rc -eq 3 ] || break
    echo ">> $target: the fuzzing coordinator reported its own deadline and no failing input (go.dev/issue/75804), try $try of 3"
  done
  [ $rc -eq 0 ] || { echo ">> $target failed"; exit 1; }
done

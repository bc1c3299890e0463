#!/usr/bin/env bash
# Runs each fuzz target for FUZZTIME. Go 1.26's fuzzing coordinator can
# report its own -fuzztime deadline as a failure ("context deadline
# exceeded", with no failing input) when a worker is mid-call as the time
# runs out on a busy machine (go.dev/issue/75804, fixed in Go 1.27). Such
# a run found nothing and wrote nothing, so it is run once more; a failure
# that writes a failing input, or any other failure, fails at once.
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
  fuzz_once "$pkg" "$target"
  rc=$?
  if [ $rc -eq 3 ]; then
    echo ">> $target: the fuzzing coordinator reported its own deadline and no failing input (go.dev/issue/75804); once more"
    fuzz_once "$pkg" "$target"
    rc=$?
  fi
  [ $rc -eq 0 ] || { echo ">> $target failed"; exit 1; }
done

#!/usr/bin/env bash
# pjdfstest.sh: the pjdfstest POSIX conformance suite on `pario mount
# --allow-other`, and optionally on a local directory as the baseline.
# pjdfstest is not part of pario: fetch github.com/pjd/pjdfstest outside
# this repository, build it (autoreconf -ifs && ./configure && make
# pjdfstest) and pass its directory.
#
#   scripts/pjdfstest.sh /path/to/pjdfstest                    # whole suite on the mount
#   scripts/pjdfstest.sh -b -o /tmp/pjd /path/to/pjdfstest     # and on a local directory
#   scripts/pjdfstest.sh -t chmod -t open /path/to/pjdfstest   # some test directories only
#
# Options: -p pario binary (default: built from this tree), -o results
# directory (default: a new one under $TMPDIR), -b also run the suite in a
# local directory (under -l DIR, default $TMPDIR) as the baseline, -t NAME
# run only tests/NAME (repeatable; default all of tests/).
#
# It starts its own cluster (`pario up` in a temporary directory) and
# mounts it with --allow-other on a temporary mount point, then runs
# `prove -v -r` with the working directory inside the mount, as pjdfstest
# requires. Results: RESULTS/pario.tap (prove's output), RESULTS/pario.failures
# (one line per test file with failures: "failed planned file"),
# RESULTS/pario.notok (every failed test: what was tried, what was expected,
# what came back), and the same for local.*; the line printed per target is
# failures/total.
# Whatever fails, the mount is unmounted and the servers stopped.
# Run as root (pjdfstest changes owners and switches users); needs prove
# (perl) and fusermount3.
set -euo pipefail

pario="" results="" baseline=no localdir="${TMPDIR:-/tmp}" tests=()
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit "${1:-2}"; }
case "${1:-}" in -h | --help) usage 0 ;; esac
while getopts "p:o:bl:t:h" opt; do
  case $opt in
    p) pario=$OPTARG ;;
    o) results=$OPTARG ;;
    b) baseline=yes ;;
    l) localdir=$OPTARG ;;
    t) tests+=("$OPTARG") ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))
[ $# -eq 1 ] || usage
suite=$(cd "$1" && pwd)

[ -x "$suite/pjdfstest" ] || { echo "pjdfstest.sh: $suite/pjdfstest is missing: build it there first (make pjdfstest)" >&2; exit 2; }
[ -d "$suite/tests" ] || { echo "pjdfstest.sh: $suite/tests is not a directory" >&2; exit 2; }
command -v prove >/dev/null || { echo "pjdfstest.sh: prove not found (apt-get install perl)" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "pjdfstest.sh: run as root (the suite chowns and switches users)" >&2; exit 2; }
cd "$(dirname "$0")/.."
if [ -z "$pario" ]; then
  go build -o bin/pario ./cmd/pario
  pario=bin/pario
fi
pario=$(cd "$(dirname "$pario")" && pwd)/$(basename "$pario")
[ -n "$results" ] || results=$(mktemp -d "${TMPDIR:-/tmp}/pjdfstest-results.XXXXXX")
mkdir -p "$results"
results=$(cd "$results" && pwd)

targets=()
if [ ${#tests[@]} -eq 0 ]; then
  targets=("$suite/tests")
else
  for t in "${tests[@]}"; do targets+=("$suite/tests/$t"); done
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/pjdfstest.XXXXXX")
mnt=$work/mnt up_pid="" mount_pid="" prove_pid="" local=""
cleanup() {
  cd /
  if [ -n "$prove_pid" ]; then
    kill "$prove_pid" 2>/dev/null || true
    wait "$prove_pid" 2>/dev/null || true
  fi
  if [ -n "$mount_pid" ]; then
    "$pario" umount "$mnt" 2>/dev/null || fusermount3 -u "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null || true
    kill "$mount_pid" 2>/dev/null || true
    wait "$mount_pid" 2>/dev/null || true
  fi
  if [ -n "$up_pid" ]; then
    kill "$up_pid" 2>/dev/null || true
    wait "$up_pid" 2>/dev/null || true
  fi
  [ -z "$local" ] || rm -rf "$local"
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# run NAME DIR: prove the suite with DIR as the working directory.
run() {
  local name=$1 dir=$2 tap=$results/$1.tap
  echo "pjdfstest.sh: $name: prove -v -r ${targets[*]} in $dir" >&2
  # In the background and waited for, so that Ctrl-C or a kill reaches the
  # trap at once rather than after the suite.
  (cd "$dir" && exec prove -v -r "${targets[@]}") >"$tap" 2>&1 &
  prove_pid=$!
  wait "$prove_pid" || true
  prove_pid=""
  # With -v each failure says what was tried and what came back.
  grep '^not ok' "$tap" >"$results/$name.notok" || true
  # Test Summary Report lines: "FILE (Wstat: W Tests: N Failed: F)"; a file
  # that died before its plan shows as a parse error with no Failed count.
  awk '/ \(Wstat: / {
         file = $1; failed = 0; tests = 0
         for (i = 2; i <= NF; i++) {
           if ($i == "Tests:") tests = $(i + 1) + 0
           if ($i == "Failed:") { failed = $(i + 1); sub(/\)/, "", failed); failed += 0 }
         }
         sub("^.*/tests/", "", file)
         print failed, tests, file
       }' "$tap" >"$results/$name.failures"
  local total failed
  total=$(sed -n 's/^Files=[0-9]*, Tests=\([0-9]*\),.*/\1/p' "$tap" | tail -1)
  failed=$(awk '{ s += $1 } END { print s + 0 }' "$results/$name.failures")
  echo "$failed/${total:-?}" >"$results/$name.summary"
  echo "$name: $failed/${total:-?} failed ($(wc -l <"$results/$name.failures") test files with failures; $results/$name.tap)"
}

mkdir -p "$mnt" "$work/data"
"$pario" up --dir "$work/data" --servers 2 >"$work/up.log" 2>&1 &
up_pid=$!
for _ in $(seq 600); do
  [ -s "$work/data/cluster" ] && break
  kill -0 "$up_pid" 2>/dev/null || { cat "$work/up.log" >&2; exit 1; }
  sleep 0.1
done
[ -s "$work/data/cluster" ] || { echo "pjdfstest.sh: pario up did not start; $work/up.log:" >&2; cat "$work/up.log" >&2; exit 1; }
"$pario" mount --cluster "$work/data/cluster" --allow-other "$mnt" >"$work/mount.log" 2>&1 &
mount_pid=$!
for _ in $(seq 600); do
  mountpoint -q "$mnt" && break
  kill -0 "$mount_pid" 2>/dev/null || { cat "$work/mount.log" >&2; exit 1; }
  sleep 0.1
done
mountpoint -q "$mnt" || { echo "pjdfstest.sh: the mount did not come up" >&2; cat "$work/mount.log" >&2; exit 1; }

run pario "$mnt"
cp "$work/mount.log" "$results/mount.log"
if [ "$baseline" = yes ]; then
  local=$(mktemp -d "$localdir/pjdfstest-local.XXXXXX")
  chmod 0755 "$local"
  run local "$local"
fi

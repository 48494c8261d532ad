#!/usr/bin/env bash
# bench-meta.sh: metadata operations (mdtest's create / stat / remove
# phases, a directory per rank and one shared directory) on the local disk,
# through `pario mount` and with the native client, side by side; prints
# ops/s and the ratios to local (medians of 3 repetitions by default).
#
#   scripts/bench-meta.sh [metabench flags...]          e.g. -n 2000 -ranks 4
#   scripts/bench-meta.sh -mdtest /path/to/mdtest       # mdtest beside, under mpirun
#
# mdtest is optional (build it from github.com/hpc/ior, as for
# scripts/compare-ior.sh). Needs /dev/fuse and Debian's fuse3 for the
# mount. BENCH_DIR picks the disk (default ./tmp).
set -euo pipefail
case "${1:-}" in -h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; echo "flags: those of tools/metabench (go run ./tools/metabench -h)"; exit 0 ;; esac
cd "$(dirname "$0")/.."
mkdir -p bin
go build -o bin/pario ./cmd/pario
go build -o bin/metabench ./tools/metabench
dir="${BENCH_DIR:-tmp}"
mkdir -p "$dir"
exec bin/metabench -pario bin/pario -dir "$(mktemp -d "$dir/metabench.XXXXXX")" "$@"

#!/usr/bin/env bash
# bench-mount.sh: the FUSE mount against the native client and the local disk.
#
# One stream writes a 2 GiB file sequentially in 1 MiB transfers
# (incompressible data, fsync at the end, included in the time), the page
# cache is dropped, and the stream reads it back checking each transfer's
# stamp: through `pario mount` (its own process), through the native Go
# client, and with pwrite/pread on a local file on the same disk. The
# cluster is a metadata server and 4 I/O servers as separate processes on
# loopback. The three alternate within each repetition; medians and the
# ratios mount/native and mount/local are printed. Target: mount >= 0.6x
# native for both.
#
#   scripts/bench-mount.sh [mountbench flags...]     e.g. -reps 5 -size 1g
#
# Run as root (drop_caches for cold reads, and the mount raises its
# read-ahead through /sys/class/bdi); needs /dev/fuse and Debian's fuse3.
# BENCH_DIR picks the disk.
set -euo pipefail
case "${1:-}" in -h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; echo "flags: those of tools/mountbench (go run ./tools/mountbench -h)"; exit 0 ;; esac
cd "$(dirname "$0")/.."
mkdir -p bin
go build -o bin/pario ./cmd/pario
go build -o bin/mountbench ./tools/mountbench
dir="${BENCH_DIR:-tmp}"
mkdir -p "$dir"
exec bin/mountbench -pario bin/pario -dir "$(mktemp -d "$dir/mountbench.XXXXXX")" "$@"

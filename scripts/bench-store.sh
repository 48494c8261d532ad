#!/usr/bin/env bash
# bench-store.sh: pario's striped store against plain POSIX on the same disk.
#
# 4 rank processes write a 2 GiB shared file in 1 MiB transfers (incompressible
# data, fsync/Sync at the end so the bytes are on disk), the page cache is
# dropped, and they read it back; once with pwrite/pread on a local file and
# once through pario with 4 I/O server processes, alternating, REPS times.
# Prints medians and the ratio pario/POSIX, and each I/O server's peak RSS.
#
#   scripts/bench-store.sh [storebench flags...]     e.g. -reps 5 -layout simple_stripe:strip_size=1m
#
# Run as root for real cold reads (drop_caches); otherwise it falls back to
# posix_fadvise(DONTNEED) on the files involved. BENCH_DIR picks the disk.
set -euo pipefail
case "${1:-}" in -h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; echo "flags: those of tools/storebench (go run ./tools/storebench -h)"; exit 0 ;; esac
cd "$(dirname "$0")/.."
mkdir -p bin
go build -o bin/pario ./cmd/pario
go build -o bin/storebench ./tools/storebench
dir="${BENCH_DIR:-tmp}"
mkdir -p "$dir"
exec bin/storebench -pario bin/pario -dir "$(mktemp -d "$dir/storebench.XXXXXX")" "$@"

#!/usr/bin/env bash
# soak.sh: a misbehaving client must not starve pario's servers.
#
# Starts a metadata server and 4 I/O servers as processes on loopback and
# runs 16 honest clients (create, write 4 MiB, sync every 4th, read back and
# compare, stat, remove) in alternating phases, alone and next to a
# misbehaving client on 127.0.0.2 that keeps 64 half-open connections per
# server, sends garbage, stalls in the middle of 64 MiB frames and pipelines
# 64 MiB reads it never reads. Prints the honest throughput of both phases
# (medians), their ratio (target >= 0.80) and every server's peak resident
# memory against its memory budget; exits non-zero if a target is missed.
# Bounded in time: 2 x ROUNDS x PHASE plus start-up (default about 65 s).
#
#   scripts/soak.sh [soak flags...]        e.g. -rounds 5 -phase 20s
set -euo pipefail
case "${1:-}" in -h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; echo "flags: those of tools/soak (go run ./tools/soak -h)"; exit 0 ;; esac
cd "$(dirname "$0")/.."
mkdir -p bin
go build -o bin/pario ./cmd/pario
go build -o bin/soak ./tools/soak
exec timeout 15m bin/soak -pario bin/pario "$@"

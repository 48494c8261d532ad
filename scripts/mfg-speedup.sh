#!/bin/sh
# The thesis' speedup against nruns (figures 7.3-7.5) on the emulated
# 8-node cluster: writes docs/mfg-speedup-runs.csv and .png (docs/mfg.md
# sets them beside the thesis' numbers). A few minutes on a small machine.
#
#   scripts/mfg-speedup.sh                   # nruns 8,16,32,64
#   scripts/mfg-speedup.sh --runs 8,16 --gens 20
set -eu
case "${1:-}" in -h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; echo "# flags: those of tools/mfgexp (go run ./tools/mfgexp -h)"; exit 0 ;; esac
cd "$(dirname "$0")/.."
bin=$(mktemp -d)/pario
trap 'rm -rf "$(dirname "$bin")"' EXIT
go build -o "$bin" ./cmd/pario
nice -n 5 go run ./tools/mfgexp --pario "$bin" --out docs "$@"

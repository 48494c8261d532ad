#!/usr/bin/env bash
# dock-figures.sh: the seed's (004, PI/OT) docking experiments, scaled down
# to run in a few minutes on a small machine: figure 7 (execution time by
# ComputeMolecule processes and granularity), figure 10 (the composed
# newspaper's ComputeMolecule/ComputeCEDE splits), a log template for the
# output against the sequential program, and the simpler segmentation
# function. Writes docs/dock-*.csv, docs/dock-*.svg and the markdown tables
# (seed beside ours) to docs/dock-results.md; docs/templates.md explains them.
#
#   scripts/dock-figures.sh                 # the seed's input, 3 trials
#   TRIALS=5 UNIT=2ms scripts/dock-figures.sh
#   OUT=/tmp/dock scripts/dock-figures.sh   # somewhere other than docs/
#
# UNIT (UNIT10 for figure 10) is the wall time standing for one second of the seed's computation:
# the compute step's time is waited, not spent, so each of up to 16 ranks
# has a processor of its own (see tools/dockexp). The input's I/O, its
# segmentation and the templates' coordination are real.
set -euo pipefail
case "${1:-}" in -h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;; "") ;; *) echo "dock-figures.sh: no arguments (settings are environment variables; -h)" >&2; exit 2 ;; esac
cd "$(dirname "$0")/.."
OUT=${OUT:-docs}
TRIALS=${TRIALS:-3}
UNIT=${UNIT:-1ms}
UNIT10=${UNIT10:-5ms}
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/dockexp" ./tools/dockexp
nice -n 5 "$bin/dockexp" -out "$OUT" -trials "$TRIALS" -unit "$UNIT" -unit10 "$UNIT10" | tee "$OUT/dock-results.md"

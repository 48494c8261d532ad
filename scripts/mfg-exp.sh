#!/bin/sh
# The thesis' chapter 7 experiments after speedup-against-nruns, on the
# emulated 8-node cluster; each writes docs/mfg-<exp>.csv and .png
# (docs/mfg.md sets them beside the thesis' numbers). A few minutes each
# on a small machine.
#
#   scripts/mfg-exp.sh np                # 7.6.2: speedup over np, saturation number
#   scripts/mfg-exp.sh strip             # 7.7.1: strip sizes
#   scripts/mfg-exp.sh lambda            # 7.7.2: line buffering
#   scripts/mfg-exp.sh iter              # 7.8:   speedup against iterations
#   scripts/mfg-exp.sh cmp128 --reps 3   # 7.9:   128 runs, the settings compared
#   scripts/mfg-exp.sh all               # every one in that order
set -eu
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 2; }
exp=$1
shift
case $exp in
-h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
np | strip | lambda | iter | cmp128 | all) ;;
*) echo "mfg-exp.sh: unknown experiment $exp (np, strip, lambda, iter, cmp128, all; -h)" >&2; exit 2 ;;
esac
bin=$(mktemp -d)/pario
trap 'rm -rf "$(dirname "$bin")"' EXIT
go build -o "$bin" ./cmd/pario
go build -o "$(dirname "$bin")/mfgexp" ./tools/mfgexp
if [ "$exp" = all ]; then set -- np strip lambda iter cmp128 "$@"; else set -- "$exp" "$@"; fi
for e in np strip lambda iter cmp128; do
	case " $* " in *" $e "*) ;; *) continue ;; esac
	args=$(printf '%s\n' "$@" | grep -vx 'np\|strip\|lambda\|iter\|cmp128' | tr '\n' ' ')
	# shellcheck disable=SC2086
	nice -n 5 "$(dirname "$bin")/mfgexp" --exp "$e" --pario "$bin" --out docs --reps 1 $args
done

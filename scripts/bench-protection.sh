#!/usr/bin/env bash
# bench-protection.sh: what wire protection costs, measured in one run.
#
# Builds storebench and pario at each given revision (default: the working
# tree built with the tag wirenomac, as "off"; then the working tree) and
# alternates their storebench runs (one repetition each, the order reversed
# every other round), so that every build sees the same machine. Each run
# measures local POSIX too: a system's figure is its ratio to the POSIX run
# next to it, and its cost is that ratio over the "off" build's. Prints the
# medians over the rounds.
#
#   scripts/bench-protection.sh [-rounds N] [-size SIZE] [-modes aead,integrity] [REV[+TAGS] ...]
#   e.g. scripts/bench-protection.sh -rounds 5 -size 1g .+wirenomac . 1f460bc
#
# "." is the working tree; +TAGS builds a revision with those build tags.
# A build with the tag wirenomac runs only its integrity mode, which that
# tag turns into the same records with no authentication at all (tags of
# zeros, not checked: wire/nomac.go): "off" in the table, the framing and
# all else as in the build measured beside it. (1f460bc, the last commit
# before frame protection, was "off" before that tag existed.)
# -modes: the wire protection modes measured in the other builds that have
# them (default aead: every run is then POSIX and one
# pario cluster, so that the runs' CPU times compare); with several, their
# order is reversed every other round. Other storebench
# flags go in STOREBENCH_FLAGS. The CPU time of each whole run is measured
# too: on a shared machine it varies far less than bandwidth does.
# Run as root for real cold reads (drop_caches). BENCH_DIR picks the disk.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=5 size=1g modes=aead
while [ $# -gt 0 ]; do
	case "$1" in
	-rounds) rounds="$2"; shift 2 ;;
	-size) size="$2"; shift 2 ;;
	-modes) modes="$2"; shift 2 ;;
	-h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
	-*) echo "bench-protection.sh: unknown flag $1" >&2; exit 2 ;;
	*) break ;;
	esac
done
revs=("$@")
[ ${#revs[@]} -gt 0 ] || revs=(.+wirenomac .)
dir="${BENCH_DIR:-tmp}"
mkdir -p "$dir"
work="$(realpath "$(mktemp -d "$dir/benchprot.XXXXXX")")"
trap 'rm -rf "$work"' EXIT

# build REV[+TAGS] DEST: pario and storebench of REV, built with TAGS, into DEST.
build() {
	local rev="${1%%+*}" tags="" dest="$2" src
	[[ "$1" != *+* ]] || tags="${1#*+}"
	mkdir -p "$dest"
	if [ "$rev" = . ]; then
		src="$PWD"
	else
		src="$dest/src"
		mkdir -p "$src"
		git archive "$rev" | tar -x -C "$src"
	fi
	(cd "$src" && go build -tags "$tags" -o "$dest/pario" ./cmd/pario && go build -tags "$tags" -o "$dest/storebench" ./tools/storebench)
	rm -rf "$dest/src"
}
for i in "${!revs[@]}"; do
	build "${revs[$i]}" "$work/b$i"
	rev="${revs[$i]%%+*}"
	echo "build $i: ${revs[$i]} ($(git rev-parse --short "$( [ "$rev" = . ] && echo HEAD || echo "$rev")")$( [ "$rev" = . ] && [ -n "$(git status --porcelain)" ] && echo ' + uncommitted changes'))"
done

host="$(hostname)"
echo "bench-protection $(date -u +%F) host=$host rounds=$rounds size=$size  $(nproc) CPUs  load: $(cut -d' ' -f1-3 /proc/loadavg)"
results="$work/results"
: >"$results"
for ((r = 0; r < rounds; r++)); do
	order=("${!revs[@]}")
	if ((r % 2 == 1)); then
		order=($(printf '%s\n' "${order[@]}" | tac))
	fi
	for i in "${order[@]}"; do
		b="$work/b$i"
		flags=(-size "$size" -reps 1)
		if "$b/storebench" -h 2>&1 | grep -q -- -wire-protection; then
			# storebench runs its systems in the order given (POSIX
			# first); where a run stands in that order moves its write
			# CPU by more than the modes differ, so the modes take turns.
			m="$modes"
			if [[ "${revs[$i]}" == *+*wirenomac* ]]; then
				m=integrity # off: see the comment at the top
			elif ((r % 2 == 1)); then
				m="$(tr ',' '\n' <<<"$modes" | tac | paste -sd,)"
			fi
			flags+=(-wire-protection "$m")
		fi
		# The CPU time of the whole run (storebench, its ranks and its
		# servers, all waited for): the same POSIX work in every build, so
		# the differences are pario's.
		out="$(/usr/bin/time -f '%U %S' -o "$work/cpu" "$b/storebench" -pario "$b/pario" -dir "$(mktemp -d "$work/run.XXXXXX")" "${flags[@]}" ${STOREBENCH_FLAGS:-} 2>"$work/stderr")" || { echo "storebench of build $i failed:" >&2; tail -20 "$work/stderr" >&2; exit 1; }
		cpu="$(awk '{ print $1 + $2 }' "$work/cpu")"
		# rep 1  MODE  write+sync W MiB/s   cold read R MiB/s [CPU s/GiB write CW read CR]
		echo "$out" | awk -v build="$i" -v round="$r" -v cpu="$cpu" '
			$1 == "rep" {
				w = $5; rd = $9; cw = "-"; cr = "-"
				for (k = 1; k <= NF; k++) if ($k == "s/GiB") { cw = $(k+2); cr = $(k+4) }
				print round, build, $3, w, rd, cw, cr, cpu
			}' >>"$results"
		echo "round $((r + 1)) build $i: $(echo "$out" | grep '^rep' | sed 's/  */ /g' | tr '\n' ';') run CPU ${cpu}s"
	done
done

# Paired ratios (system / POSIX of the same run), medians over the rounds,
# and each system's ratio over build 0's plain "pario" (or first) system.
awk -v revs="${revs[*]}" '
	function median(list,   a, n, i, j, t) {
		n = split(list, a, " ")
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	{ key = $1 " " $2; if ($3 == "posix") { pw[key] = $4; pr[key] = $5 } else { n++; row[n] = $0 } }
	END {
		split(revs, rv, " ")
		for (k = 1; k <= n; k++) {
			split(row[k], f, " ")
			mode = f[3]
			if (rv[f[2] + 1] ~ /\+.*wirenomac/) sub(/integrity/, "off", mode)
			sys = "build " f[2] " (" rv[f[2] + 1] ") " mode
			if (!(sys in seen)) { seen[sys] = 1; names[++m] = sys }
			w[sys] = w[sys] " " f[4]; rd[sys] = rd[sys] " " f[5]
			rw[sys] = rw[sys] " " f[4] / pw[f[1] " " f[2]]; rr[sys] = rr[sys] " " f[5] / pr[f[1] " " f[2]]
			if (f[6] != "-") { cw[sys] = cw[sys] " " f[6]; cr[sys] = cr[sys] " " f[7] }
			cpu[sys] = cpu[sys] " " f[8]
		}
		base = names[1]
		printf "\n%-36s %8s %8s %12s %11s %10s %9s %7s %7s %8s\n", "medians", "write", "read", "write/POSIX", "read/POSIX", "write/off", "read/off", "CPU w", "CPU r", "run CPU"
		for (k = 1; k <= m; k++) {
			s = names[k]
			printf "%-36s %8.1f %8.1f %12.2f %11.2f %10.2f %9.2f %7s %7s %7.1fs\n", s, median(w[s]), median(rd[s]), median(rw[s]), median(rr[s]), median(rw[s]) / median(rw[base]), median(rr[s]) / median(rr[base]), cw[s] == "" ? "-" : median(cw[s]), cr[s] == "" ? "-" : median(cr[s]), median(cpu[s])
		}
		print "(MiB/s; ratios are medians of each run paired with its own POSIX run; /off divides by the first system;"
		print " CPU w/r: s/GiB of ranks and servers, where storebench reports it; run CPU: the whole run, POSIX included)"
	}' "$results"

#!/bin/sh
# medic send --auto against raw, zstd and blast (issue 16, item 2): real
# blastp -outfmt 0 reports of three sizes (the first 4, 12 and 36 queries of
# mmseqs2's example query set against its 20,000-protein database), sent over
# an emulated link (tools/medicexp: in-process receiver behind an in-process
# toxiproxy) at bandwidths from 10 MB/s down to 50 KB/s and a few RTTs, and
# once with a CPU-loading process beside it. Socket buffers and the window
# are the bandwidth-delay product. Writes docs/medic-auto.{csv,png}
# (OUT_DOCS to change). About 20 minutes on a busy 2-core machine (REPS=3).
# Auto is medic.SendAuto (send --auto): a first send, then a repeated one
# that finds the link the first measured.
#
# Needs ncbi-blast+, mmseqs2-examples and Go, like scripts/medic-blast-e2e.sh.
#
#   scripts/medic-auto-sweep.sh
#   SIZES=4 BWS=1MB/s,50KB/s RTTS=100ms REPS=1 scripts/medic-auto-sweep.sh   # a minute
set -eu
case "${1:-}" in
-h | --help)
	# The comment above, without its leading "# ".
	sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'
	echo "Settings (environment): DATA OUT OUT_DOCS SIZES BWS RTTS LATBW LOADBW REPS"
	exit 0
	;;
"")
	;;
*)
	echo "usage: $0 [--help]; settings are environment variables (see --help)" >&2
	exit 2
	;;
esac
cd "$(dirname "$0")/.."
DATA=${DATA:-/usr/share/doc/mmseqs2/example-data}
OUT=${OUT:-tmp/medic-auto}
DOCS=${OUT_DOCS:-docs}
SIZES=${SIZES:-4 12 36}
BWS=${BWS:-10MB/s,1MB/s,200KB/s,50KB/s}
RTTS=${RTTS:-50ms,200ms}   # at LATBW
LATBW=${LATBW:-2MB/s}
LOADBW=${LOADBW:-1MB/s}  # the point run under load (largest report)
REPS=${REPS:-3}           # repetitions per point, in turn; medians kept (3x where a send takes under 0.1 s)
mkdir -p "$OUT/compute" "$OUT/storage" "$DOCS"
OUT=$(cd "$OUT" && pwd)

if [ ! -e "$OUT/compute/db.pin" ] || [ ! -e "$OUT/storage/db.pin" ]; then
	zcat "$DATA/DB.fasta.gz" > "$OUT/db.fa"
	makeblastdb -in "$OUT/db.fa" -dbtype prot -parse_seqids -title uniprot-example -out "$OUT/compute/db" > /dev/null
	makeblastdb -in "$OUT/db.fa" -dbtype prot -parse_seqids -title uniprot-example -out "$OUT/storage/db" > /dev/null
fi
for n in $SIZES; do
	if [ ! -s "$OUT/compute/report$n.txt" ]; then
		zcat "$DATA/QUERY.fasta.gz" | awk -v n="$n" '/^>/ { k++ } k <= n' > "$OUT/compute/q$n.fa"
		blastp -query "$OUT/compute/q$n.fa" -db "$OUT/compute/db" -outfmt 0 -out "$OUT/compute/report$n.txt"
	fi
	echo "report of $n queries: $(stat -c %s "$OUT/compute/report$n.txt") bytes"
done

go build -o "$OUT/medicexp" ./tools/medicexp
rm -f "$DOCS/medic-auto.csv"
sweep() { # n label load bandwidths rtts
	echo "$(date -u +%H:%M:%S) q$1 load=$3: $(uptime | sed 's/.*load/load/')"
	"$OUT/medicexp" --sweeps auto --plugins raw,zstd,blast --ciphers xchacha20poly1305 \
		--input "$OUT/compute/report$1.txt" --label "$2" --load "$3" --query-bytes "$(stat -c %s "$OUT/compute/q$1.fa")" \
		--param program=blastp --param query="$OUT/compute/q$1.fa" --param db="$OUT/compute/db" --param outfmt=0 \
		--resource blast.db="$OUT/storage/db" \
		--bandwidths "$4" --bandwidth-rtt 0 --rtts "$5" --latency-bandwidth "$LATBW" --reps "$REPS" --out "$DOCS"
}
for n in $SIZES; do
	sweep "$n" "q$n" 0 "$BWS" "$RTTS"
done

# One point under load: a busy loop on one of the CPUs beside sender and
# receiver (it is this script's child, stopped by its PID).
n=$(echo "$SIZES" | awk '{ print $NF }')
sh -c 'while :; do :; done' &
busy=$!
trap 'kill $busy 2>/dev/null || :' EXIT
sweep "$n" "q$n" 1 "$LOADBW" ""
kill $busy
echo "$(date -u +%H:%M:%S) done: $(uptime | sed 's/.*load/load/')"

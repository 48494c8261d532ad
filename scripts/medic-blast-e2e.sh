#!/bin/sh
# medic BLAST end to end: encode + transfer + regenerate of a real blastp
# -outfmt 0 report, raw vs zstd vs the blast plugin, over an emulated link
# (tools/medicexp: in-process receiver behind an in-process toxiproxy).
#
# Needs only Debian packages: ncbi-blast+ (blastp, makeblastdb, blastdbcmd),
# mmseqs2-examples (/usr/share/doc/mmseqs2/example-data) and Go.
#
#   scripts/medic-blast-e2e.sh                 # N=100 queries, 1 MB/s, RTT 0, 3 reps
#   N=60 RTT=30ms REPS=1 scripts/medic-blast-e2e.sh
#   MTS=1000 scripts/medic-blast-e2e.sh        # -max_target_seqs 1000 (no query capped)
#   QUERIES=db scripts/medic-blast-e2e.sh      # queries taken from the database itself
#   SWEEPS=latency CIPHERS=none,xchacha20poly1305 REPS=1 scripts/medic-blast-e2e.sh
#                                              # latency sweep (RTTS at LATBW), with and without encryption
#
# QUERIES=query (default) takes the first N of the example's own query set
# (QUERY.fasta, 500 proteins, as mmseqs2's example searches them); QUERIES=db
# takes every (20000/N)th database protein, a self-search with more hits per
# query. The storage site re-runs the search on all its cores (blast.workers
# defaults to the number of CPUs; set WORKERS to change it).
#
# Everything goes under $OUT (default tmp/medic-blast-e2e, gitignored).
set -eu
cd "$(dirname "$0")/.."
case "${1:-}" in -h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;; "") ;; *) echo "medic-blast-e2e.sh: no arguments (settings are environment variables; -h)" >&2; exit 2 ;; esac
DATA=${DATA:-/usr/share/doc/mmseqs2/example-data}
OUT=${OUT:-tmp/medic-blast-e2e}
N=${N:-100}
BW=${BW:-1MB/s}
RTT=${RTT:-0}
REPS=${REPS:-3}
MTS=${MTS:-}   # -max_target_seqs for the search and the plugin (default: BLAST's)
QUERIES=${QUERIES:-query}
SWEEPS=${SWEEPS:-bandwidth}
RTTS=${RTTS:-0,50ms,100ms,200ms,300ms,400ms,600ms}
LATBW=${LATBW:-32MB/s}
CIPHERS=${CIPHERS:-none}
WORKERS=${WORKERS:-}
TAG=${TAG:-$QUERIES-n$N-rtt$RTT${MTS:+-mts$MTS}${WORKERS:+-w$WORKERS}}
mkdir -p "$OUT/compute" "$OUT/storage" "$OUT/results"
OUT=$(cd "$OUT" && pwd)

# The 20,000-protein database: one copy at the compute site and a replica at
# the storage site, both built from the same FASTA.
if [ ! -e "$OUT/compute/db.pin" ] || [ ! -e "$OUT/storage/db.pin" ]; then
	zcat "$DATA/DB.fasta.gz" > "$OUT/db.fa"
	makeblastdb -in "$OUT/db.fa" -dbtype prot -parse_seqids -title uniprot-example -out "$OUT/compute/db" > /dev/null
	makeblastdb -in "$OUT/db.fa" -dbtype prot -parse_seqids -title uniprot-example -out "$OUT/storage/db" > /dev/null
fi

case $QUERIES in
query) # the first N of the example's query set
	zcat "$DATA/QUERY.fasta.gz" | awk -v n="$N" '/^>/ { k++ } k <= n' > "$OUT/compute/q.fa"
	echo "queries: the first $(grep -c '^>' "$OUT/compute/q.fa") of the example's QUERY.fasta" ;;
db) # N database proteins, evenly spaced (record 1, 1+20000/N, ...)
	total=$(grep -c '^>' "$OUT/db.fa")
	step=$((total / N))
	awk -v step="$step" -v n="$N" '/^>/ { i++; keep = ((i - 1) % step == 0 && ++k <= n) } keep' "$OUT/db.fa" > "$OUT/compute/q.fa"
	echo "queries: $(grep -c '^>' "$OUT/compute/q.fa") of $total database proteins (every ${step}th)" ;;
*) echo "QUERIES=$QUERIES: want query or db" >&2; exit 2 ;;
esac

# The original search (default evalue and max_target_seqs, pairwise report).
start=$(date +%s.%N)
blastp -query "$OUT/compute/q.fa" -db "$OUT/compute/db" -outfmt 0 ${MTS:+-max_target_seqs $MTS} -out "$OUT/compute/report.txt"
end=$(date +%s.%N)
echo "original blastp: $(echo "$end - $start" | bc) s, report $(stat -c %s "$OUT/compute/report.txt") bytes"

# raw, zstd and blast over the link, REPS repetitions each (median kept).
go run ./tools/medicexp --plugins raw,zstd,blast --ciphers "$CIPHERS" \
	--input "$OUT/compute/report.txt" \
	--param program=blastp --param query="$OUT/compute/q.fa" --param db="$OUT/compute/db" --param outfmt=0 ${MTS:+--param max_target_seqs=$MTS} \
	--resource blast.db="$OUT/storage/db" ${WORKERS:+--resource blast.workers=$WORKERS} \
	--sweeps "$SWEEPS" --bandwidths "$BW" --bandwidth-rtt "$RTT" --rtts "$RTTS" --latency-bandwidth "$LATBW" \
	--reps "$REPS" --out "$OUT/results" | tee "$OUT/results/medicexp-$TAG.txt"
for sweep in $(echo "$SWEEPS" | tr , ' '); do
	cp "$OUT/results/medic-$sweep.csv" "$OUT/results/medic-$sweep-$TAG.csv"
done

#!/bin/sh
# The ParaMEDIC paper's two network scenarios, in shape (issue 16, item 5),
# with real blastp -outfmt 0 reports of three query sizes (the first 4, 12
# and 36 queries of mmseqs2's example set), raw, zstd, blast and send --auto
# over an emulated link (tools/medicexp: in-process receiver behind an
# in-process toxiproxy), socket buffers and window of the bandwidth-delay
# product, metadata sealed with XChaCha20-Poly1305:
#
#   figure 9, a shared encrypted link (Argonne to Virginia Tech over
#   Internet2): what a share of a busy link leaves, FIG9_BW (500 KB/s), at
#   FIG9_RTT (30 ms);
#   figure 10, a fast long link (TeraGrid, 30 Gbit/s, 10 ms): as fast as the
#   in-process proxy goes, FIG10_BW (200 MB/s), at FIG10_RTT (10 ms).
#
# Writes docs/medic-fig9.{csv,png} and docs/medic-fig10.{csv,png}. Builds the
# reports as scripts/medic-auto-sweep.sh does (and shares its tmp/medic-auto).
#
#   scripts/medic-scenarios.sh              # REPS=3: about 10 minutes on a busy 2-core machine
set -eu
case "${1:-}" in -h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;; "") ;; *) echo "medic-scenarios.sh: no arguments (settings are environment variables; -h)" >&2; exit 2 ;; esac
cd "$(dirname "$0")/.."
DATA=${DATA:-/usr/share/doc/mmseqs2/example-data}
OUT=${OUT:-tmp/medic-auto}
DOCS=${OUT_DOCS:-docs}
SIZES=${SIZES:-4 12 36}
REPS=${REPS:-3}
FIG9_BW=${FIG9_BW:-500KB/s}
FIG9_RTT=${FIG9_RTT:-30ms}
FIG10_BW=${FIG10_BW:-200MB/s}
FIG10_RTT=${FIG10_RTT:-10ms}
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
done

go build -o "$OUT/medicexp-scen" ./tools/medicexp
scenario() { # name title bandwidth rtt
	rm -f "$DOCS/$1.csv"
	for n in $SIZES; do
		"$OUT/medicexp-scen" --sweeps auto --auto-name "$1" --auto-plot query --auto-title "$2" \
			--plugins raw,zstd,blast --ciphers xchacha20poly1305 \
			--input "$OUT/compute/report$n.txt" --label "q$n" --query-bytes "$(stat -c %s "$OUT/compute/q$n.fa")" \
			--param program=blastp --param query="$OUT/compute/q$n.fa" --param db="$OUT/compute/db" --param outfmt=0 \
			--resource blast.db="$OUT/storage/db" \
			--bandwidths "$3" --bandwidth-rtt "$4" --rtts "" --reps "$REPS" --out "$DOCS"
	done
}
scenario medic-fig9 "figure 9 in shape: a shared encrypted link ($FIG9_BW, RTT $FIG9_RTT)" "$FIG9_BW" "$FIG9_RTT"
scenario medic-fig10 "figure 10 in shape: a fast long link ($FIG10_BW, RTT $FIG10_RTT)" "$FIG10_BW" "$FIG10_RTT"

#!/usr/bin/env bash
# compare-farm.sh: `pario farm` against GNU parallel --pipepart doing the
# same job: the same tool (HMMER's hmmscan, BLAST's blastp), the same FASTA
# input, the same number of jobs and the same block size, ordered output
# (--keep-order / `out NEWSPAPER rc wo b farm=0`). Prints a markdown table:
# median wall time of REPS runs, the ratio to GNU parallel measured in the
# same run, and the sha256 of each output beside the sequential run's.
#
#   scripts/compare-farm.sh                    # defaults below
#   JOBS=4 HMM_COPIES=400 BLAST_COPIES=20 REPS=5 scripts/compare-farm.sh
#   TOOLS=hmmscan scripts/compare-farm.sh
#   TOOLS=cat CAT_MB=64 scripts/compare-farm.sh   # output-heavy: where the output goes
#
# The input is HMMER's tutorial globins45.fa, HMM_COPIES (hmmscan) or
# BLAST_COPIES (blastp) times with the names
# made unique; hmmscan searches it against globins4 + fn3 + Pkinase
# (hmmpress'd here), blastp against a database of globins45 (makeblastdb).
# The tools' whole-run comment lines (with the date) are dropped by grep in
# every run. A `pario up` on loopback gives the pario:/ row (farm writing a
# striped file from every rank's segments). TOOLS=cat is output-heavy (the
# output is the input, CAT_MB MiB of records): its extra rows put the output
# in the store, GNU parallel's through `pario cp` afterwards, the farm's
# directly, ordered through each group's rank 0 (--group 1: one file per
# rank) or appended by every rank to one chaotic log. Needs Debian's hmmer,
# hmmer-examples, ncbi-blast+ and parallel. BENCH_DIR picks the disk
# (default ./tmp).
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in -h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;; "") ;; *) echo "compare-farm.sh: no arguments (settings are environment variables; -h)" >&2; exit 2 ;; esac
root=$PWD
JOBS=${JOBS:-4}
HMM_COPIES=${HMM_COPIES:-200}
BLAST_COPIES=${BLAST_COPIES:-12}
REPS=${REPS:-3}
TOOLS=${TOOLS:-"hmmscan blastp"}
tut=/usr/share/doc/hmmer/examples/tutorial
for t in hmmscan hmmpress blastp makeblastdb parallel; do
	command -v "$t" >/dev/null || { echo "compare-farm: $t missing (apt-get install hmmer hmmer-examples ncbi-blast+ parallel)" >&2; exit 1; }
done
mkdir -p bin
go build -o bin/pario ./cmd/pario
pario=$root/bin/pario
dir="${BENCH_DIR:-tmp}"
mkdir -p "$dir"
w=$(cd "$(mktemp -d "$dir/farm.XXXXXX")" && pwd)
up_pid=""
cleanup() {
	if [ -n "$up_pid" ]; then kill "$up_pid" 2>/dev/null || true; wait "$up_pid" 2>/dev/null || true; fi
	rm -rf "$w"
}
trap cleanup EXIT
cd "$w"

for i in $(seq 1 "$HMM_COPIES"); do sed "s/^>\([^ ]*\)/>\1_$i/" "$tut/globins45.fa"; done > hmmscan.fa
for i in $(seq 1 "$BLAST_COPIES"); do sed "s/^>\([^ ]*\)/>\1_$i/" "$tut/globins45.fa"; done > blastp.fa
cat "$tut/globins4.hmm" "$tut/fn3.hmm" "$tut/Pkinase.hmm" > mini.hmm
hmmpress mini.hmm >/dev/null
makeblastdb -in "$tut/globins45.fa" -dbtype prot -out glob >/dev/null
cat > hmmscan.sh <<'EOF'
#!/bin/sh
exec hmmscan --cpu 1 --tblout /dev/stdout -o /dev/null mini.hmm - | grep -v '^#'
EOF
cat > blastp.sh <<'EOF'
#!/bin/sh
exec blastp -db glob -outfmt 6 -num_threads 1
EOF
printf '#!/bin/sh\nexec cat\n' > cat.sh
chmod +x hmmscan.sh blastp.sh cat.sh
if [[ " $TOOLS " == *" cat "* ]]; then
	awk -v mb="${CAT_MB:-64}" 'BEGIN { srand(1); line = "ACDEFGHIKLMNPQRSTVWYACDEFGHIKLMNPQRSTVWYACDEFGHIKLMNPQRSTVWY"
		while (n < mb * 1048576) { r = ">s" i++ " synthetic\n"; for (k = 0; k < 1 + int(rand() * 20); k++) r = r line "\n"; printf "%s", r; n += length(r) } }' > cat.fa
fi
printf 'in  NEWSPAPER ro wo b farm=FASTA\nout LOG rc wc b farm=0\n' > log.ann
printf 'in  NEWSPAPER ro wo b farm=FASTA\nout NEWSPAPER rc wo b farm=0\n' > io.ann

"$pario" up --dir "$w/cluster" >"$w/up.log" 2>&1 &
up_pid=$!
for _ in $(seq 200); do [ -e "$w/cluster/cluster" ] && break; sleep 0.05; done
export PARIO_CLUSTER=$w/cluster/cluster

now() { date +%s.%N; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# run NAME CMD...: REPS timed runs; prints "median sha256"
run() {
	local name=$1; shift
	local times=()
	for _ in $(seq "$REPS"); do
		local t0; t0=$(now)
		"$@"
		times+=("$(echo "$(now) - $t0" | bc -l)")
	done
	printf '%s\n' "${times[@]}" | median
}

echo "# compare-farm: $(date -u +%Y-%m-%dT%H:%MZ), $(hostname), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
echo "# JOBS=$JOBS REPS=$REPS; block: BLOCK, else the input / (4 x JOBS), the same for both"
echo
echo "| tool | input | run | median wall s | vs parallel | sha256 (first 12) | identical to sequential |"
echo "|---|---|---|---|---|---|---|"
for tool in $TOOLS; do
	ln -sf "$tool.fa" q.fa
	size=$(stat -L -c %s q.fa)
	block=${BLOCK:-$(( size / (4 * JOBS) ))}
	input="$(grep -c '>' q.fa) records, $size B, block $block"
	s_seq=$(run seq sh -c "./$tool.sh < q.fa > seq.out")
	h_seq=$(sha256sum seq.out | cut -c1-12)
	s_par=$(run parallel sh -c "parallel --will-cite --pipepart -a q.fa --block $block --recstart '>' --keep-order -j $JOBS ./$tool.sh > par.out")
	h_par=$(sha256sum par.out | cut -c1-12)
	s_farm=$(run farm "$pario" farm -q -N "$JOBS" --block "$block" --in q.fa --out farm.out --annotations io.ann -- "./$tool.sh")
	h_farm=$(sha256sum farm.out | cut -c1-12)
	s_pf=$(run farm-pario "$pario" farm -q -N "$JOBS" --block "$block" --layout simple_stripe:strip_size=64k \
		--in q.fa --out pario:/farm.out --annotations io.ann -- "./$tool.sh")
	"$pario" cp -q pario:/farm.out pf.out
	h_pf=$(sha256sum pf.out | cut -c1-12)
	same() { cmp -s "$1" seq.out && echo yes || echo NO; }
	ratio() { printf '%.2f' "$(echo "$1 / $s_par" | bc -l)"; }
	printf '| %s | %s | sequential | %.2f | %s | %s | - |\n' "$tool" "$input" "$s_seq" "$(ratio "$s_seq")" "$h_seq"
	printf '| %s | | GNU parallel --pipepart --keep-order -j %s | %.2f | 1.00 | %s | %s |\n' "$tool" "$JOBS" "$s_par" "$h_par" "$(same par.out)"
	printf '| %s | | pario farm -N %s (local file) | %.2f | %s | %s | %s |\n' "$tool" "$JOBS" "$s_farm" "$(ratio "$s_farm")" "$h_farm" "$(same farm.out)"
	printf '| %s | | pario farm -N %s (pario:/, 4 I/O servers) | %.2f | %s | %s | %s |\n' "$tool" "$JOBS" "$s_pf" "$(ratio "$s_pf")" "$h_pf" "$(same pf.out)"
	if [ "$tool" = cat ]; then
		s_pcp=$(run parallel-cp sh -c "parallel --will-cite --pipepart -a q.fa --block $block --recstart '>' --keep-order -j $JOBS ./cat.sh > par.out && '$pario' cp -q par.out pario:/par.out")
		s_g1=$(run farm-group1 "$pario" farm -q -N "$JOBS" --group 1 --block "$block" --layout simple_stripe:strip_size=64k \
			--in q.fa --out pario:/g --annotations io.ann -- ./cat.sh)
		rm -f g.out; for g in $(seq 0 $((JOBS - 1))); do "$pario" cp -q "pario:/g.$g" g.part && cat g.part >> g.out; done
		s_log=$(run farm-log "$pario" farm -q -N "$JOBS" --block "$block" --layout simple_stripe:strip_size=64k \
			--in q.fa --out pario:/log.out --annotations log.ann -- ./cat.sh)
		"$pario" cp -q pario:/log.out log.out
		whole() { [ "$(grep -c '>' "$1")" = "$(grep -c '>' seq.out)" ] && cmp -s <(sort "$1") <(sort seq.out) && echo "records whole, any order" || echo NO; }
		printf '| %s | | GNU parallel ... > local, then pario cp to pario:/ | %.2f | %s | - | %s |\n' "$tool" "$s_pcp" "$(ratio "$s_pcp")" "$(same par.out)"
		printf '| %s | | pario farm -N %s --group 1 (pario:/, one file per rank) | %.2f | %s | - | %s |\n' "$tool" "$JOBS" "$s_g1" "$(ratio "$s_g1")" "$(same g.out)"
		printf '| %s | | pario farm -N %s, out LOG rc wc b (pario:/, every rank appends) | %.2f | %s | - | %s |\n' "$tool" "$JOBS" "$s_log" "$(ratio "$s_log")" "$(whole log.out)"
	fi
done

#!/usr/bin/env bash
# compare-ior.sh: IOR against `pario bench -a POSIX` with the same
# parameters on the same disk, alternating, and the bandwidth ratio
# pario/IOR per operation (median of the runs, and median of the paired
# ratios). IOR is not part of pario: build it from github.com/hpc/ior
# (./bootstrap && ./configure && make, with Open MPI) and pass its binary.
#
#   scripts/compare-ior.sh /path/to/ior                 # 5 pairs, 4 ranks, -b 256m -t 1m -e
#   scripts/compare-ior.sh -n 2 -r 7 -d /scratch /path/to/ior -- -b 64m -t 4m -s 4
#
# Options: -n ranks (4), -r pairs of runs (5), -d directory on the disk to
# test, -p pario binary (default: built from this tree), -w reads from the
# page cache (no drop), -c control: IOR in pario's place, to see how far
# IOR is from itself on this machine with this script (the noise floor the
# 10% band has to be read against). Anything after -- replaces the IOR
# parameters.
#
# The runs come in pairs. In one run of a pair IOR writes the file (-w -k,
# -i 1), in the other pario does, IOR first in odd pairs and pario first in
# even ones (so a drift of the disk's speed over the session favours
# neither); in each run both tools then read that run's file (-r -k), in an
# order that also alternates from pair to pair.
# Only one tool writes per run because on shared virtual disks a write
# right after another one meets the first one's flush (here: the first of
# two 1 GiB writes ran at 1-1.5 GiB/s, the second at 300 MiB/s), and a
# second writer always paid for the first. The previous run's file is
# removed and synced before the write: on a file system mounted with
# discard, the removal's discards otherwise land in the writer's fsync.
# Both tools reading the same
# file means where it landed on the disk counts for neither. As root the
# page cache is dropped before every read (sync; echo 3 >
# /proc/sys/vm/drop_caches), so reads come from the disk for both (-w
# keeps them cached: reads then measure memory copies and start-up skew).
# Writes are paired within a pair of runs, reads within a run.
# IOR's ranks are told to yield when idle (OMPI_MCA_mpi_yield_when_idle=1)
# so that a rank spinning in a barrier does not take the CPU from ranks
# still writing. Needs mpirun (Open MPI) and python3.
set -euo pipefail

np=4 reps=5 dir="${TMPDIR:-/tmp}/pario-vs-ior" pario="" cold=auto control=no
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit "${1:-2}"; }
case "${1:-}" in -h | --help) usage 0 ;; esac
while getopts "n:r:d:p:cwh" opt; do
  case $opt in
    c) control=yes ;;
    w) cold=no ;;
    n) np=$OPTARG ;;
    r) reps=$OPTARG ;;
    d) dir=$OPTARG ;;
    p) pario=$OPTARG ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || usage
ior=$1; shift
[ "${1:-}" = "--" ] && shift
params=("$@")
[ ${#params[@]} -gt 0 ] || params=(-b 256m -t 1m -s 1 -e)

[ -x "$ior" ] || { echo "compare-ior: $ior is not an executable IOR binary" >&2; exit 2; }
command -v mpirun >/dev/null || { echo "compare-ior: mpirun not found (apt-get install openmpi-bin)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "compare-ior: python3 not found" >&2; exit 2; }
cd "$(dirname "$0")/.."
if [ -z "$pario" ] && [ "$control" = no ]; then
  go build -o bin/pario ./cmd/pario
  pario=bin/pario
fi
mkdir -p "$dir"
out=$(mktemp -d)
trap 'rm -rf "$out" "$dir"/test.dat' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1
if [ "$cold" = auto ]; then
  if [ -w /proc/sys/vm/drop_caches ]; then cold=yes; else cold=no; fi
fi
drop() { if [ "$cold" = yes ]; then sync; echo 3 > /proc/sys/vm/drop_caches; fi; }

# write_T run: tool T writes the test file (kept). read_T run: tool T reads
# it (kept) from a cold cache.
write_ior() {
  mpirun --oversubscribe --bind-to none -np "$np" "$ior" -a POSIX -w -k -i 1 "${params[@]}" \
    -o "$dir/test.dat" -O summaryFormat=JSON -O summaryFile="$out/ior.w.$1.json" >/dev/null
}
# pario_bench runs pario's side: pario bench, or IOR again with -c.
pario_bench() {
  if [ "$control" = yes ]; then
    mpirun --oversubscribe --bind-to none -np "$np" "$ior" "$@"
  else
    "$pario" bench -N "$np" "$@"
  fi
}
write_pario() {
  pario_bench -a POSIX -w -k -i 1 "${params[@]}" \
    -o "$dir/test.dat" -O summaryFormat=JSON -O summaryFile="$out/pario.w.$1.json" >/dev/null
}
read_ior() {
  drop
  mpirun --oversubscribe --bind-to none -np "$np" "$ior" -a POSIX -r -k -i 1 "${params[@]}" \
    -o "$dir/test.dat" -O summaryFormat=JSON -O summaryFile="$out/ior.r.$1.json" >/dev/null
}
read_pario() {
  drop
  pario_bench -a POSIX -r -k -i 1 "${params[@]}" \
    -o "$dir/test.dat" -O summaryFormat=JSON -O summaryFile="$out/pario.r.$1.json" >/dev/null
}

echo "IOR:   $ior (mpirun -np $np)"
if [ "$control" = yes ]; then
  echo "pario: replaced by IOR itself (-c): the ratios below are IOR against IOR"
else
  echo "pario: $pario bench -a POSIX -N $np"
fi
echo "params: ${params[*]}, $reps pairs of runs, files in $dir, reads from $([ "$cold" = yes ] && echo disk || echo page cache)"
for i in $(seq 1 $((2 * reps))); do
  if [ $(((i + 1) / 2 % 2)) -eq 1 ]; then first=ior second=pario; else first=pario second=ior; fi
  if [ $((i % 2)) -eq 1 ]; then writer=$first; else writer=$second; fi
  rm -f "$dir/test.dat"; sync # the removal's journal commit (and discard) before, not inside, the write
  "write_$writer" "$i"
  "read_$first" "$i"; "read_$second" "$i"
  echo "run $i of $((2 * reps)) done ($writer wrote)" >&2
done

python3 - "$out" "$reps" <<'PY'
import json, statistics, sys
out, reps = sys.argv[1], int(sys.argv[2])
def load(tool, i, op):
    with open(f"{out}/{tool}.{op[0]}.{i}.json") as f:
        return {s["operation"]: s for s in json.load(f)["summary"]}[op]
fail = False
for op in ("write", "read"):
    # (IOR run, pario run) pairs: writes pair runs 2k-1 and 2k (IOR wrote
    # first in odd k), reads are paired within every run.
    if op == "write":
        pairs = [(2 * k - 1, 2 * k) if k % 2 else (2 * k, 2 * k - 1) for k in range(1, reps + 1)]
    else:
        pairs = [(i, i) for i in range(1, 2 * reps + 1)]
    ior, par, ratios, sizes = [], [], [], set()
    for i, j in pairs:
        a, b = load("ior", i, op), load("pario", j, op)
        ior.append(a["bwMeanMIB"]); par.append(b["bwMeanMIB"])
        ratios.append(b["bwMeanMIB"] / a["bwMeanMIB"])
        sizes.add((a["xsizeMiB"], b["xsizeMiB"]))
    same = all(x == y for x, y in sizes)
    mi, mp = statistics.median(ior), statistics.median(par)
    r = mp / mi
    ok = abs(r - 1) <= 0.10
    fail |= not ok or not same
    print(f"{op:6} IOR median {mi:10.1f} MiB/s  pario median {mp:10.1f} MiB/s  "
          f"ratio {r:5.3f}  median paired ratio {statistics.median(ratios):5.3f}  "
          f"bytes moved {'equal' if same else 'DIFFER'} ({sorted(sizes)[0][0]:.0f} MiB)  {'ok' if ok else 'OUTSIDE 10%'}")
    print(f"       IOR   {' '.join(f'{x:.0f}' for x in ior)}")
    print(f"       pario {' '.join(f'{x:.0f}' for x in par)}")
sys.exit(1 if fail else 0)
PY

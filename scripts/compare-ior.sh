#!/usr/bin/env bash
# compare-ior.sh: IOR against `pario bench -a POSIX` with the same
# parameters on the same disk, alternating, and the bandwidth ratio
# pario/IOR per operation (median of the runs, and median of the paired
# ratios). IOR is not part of pario: build it from github.com/hpc/ior
# (./bootstrap && ./configure && make, with Open MPI) and pass its binary.
#
#   scripts/compare-ior.sh /path/to/ior                 # 5 runs, 4 ranks, -b 1g -t 1m -e
#   scripts/compare-ior.sh -n 2 -r 7 -d /scratch /path/to/ior -- -b 64m -t 4m -s 4
#
# Each run is, for each tool, a write invocation (-w -k, -i 1) of its own
# file, then, for each tool, a read invocation (-r -k) of the same file:
# the one IOR wrote in odd runs, pario's in even runs, so that where a
# file landed on the disk counts for neither tool. The tools' order
# alternates from run to run so that drift on a shared machine hits both
# alike. As root the page cache is dropped before every read (sync; echo
# 3 > /proc/sys/vm/drop_caches), so reads come from the disk for both (-w
# keeps them cached: reads then measure memory copies and start-up skew).
# IOR's ranks are told to yield when idle (OMPI_MCA_mpi_yield_when_idle=1)
# so that a rank spinning in a barrier does not take the CPU from ranks
# still writing. Needs mpirun (Open MPI) and python3.
set -euo pipefail

np=4 reps=5 dir="${TMPDIR:-/tmp}/pario-vs-ior" pario="" cold=auto
usage() { sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
while getopts "n:r:d:p:wh" opt; do
  case $opt in
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
[ ${#params[@]} -gt 0 ] || params=(-b 1g -t 1m -s 1 -e)

[ -x "$ior" ] || { echo "compare-ior: $ior is not an executable IOR binary" >&2; exit 2; }
command -v mpirun >/dev/null || { echo "compare-ior: mpirun not found (apt-get install openmpi-bin)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "compare-ior: python3 not found" >&2; exit 2; }
cd "$(dirname "$0")/.."
if [ -z "$pario" ]; then
  go build -o bin/pario ./cmd/pario
  pario=bin/pario
fi
mkdir -p "$dir"
out=$(mktemp -d)
trap 'rm -rf "$out" "$dir"/ior.dat "$dir"/pario.dat' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1
if [ "$cold" = auto ]; then
  if [ -w /proc/sys/vm/drop_caches ]; then cold=yes; else cold=no; fi
fi
drop() { if [ "$cold" = yes ]; then sync; echo 3 > /proc/sys/vm/drop_caches; fi; }

# write_T run: tool T writes its own file (kept). read_T run file: tool T
# reads file (kept) from a cold cache.
write_ior() {
  mpirun --oversubscribe -np "$np" "$ior" -a POSIX -w -k -i 1 "${params[@]}" \
    -o "$dir/ior.dat" -O summaryFormat=JSON -O summaryFile="$out/ior.w.$1.json" >/dev/null
}
write_pario() {
  "$pario" bench -a POSIX -N "$np" -w -k -i 1 "${params[@]}" \
    -o "$dir/pario.dat" -O summaryFormat=JSON -O summaryFile="$out/pario.w.$1.json" >/dev/null
}
read_ior() {
  drop
  mpirun --oversubscribe -np "$np" "$ior" -a POSIX -r -k -i 1 "${params[@]}" \
    -o "$2" -O summaryFormat=JSON -O summaryFile="$out/ior.r.$1.json" >/dev/null
}
read_pario() {
  drop
  "$pario" bench -a POSIX -N "$np" -r -k -i 1 "${params[@]}" \
    -o "$2" -O summaryFormat=JSON -O summaryFile="$out/pario.r.$1.json" >/dev/null
}

echo "IOR:   $ior (mpirun -np $np)"
echo "pario: $pario bench -a POSIX -N $np"
echo "params: ${params[*]}, $reps runs, files in $dir, reads from $([ "$cold" = yes ] && echo disk || echo page cache)"
for i in $(seq 1 "$reps"); do
  if [ $((i % 2)) -eq 1 ]; then first=ior second=pario; else first=pario second=ior; fi
  rm -f "$dir"/ior.dat "$dir"/pario.dat
  "write_$first" "$i"; "write_$second" "$i"
  "read_$first" "$i" "$dir/$first.dat"; "read_$second" "$i" "$dir/$first.dat"
  echo "run $i done" >&2
done

python3 - "$out" "$reps" <<'PY'
import json, statistics, sys
out, reps = sys.argv[1], int(sys.argv[2])
def load(tool, i, op):
    with open(f"{out}/{tool}.{op[0]}.{i}.json") as f:
        return {s["operation"]: s for s in json.load(f)["summary"]}
rows = []
fail = False
for op in ("write", "read"):
    ior, par, ratios, sizes = [], [], [], set()
    for i in range(1, reps + 1):
        a, b = load("ior", i, op)[op], load("pario", i, op)[op]
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

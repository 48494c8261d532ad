#!/usr/bin/env bash
# compare-ior-hdf5.sh: IOR's HDF5 back end (`ior -a HDF5`) against `pario
# bench -a HDF5` (the cgo back end, bin/pario-hdf5 from `make build-hdf5`)
# with the same options on the same file system, both under mpirun,
# alternating; the bandwidth ratio pario/IOR per operation (median of the
# runs, and median of the paired ratios), flagged when outside 10% (issue
# 14). IOR is not part of pario: build it from github.com/hpc/ior against
# Debian's Open MPI and parallel HDF5 (./bootstrap && ./configure
# --with-hdf5 CC=mpicc, with the include and library paths of
# `pkg-config --cflags --libs hdf5-openmpi`; make) and pass its binary.
#
#   scripts/compare-ior-hdf5.sh /path/to/ior              # 5 pairs, 4 ranks, -b 64m -t 1m -s 1 -e
#   scripts/compare-ior-hdf5.sh -n 2 -r 3 -d /mnt/pario/x /path/to/ior -- -b 64m -t 1m -c
#
# Options: -n ranks (4), -r pairs of runs (5), -d directory on the file
# system to test (a pario mount's directory works as well as a local
# disk), -p pario binary built with the hdf5 tag (default: make
# build-hdf5 in this tree), -w reads from the page cache (no drop), -c
# control: IOR in pario's place (the noise floor of this script on this
# machine). Anything after -- replaces the parameters given to both: -b
# -t -s -e -c and the HDF5 options as IOR spells them (`--hdf5.setAlignment=1m
# --hdf5.noFill`; IOR does not take them as -O keys). pario gets the same
# words with the option names lowercased (`--hdf5.setalignment=1m
# --hdf5.nofill`), its spelling of the same H5Pset_alignment and
# H5D_FILL_TIME_NEVER.
#
# Each tool reads only the file it wrote: IOR names its datasets per
# segment and pario writes every segment into one dataset /data (the
# thesis' change to IOR's driver; with -s 1, the default, both files hold
# one dataset of the same size). So in each of 2 x pairs runs both tools
# write (durable with -e) and then read their own file, in the order IOR,
# pario in runs 1 and 4 (of every four) and pario, IOR in runs 2 and 3
# (ABBA), each file removed and synced before it is written. As root the
# page cache is dropped before every read; otherwise the script says so.
# What the two sides share (checked against IOR 5fcf0ba's aiori-HDF5.c and
# bench/backend/hdf5): HDF5's MPI-IO file driver (H5Pset_fapl_mpio, the
# same hints), independent transfers unless -c, one hyperslab per
# transfer, HDF5's default fill behaviour unless a fill option is given
# (no fill written: no user fill value), the timed window from before the
# open to after the close, and -e as H5Fflush (MPI_File_sync) inside it.
# What differs and is left: IOR's elements are 8-byte integers, pario's
# bytes (no conversion on either side), and H5F_SCOPE_LOCAL against
# GLOBAL (the same for a file with no mounted files).
# Needs mpirun (Open MPI) and python3.
set -euo pipefail

np=4 reps=5 dir="${TMPDIR:-/tmp}/pario-vs-ior-hdf5" pario="" cold=auto control=no
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
[ ${#params[@]} -gt 0 ] || params=(-b 64m -t 1m -s 1 -e)
pparams=()
for w in "${params[@]}"; do
  case $w in
    --hdf5.*=*) k=${w%%=*}; pparams+=("${k,,}=${w#*=}") ;;
    --hdf5.*) pparams+=("${w,,}") ;;
    *) pparams+=("$w") ;;
  esac
done
if [ "$control" = yes ]; then pparams=("${params[@]}"); fi

[ -x "$ior" ] || { echo "compare-ior-hdf5: $ior is not an executable IOR binary" >&2; exit 2; }
command -v mpirun >/dev/null || { echo "compare-ior-hdf5: mpirun not found (apt-get install openmpi-bin)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "compare-ior-hdf5: python3 not found" >&2; exit 2; }
cd "$(dirname "$0")/.."
if [ -z "$pario" ] && [ "$control" = no ]; then
  make -s build-hdf5
  pario=bin/pario-hdf5
fi
mkdir -p "$dir"
out=$(mktemp -d)
trap 'rm -rf "$out" "$dir"/ior.h5 "$dir"/pario.h5' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1
if [ "$cold" = auto ]; then
  if [ -w /proc/sys/vm/drop_caches ]; then cold=yes; else
    cold=no; echo "compare-ior-hdf5: /proc/sys/vm/drop_caches is not writable (not root): reads come from the page cache" >&2
  fi
fi
drop() { if [ "$cold" = yes ]; then sync; echo 3 > /proc/sys/vm/drop_caches; fi; }

# write_T run: tool T writes its test file (kept). read_T run: tool T reads
# it (kept) from a cold cache.
write_ior() {
  mpirun --oversubscribe --bind-to none -np "$np" "$ior" -a HDF5 -w -k -i 1 "${params[@]}" \
    -o "$dir/ior.h5" -O summaryFormat=JSON -O summaryFile="$out/ior.w.$1.json" >/dev/null
}
# pario_bench runs pario's side: pario bench, or IOR again with -c.
pario_bench() {
  if [ "$control" = yes ]; then
    mpirun --oversubscribe --bind-to none -np "$np" "$ior" "$@"
  else
    mpirun --oversubscribe --bind-to none -np "$np" "$pario" bench "$@"
  fi
}
write_pario() {
  pario_bench -a HDF5 -w -k -i 1 "${pparams[@]}" \
    -o "$dir/pario.h5" -O summaryFormat=JSON -O summaryFile="$out/pario.w.$1.json" >/dev/null
}
read_ior() {
  drop
  mpirun --oversubscribe --bind-to none -np "$np" "$ior" -a HDF5 -r -k -i 1 "${params[@]}" \
    -o "$dir/ior.h5" -O summaryFormat=JSON -O summaryFile="$out/ior.r.$1.json" >/dev/null
}
read_pario() {
  drop
  pario_bench -a HDF5 -r -k -i 1 "${pparams[@]}" \
    -o "$dir/pario.h5" -O summaryFormat=JSON -O summaryFile="$out/pario.r.$1.json" >/dev/null
}

echo "IOR:   $ior (mpirun -np $np)"
if [ "$control" = yes ]; then
  echo "pario: replaced by IOR itself (-c): the ratios below are IOR against IOR"
else
  echo "pario: mpirun -np $np $pario bench -a HDF5"
fi
echo "params: ${params[*]}, $reps pairs of runs, files in $dir, reads from $([ "$cold" = yes ] && echo disk || echo page cache)"
for i in $(seq 1 $((2 * reps))); do
  if [ $((i / 2 % 2)) -eq 0 ]; then order=(ior pario); else order=(pario ior); fi
  for t in "${order[@]}"; do
    rm -f "$dir/$t.h5"; sync # the removal's journal commit (and discard) before, not inside, the write
    "write_$t" "$i"
    "read_$t" "$i"
  done
  echo "run $i of $((2 * reps)) done (${order[*]})" >&2
done

python3 - "$out" "$reps" <<'PY'
import json, statistics, sys
out, reps = sys.argv[1], int(sys.argv[2])
def load(tool, i, op):
    with open(f"{out}/{tool}.{op[0]}.{i}.json") as f:
        return {s["operation"]: s for s in json.load(f)["summary"]}[op]
fail = False
for op in ("write", "read"):
    # IOR and pario are paired within every run.
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

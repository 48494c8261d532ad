#!/usr/bin/env bash
# compare-hpc.sh: issue 11's measurements side by side in one run: local
# ext4 (the disk under the cluster), pario's native client and the pario
# FUSE mount, with IOR, mdtest and fio, and the ratio to local ext4 of
# each beside the issue's target. IOR and mdtest are not part of pario:
# build them from github.com/hpc/ior against Open MPI (as for
# scripts/compare-ior.sh) and pass their binaries.
#
#   scripts/compare-hpc.sh /path/to/ior /path/to/mdtest
#   scripts/compare-hpc.sh -r 5 -b 512m -m 2000 /path/to/ior /path/to/mdtest
#
# Options: -n ranks (4), -r repetitions (3; medians are reported), -b bytes
# per rank for IOR and fio (64m), -t transfer size (1m), -m files per rank
# for mdtest -n (200), -d directory on the disk to test (default a new
# directory under ./tmp), -p pario binary (default: built from this tree).
#
# What runs, in every repetition, on each of local / native / mount:
#   IOR (POSIX; `pario bench -a PARIO` for the native client) with -n ranks:
#   shared file and file per process (-F), durable write (-w -e) then cold
#   read (-r, page cache dropped before);
#   fio sequential read of 1 MiB, 1 job and 4 jobs, cold (local and mount;
#   skipped, and said, when fio is not installed: apt-get install fio);
#   mdtest -n M -F -C -T -r -u (a directory per rank) and one shared
#   directory (no -u), create / stat / remove (local and mount);
#   `tar x` of this repository's tree (git archive HEAD) and `rm -rf` of it
#   (local and mount; rates are 1/seconds, so the ratio is local time over
#   pario time and "5x slower" is 0.2x).
# The order of the targets alternates from one repetition to the next
# (local, native, mount; then mount, native, local: ABBA), so a drift of
# the machine's speed favours none. Reads are from the disk when this runs
# as root (sync; echo 3 > /proc/sys/vm/drop_caches before every read);
# otherwise it says so and reads come from the page cache.
#
# The script starts its own cluster (`pario up`, 4 I/O servers on loopback,
# data under the test directory) and mount (`pario mount`), and stops both
# and removes its files on exit, whatever failed. Needs mpirun (Open MPI),
# python3, git, /dev/fuse and Debian's fuse3.
set -euo pipefail

np=4 reps=3 block=64m xfer=1m files=200 dir="" pario=""
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit "${1:-2}"; }
case "${1:-}" in -h | --help) usage 0 ;; esac
while getopts "n:r:b:t:m:d:p:h" opt; do
  case $opt in
    n) np=$OPTARG ;;
    r) reps=$OPTARG ;;
    b) block=$OPTARG ;;
    t) xfer=$OPTARG ;;
    m) files=$OPTARG ;;
    d) dir=$OPTARG ;;
    p) pario=$OPTARG ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))
[ $# -eq 2 ] || usage
ior=$1 mdtest=$2
for b in "$ior" "$mdtest"; do
  [ -x "$b" ] || { echo "compare-hpc: $b is not an executable (IOR, then mdtest)" >&2; exit 2; }
done
ior=$(realpath "$ior") mdtest=$(realpath "$mdtest")
for c in mpirun python3 git fusermount3; do
  command -v $c >/dev/null || { echo "compare-hpc: $c not found (openmpi-bin, python3, git, fuse3)" >&2; exit 2; }
done
cd "$(dirname "$0")/.."
repo=$(pwd)
if [ -z "$pario" ]; then
  mkdir -p bin
  go build -o bin/pario ./cmd/pario
  pario=bin/pario
fi
pario=$(realpath "$pario")
[ -n "$dir" ] || { mkdir -p tmp; dir=$(mktemp -d "$repo/tmp/compare-hpc.XXXXXX"); }
mkdir -p "$dir"
dir=$(realpath "$dir")
local_dir=$dir/local mnt=$dir/mnt out=$dir/results
mkdir -p "$local_dir" "$mnt" "$out" "$dir/cluster"

up_pid="" mount_pid=""
cleanup() {
  set +e
  if [ -n "$mount_pid" ]; then
    "$pario" umount "$mnt" 2>/dev/null || "$pario" umount --lazy "$mnt" 2>/dev/null || fusermount3 -u -z "$mnt" 2>/dev/null
    kill "$mount_pid" 2>/dev/null; wait "$mount_pid" 2>/dev/null
  fi
  if [ -n "$up_pid" ]; then kill "$up_pid" 2>/dev/null; wait "$up_pid" 2>/dev/null; fi
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1
export PARIO_CLUSTER=$dir/cluster/cluster
if [ -w /proc/sys/vm/drop_caches ]; then cold=yes; else cold=no; fi
drop() { sync; if [ $cold = yes ]; then echo 3 > /proc/sys/vm/drop_caches; fi; }

"$pario" up --dir "$dir/cluster" --servers 4 >"$dir/up.log" 2>&1 &
up_pid=$!
for _ in $(seq 1 300); do [ -s "$PARIO_CLUSTER" ] && break; sleep 0.1; done
[ -s "$PARIO_CLUSTER" ] || { echo "compare-hpc: pario up did not write $PARIO_CLUSTER:" >&2; cat "$dir/up.log" >&2; exit 1; }
"$pario" mount "$mnt" >"$dir/mount.log" 2>&1 &
mount_pid=$!
for _ in $(seq 1 300); do grep -q " $mnt fuse" /proc/mounts && break; sleep 0.1; done
grep -q " $mnt fuse" /proc/mounts || { echo "compare-hpc: pario mount did not mount $mnt:" >&2; cat "$dir/mount.log" >&2; exit 1; }

have_fio=no
command -v fio >/dev/null && have_fio=yes
git -C "$repo" archive --format=tar HEAD >"$dir/tree.tar"
entries=$(tar tf "$dir/tree.tar" | wc -l)

echo "machine: $(nproc) CPUs, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg); disk: $(df -T "$dir" | awk 'NR==2 {print $2" on "$1}')"
echo "IOR: $ior; mdtest: $mdtest (mpirun -np $np); pario: $pario"
echo "sizes: -b $block -t $xfer per rank, mdtest -n $files, tar of $entries entries; $reps repetitions, ABBA order"
[ $cold = yes ] && echo "reads: page cache dropped before each (root)" ||
  echo "reads: NOT cold: /proc/sys/vm/drop_caches is not writable (not root); reads come from the page cache"
[ $have_fio = yes ] || echo "fio: not installed (apt-get install fio): fio rows skipped"

# rec METRIC TARGET VALUE: one measurement (MiB/s, ops/s or 1/s).
rec() { echo "$1 $2 $3" >>"$out/all"; }
mib() { # the bwMeanMIB of operation $2 in IOR/pario JSON summary $1
  python3 -c 'import json,sys; print({s["operation"]: s for s in json.load(open(sys.argv[1]))["summary"]}[sys.argv[2]]["bwMeanMIB"])' "$1" "$2"
}
now() { date +%s.%N; }

# ior_run TARGET MODE(shared|fpp): durable write, then cold read.
ior_run() {
  local t=$1 mode=$2 f=() path
  [ "$mode" = fpp ] && f=(-F)
  local common=(-i 1 -k -b "$block" -t "$xfer" -s 1 "${f[@]}" -O summaryFormat=JSON)
  case $t in
    local) path=$local_dir/ior.dat; rm -f "$local_dir"/ior.dat* ;;
    native) path=pario:/native.dat; rm -f "$mnt"/native.dat* ;;
    mount) path=$mnt/ior.dat; rm -f "$mnt"/ior.dat* ;;
  esac
  sync
  if [ "$t" = native ]; then
    run() { "$pario" bench -N "$np" -a PARIO "$@" >/dev/null; }
  else
    run() { mpirun --oversubscribe --bind-to none -np "$np" "$ior" -a POSIX "$@" >/dev/null; }
  fi
  run -w -e "${common[@]}" -o "$path" -O summaryFile="$out/w.json"
  drop
  run -r "${common[@]}" -o "$path" -O summaryFile="$out/r.json"
  rec "ior-$mode-write" "$t" "$(mib "$out/w.json" write)"
  rec "ior-$mode-read" "$t" "$(mib "$out/r.json" read)"
}

# fio_run TARGET JOBS: cold sequential read of 1 MiB requests, files laid
# out beforehand (-b per job).
fio_run() {
  local t=$1 j=$2 d
  [ $t = local ] && d=$local_dir/fio$j || d=$mnt/fio$j
  mkdir -p "$d"
  local opts=(--name=seq --directory="$d" --rw=read --bs=1m --size="$block" --numjobs="$j"
    --group_reporting --ioengine=psync --output-format=json)
  fio "${opts[@]}" --create_only=1 >/dev/null
  drop
  fio "${opts[@]}" --output="$out/fio.json" >/dev/null
  rec "fio-read-$j" "$t" "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["jobs"][0]["read"]["bw_bytes"]/2**20)' "$out/fio.json")"
  rm -rf "$d"
}

# mdtest_run TARGET unique|shared
mdtest_run() {
  local t=$1 kind=$2 d u=()
  [ $t = local ] && d=$local_dir/md || d=$mnt/md
  [ $kind = unique ] && u=(-u)
  mkdir -p "$d"
  mpirun --oversubscribe --bind-to none -np "$np" "$mdtest" -n "$files" -F -C -T -r "${u[@]}" -d "$d" >"$out/md.txt"
  rm -rf "$d"
  python3 - "$out/md.txt" "$kind" "$t" >>"$out/all" <<'PY'
import re, sys
names = {"creation": "create", "stat": "stat", "removal": "remove"}
seen = {}
for line in open(sys.argv[1]):
    m = re.match(r"^\s*File (creation|stat|removal)\s*:?\s*([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)", line)
    if m and names[m.group(1)] not in seen:  # the rate summary comes before the time one
        seen[names[m.group(1)]] = float(m.group(4))
if len(seen) != 3:
    sys.exit("compare-hpc: mdtest printed no rate summary:\n" + open(sys.argv[1]).read())
for op, v in seen.items():
    print(f"mdtest-{sys.argv[2]}-{op} {sys.argv[3]} {v}")
PY
}

# tree_run TARGET: tar x of the repository, then rm -rf of it (1/seconds).
tree_run() {
  local t=$1 d s e
  [ $t = local ] && d=$local_dir/tree || d=$mnt/tree
  mkdir -p "$d"; sync
  s=$(now); tar xf "$dir/tree.tar" -C "$d"; e=$(now)
  rec tar-x "$t" "$(python3 -c "print(1/($e-$s))")"
  sync
  s=$(now); rm -rf "$d"; e=$(now)
  rec rm-rf "$t" "$(python3 -c "print(1/($e-$s))")"
}

for i in $(seq 1 "$reps"); do
  if [ $((i % 2)) -eq 1 ]; then order=(local native mount); else order=(mount native local); fi
  for t in "${order[@]}"; do
    ior_run "$t" shared
    ior_run "$t" fpp
    rm -f "$local_dir"/ior.dat* "$mnt"/ior.dat* "$mnt"/native.dat*
    [ "$t" = native ] && continue
    if [ $have_fio = yes ]; then fio_run "$t" 1; fio_run "$t" 4; fi
    mdtest_run "$t" unique
    mdtest_run "$t" shared
    tree_run "$t"
  done
  echo "repetition $i of $reps done" >&2
done

python3 - "$out/all" <<'PY'
import statistics, sys
vals = {}
for line in open(sys.argv[1]):
    m, t, v = line.split()
    vals.setdefault(m, {}).setdefault(t, []).append(float(v))
med = {m: {t: statistics.median(v) for t, v in d.items()} for m, d in vals.items()}
rows = [  # metric, what, target for native, target for mount (ratios to local)
    ("ior-shared-write", "IOR shared file, durable write, MiB/s", ">= 2x", ">= 0.9x native"),
    ("ior-shared-read", "IOR shared file, cold read, MiB/s", ">= 0.9x", ""),
    ("ior-fpp-write", "IOR file per process, durable write, MiB/s", ">= 1.0x", ">= 0.9x native"),
    ("ior-fpp-read", "IOR file per process, cold read, MiB/s", ">= 0.9x", ""),
    ("fio-read-1", "fio sequential read 1 MiB, 1 job, MiB/s", "", ">= 0.8x"),
    ("fio-read-4", "fio sequential read 1 MiB, 4 jobs, MiB/s", "", ">= 0.8x"),
    ("mdtest-unique-create", "mdtest -u create, ops/s", "", ">= 0.5x"),
    ("mdtest-unique-stat", "mdtest -u stat, ops/s", "", ">= 0.25x"),
    ("mdtest-unique-remove", "mdtest -u remove, ops/s", "", ">= 0.1x"),
    ("mdtest-shared-create", "mdtest shared dir create, ops/s", "", ">= 0.5x"),
    ("mdtest-shared-stat", "mdtest shared dir stat, ops/s", "", ">= 0.25x"),
    ("mdtest-shared-remove", "mdtest shared dir remove, ops/s", "", ">= 0.1x"),
    ("tar-x", "tar x of the repository, 1/s", "", ">= 0.33x (3x slower)"),
    ("rm-rf", "rm -rf of it, 1/s", "", ">= 0.33x (3x slower)"),
]
def fmt(v):
    return f"{v:,.0f}" if v >= 100 else f"{v:.3g}"
print()
print("| what (medians) | local ext4 | native | ratio | target | mount | ratio | target |")
print("|---|---|---|---|---|---|---|---|")
for m, what, tn, tm in rows:
    if m not in med:
        continue
    d = med[m]
    loc = d["local"]
    cells = [what, fmt(loc)]
    for t, tgt in (("native", tn), ("mount", tm)):
        if t in d:
            r = d[t] / loc
            if tgt.endswith("native") and "native" in d:
                tgt += f" (now {d[t] / d['native']:.2f}x)"
            cells += [fmt(d[t]), f"{r:.3g}x", tgt]
        else:
            cells += ["", "", ""]
    print("| " + " | ".join(cells) + " |")
PY

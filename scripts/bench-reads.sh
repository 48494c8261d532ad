#!/usr/bin/env bash
# bench-reads.sh: cold sequential reads of two pario builds side by side,
# against local ext4 on the same disk, in alternating order.
#
#   scripts/bench-reads.sh [-b bytes per rank] [-n ranks] [-r reps] [-O old mount flags]
#                          [-N new mount flags] OLD_PARIO NEW_PARIO
#
# OLD and NEW may be the same binary with different mount flags, e.g.
#   scripts/bench-reads.sh -N "--read-ahead 16m" bin/pario bin/pario
#
# Each build gets its own cluster (`pario up`, 4 I/O servers on loopback,
# data under the test directory) and mount (`pario mount`, default flags
# unless -O or -N give others);
# both stay up for the whole run, idle while the other is measured. Every
# repetition measures, in the order local, OLD, NEW and then NEW, OLD, local:
#
#   native shared / fpp   `pario bench -N n -a PARIO -r` (1 MiB transfers, -b per
#                         rank; the files are written once, durably, beforehand);
#                         local: `pario bench -a POSIX` on the same shapes
#   fio 1 job / 4 jobs    fio sequential read, 1 MiB requests, through the mount
#                         (local: the local directory), files laid out beforehand
#
# As root the page cache is dropped before every read. For each read it
# records MiB/s and the CPU seconds the build's processes spent per GiB read
# (the cluster, the mount for fio, the benchmark and its ranks), which is
# robust to other tenants' load where MiB/s is not. It prints medians, the
# median of each repetition's ratio to local, and the load average.
# BENCH_DIR picks the disk (default ./tmp).
set -euo pipefail
case "${1:-}" in -h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;; esac
block=256m ranks=4 reps=3
declare -A mflags=([old]="" [new]="")
while getopts "b:n:r:O:N:" o; do
  case $o in
    b) block=$OPTARG ;; n) ranks=$OPTARG ;; r) reps=$OPTARG ;;
    O) mflags[old]=$OPTARG ;; N) mflags[new]=$OPTARG ;;
    *) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ $# -eq 2 ] || { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 2; }
old=$(realpath "$1") new=$(realpath "$2")
command -v fio >/dev/null || { echo "bench-reads: fio is not installed (apt-get install fio)" >&2; exit 1; }
cd "$(dirname "$0")/.."
mkdir -p "${BENCH_DIR:-tmp}"
dir=$(mktemp -d "$(realpath "${BENCH_DIR:-tmp}")/bench-reads.XXXXXX")
out=$dir/results
: >"$out"
pids=()
cleanup() {
  for m in "$dir"/mnt-*; do [ -d "$m" ] && { umount "$m" 2>/dev/null || fusermount3 -u "$m" 2>/dev/null || true; }; done
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
if [ -w /proc/sys/vm/drop_caches ]; then cold=yes; else cold=no; fi
drop() { sync; if [ $cold = yes ]; then echo 3 >/proc/sys/vm/drop_caches; fi; }
cpu() { awk '{print ($14+$15)/100}' "/proc/$1/stat"; } # user+system seconds of a process

declare -A up mnt bin=([old]=$old [new]=$new)
for b in old new; do
  "${bin[$b]}" up --dir "$dir/cluster-$b" --servers 4 >"$dir/up-$b.log" 2>&1 &
  up[$b]=$!; pids+=($!)
  for _ in $(seq 1 300); do [ -s "$dir/cluster-$b/cluster" ] && break; sleep 0.1; done
  mkdir -p "$dir/mnt-$b"
  # shellcheck disable=SC2086 # the mount flags are words
  PARIO_CLUSTER=$dir/cluster-$b/cluster "${bin[$b]}" mount ${mflags[$b]} "$dir/mnt-$b" >"$dir/mount-$b.log" 2>&1 &
  mnt[$b]=$!; pids+=($!)
  for _ in $(seq 1 300); do grep -q " $dir/mnt-$b fuse" /proc/mounts && break; sleep 0.1; done
  grep -q " $dir/mnt-$b fuse" /proc/mounts || { echo "bench-reads: $b mount failed:" >&2; cat "$dir/mount-$b.log" >&2; exit 1; }
done
mkdir -p "$dir/local"

# benchcmd TARGET MODE ARGS...: sets cmd to the bench command of a target
# (local, old, new) on the shared file or file per process (fpp).
benchcmd() {
  local t=$1 mode=$2; shift 2
  local f=()
  [ "$mode" = fpp ] && f=(-F)
  if [ "$t" = local ]; then
    cmd=("$new" bench -N "$ranks" -a POSIX -i 1 -k -b "$block" -t 1m -s 1 "${f[@]}" -o "$dir/local/$mode.dat" "$@")
  else
    cmd=(env PARIO_CLUSTER="$dir/cluster-$t/cluster" "${bin[$t]}" bench -N "$ranks" -a PARIO -i 1 -k -b "$block" -t 1m -s 1 "${f[@]}" -o "pario:/$mode.dat" "$@")
  fi
}
fiodir() { if [ "$1" = local ]; then echo "$dir/local/fio$2"; else echo "$dir/mnt-$1/fio$2"; fi; }
fioopts() { echo --name=seq --directory="$(fiodir "$1" "$2")" --rw=read --bs=1m --size="$block" --numjobs="$2" --group_reporting --ioengine=psync; }

echo "laying out the files ($block per rank, $ranks ranks; fio: $block per job)"
for t in local old new; do
  for mode in shared fpp; do benchcmd "$t" "$mode" -w -e; "${cmd[@]}" >/dev/null; done
  for j in 1 4; do mkdir -p "$(fiodir "$t" "$j")"; fio $(fioopts "$t" "$j") --create_only=1 >/dev/null; done
done

# measure TARGET KIND: one cold read; appends "KIND TARGET MiB/s CPU-s/GiB".
measure() {
  local t=$1 kind=$2 c0=0 c1=0 procs=() gib
  [ "$t" != local ] && procs=("${up[$t]}")
  case $kind in fio*) [ "$t" != local ] && procs+=("${mnt[$t]}") ;; esac
  for p in "${procs[@]}"; do c0=$(awk -v a="$c0" -v b="$(cpu "$p")" 'BEGIN { print a + b }'); done
  drop
  case $kind in
    native-shared | native-fpp)
      benchcmd "$t" "${kind#native-}" -r -O summaryFormat=JSON -O summaryFile="$dir/r.json"
      /usr/bin/time -f "%U %S" -o "$dir/time" "${cmd[@]}" >/dev/null
      mib=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["summary"][0]["bwMeanMIB"])' "$dir/r.json")
      gib=$(python3 -c "print($ranks * $(numfmt --from=iec "${block^^}") / 2**30)") ;;
    fio1 | fio4)
      local j=${kind#fio}
      /usr/bin/time -f "%U %S" -o "$dir/time" fio $(fioopts "$t" "$j") --output-format=json --output="$dir/fio.json" >/dev/null
      mib=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["jobs"][0]["read"]["bw_bytes"]/2**20)' "$dir/fio.json")
      gib=$(python3 -c "print($j * $(numfmt --from=iec "${block^^}") / 2**30)") ;;
  esac
  for p in "${procs[@]}"; do c1=$(awk -v a="$c1" -v b="$(cpu "$p")" 'BEGIN { print a + b }'); done
  echo "$kind $t $mib $(python3 -c "u,s=open('$dir/time').read().split()[-2:]; print(($c1-$c0+float(u)+float(s))/$gib)")" >>"$out"
}

echo "machine: $(nproc) CPUs, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg); cold reads: $cold"
echo "old: $old ${mflags[old]}; new: $new ${mflags[new]}"
for i in $(seq 1 "$reps"); do
  if [ $((i % 2)) -eq 1 ]; then order=(local old new); else order=(new old local); fi
  for kind in native-shared native-fpp fio1 fio4; do
    for t in "${order[@]}"; do
      measure "$t" "$kind"
    done
  done
  echo "repetition $i done, load $(cut -d' ' -f1-3 /proc/loadavg)"
done

echo "raw: read target MiB/s CPU-s/GiB, in the order measured"
sed 's/^/  /' "$out"
python3 - "$out" "$reps" <<'PY'
import statistics as st, sys
rows = [l.split() for l in open(sys.argv[1])]
reps = int(sys.argv[2])
kinds = ["native-shared", "native-fpp", "fio1", "fio4"]
by = {}
for kind, t, mib, cpu in rows:
    by.setdefault((kind, t), []).append((float(mib), float(cpu)))
def med(k, t, i): return st.median(v[i] for v in by[(k, t)])
def ratio(k, t):  # median over repetitions of the ratio to local in the same repetition
    return st.median(a[0] / b[0] for a, b in zip(by[(k, t)], by[(k, "local")]))
print(f"\nmedians of {reps}; ratio: median of each repetition's ratio to local; CPU: seconds per GiB read")
print("| read | local MiB/s | old MiB/s | old/local | new MiB/s | new/local | new/old | CPU-s/GiB local / old / new |")
print("|---|---|---|---|---|---|---|---|")
for k in kinds:
    print(f"| {k} | {med(k,'local',0):,.0f} | {med(k,'old',0):,.0f} | {ratio(k,'old'):.2f}x | {med(k,'new',0):,.0f} | {ratio(k,'new'):.2f}x | "
          f"{st.median(a[0]/b[0] for a, b in zip(by[(k,'new')], by[(k,'old')])):.2f}x | "
          f"{med(k,'local',1):.2f} / {med(k,'old',1):.2f} / {med(k,'new',1):.2f} |")
PY

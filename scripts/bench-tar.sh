#!/usr/bin/env bash
# bench-tar.sh: issue 11's small-file rows on their own: `tar x` of this
# repository's tree (git archive HEAD) and `rm -rf` of it, on a local
# directory and on a `pario mount --embedded` (4 I/O servers on loopback,
# data on the same disk), alternating (local, mount; then mount, local),
# with the ratio of the medians (pario time / local time; the target is
# <= 3). It also counts, over one `tar x` and one `rm -rf` on the mount,
# the FUSE requests by op and the metadata and I/O server requests by op,
# per entry of the archive (from the mount's --metrics).
#
#   scripts/bench-tar.sh                     # 3 repetitions, medians
#   scripts/bench-tar.sh -r 5 -p bin/pario -d /var/tmp/bt
#   scripts/bench-tar.sh -b /tmp/pario-main      # before / after in one run
#
# Options: -r repetitions (3), -d directory on the disk to test (default a
# new directory under ./tmp), -p pario binary (default: built from this
# tree), -b a second pario binary ("before", e.g. built from main), mounted
# beside the first and measured in the same run, -t tar file to extract
# instead of git archive HEAD.
# Needs git, curl, python3, /dev/fuse and Debian's fuse3. The mount and its
# files are removed on exit, whatever failed.
set -euo pipefail

reps=3 dir="" pario="" tarfile="" before=""
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit "${1:-2}"; }
case "${1:-}" in -h | --help) usage 0 ;; esac
while getopts "r:d:p:t:b:h" opt; do
  case $opt in
    r) reps=$OPTARG ;;
    d) dir=$OPTARG ;;
    p) pario=$OPTARG ;;
    t) tarfile=$OPTARG ;;
    b) before=$OPTARG ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))
[ $# -eq 0 ] || usage
for c in python3 git curl fusermount3; do
  command -v $c >/dev/null || { echo "bench-tar: $c not found (python3, git, curl, fuse3)" >&2; exit 2; }
done
cd "$(dirname "$0")/.."
repo=$(pwd)
if [ -z "$pario" ]; then
  mkdir -p bin
  go build -o bin/pario ./cmd/pario
  pario=bin/pario
fi
pario=$(realpath "$pario")
[ -z "$before" ] || before=$(realpath "$before")
[ -n "$dir" ] || { mkdir -p tmp; dir=$(mktemp -d "$repo/tmp/bench-tar.XXXXXX"); }
mkdir -p "$dir"
dir=$(realpath "$dir")
local_dir=$dir/local out=$dir/results
mkdir -p "$local_dir" "$out"
targets=(mount) bins=("$pario")
[ -z "$before" ] || { targets+=(before); bins+=("$before"); }

pids=() mnts=()
cleanup() {
  set +e
  for m in "${mnts[@]}"; do
    "$pario" umount "$m" 2>/dev/null || "$pario" umount --lazy "$m" 2>/dev/null || fusermount3 -u -z "$m" 2>/dev/null
  done
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

declare -A mnt maddr
for i in "${!targets[@]}"; do
  t=${targets[$i]} b=${bins[$i]}
  m=$dir/mnt-$t
  mkdir -p "$m" "$dir/cluster-$t"
  "$b" --log-level warn mount --embedded --dir "$dir/cluster-$t" --metrics 127.0.0.1:0 "$m" >"$dir/mount-$t.log" 2>&1 &
  pids+=($!) mnts+=("$m")
  for _ in $(seq 1 300); do grep -q " $m fuse" /proc/mounts && break; sleep 0.1; done
  grep -q " $m fuse" /proc/mounts || { echo "bench-tar: $b mount did not mount $m:" >&2; cat "$dir/mount-$t.log" >&2; exit 1; }
  a=$(grep -o 'http://127.0.0.1:[0-9]*' "$dir/mount-$t.log" | head -1 || true)
  [ -n "$a" ] || { echo "bench-tar: the $t mount printed no metrics address:" >&2; cat "$dir/mount-$t.log" >&2; exit 1; }
  mnt[$t]=$m maddr[$t]=$a
done

if [ -n "$tarfile" ]; then cp "$tarfile" "$dir/tree.tar"; else git -C "$repo" archive --format=tar HEAD >"$dir/tree.tar"; fi
entries=$(tar tf "$dir/tree.tar" | wc -l)
files=$(tar tvf "$dir/tree.tar" | grep -c '^-' || true)

echo "machine: $(nproc) CPUs, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg); disk: $(df -T "$dir" | awk 'NR==2 {print $2" on "$1}')"
echo "pario: $pario ($(git -C "$repo" rev-parse --short HEAD))${before:+; before: $before}; tar of $entries entries ($files regular files); $reps repetitions, ABBA order; $(date -u +%FT%TZ)"

now() { date +%s.%N; }
scrape() { curl -sf "${maddr[$1]}/metrics" >"$2"; }

# tree_run TARGET REP: tar x, then rm -rf (seconds); the first run on a
# mount also records the request counts around each.
tree_run() {
  local t=$1 i=$2 d s e first=no
  [ "$t" = local ] && d=$local_dir/tree || d=${mnt[$t]}/tree
  [ "$t" != local ] && [ "$i" = 1 ] && first=yes
  mkdir -p "$d"; sync
  [ $first = yes ] && scrape "$t" "$out/$t.m0"
  s=$(now); tar xf "$dir/tree.tar" -C "$d"; e=$(now)
  echo "tar-x $t $(python3 -c "print($e-$s)")" >>"$out/all"
  [ $first = yes ] && scrape "$t" "$out/$t.m1"
  sync
  s=$(now); rm -rf "$d"; e=$(now)
  echo "rm-rf $t $(python3 -c "print($e-$s)")" >>"$out/all"
  [ $first = yes ] && scrape "$t" "$out/$t.m2"
  return 0
}

for i in $(seq 1 "$reps"); do
  if [ $((i % 2)) -eq 1 ]; then order=(local "${targets[@]}"); else order=(); for t in "${targets[@]}"; do order=("$t" "${order[@]}"); done; order+=(local); fi
  for t in "${order[@]}"; do tree_run "$t" "$i"; done
  echo "repetition $i of $reps done" >&2
done

python3 - "$out" "$entries" "${targets[@]}" <<'PY'
import re, statistics, sys
out, entries, targets = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
vals = {}
for line in open(out + "/all"):
    m, t, v = line.split()
    vals.setdefault(m, {}).setdefault(t, []).append(float(v))
print()
head = "| what | local ext4, s |" + "".join(f" {t}, s | {t} / local |" for t in targets)
print(head)
print("|---|---|" + "---|---|" * len(targets))
for m in ("tar-x", "rm-rf"):
    loc = statistics.median(vals[m]["local"])
    row = f"| {m} (median of {len(vals[m]['local'])}) | {loc:.3f} |"
    for t in targets:
        v = statistics.median(vals[m][t])
        row += f" {v:.3f} | {v / loc:.2f}x |"
    print(row)
print()
print("each run, in order: " + "; ".join(f"{m} {t}: " + " ".join(f"{v:.2f}" for v in vs)
                                       for m in ("tar-x", "rm-rf") for t, vs in vals[m].items()))

def counts(path):
    c = {}
    for line in open(path):
        mm = re.match(r'^(pario_fuse_requests_total|pario_requests_total)\{([^}]*)\} ([0-9.e+]+)$', line)
        if not mm:
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', mm.group(2)))
        if mm.group(1) == "pario_fuse_requests_total":
            key = ("FUSE", labels.get("op", "?"))
        else:
            key = (labels.get("service", "?"), labels.get("op", "?"))
        c[key] = c.get(key, 0) + float(mm.group(3))
    return c
per = {}
for t in targets:
    try:
        m0, m1, m2 = (counts(f"{out}/{t}.m{i}") for i in range(3))
    except OSError:
        continue
    for k in set(m0) | set(m1) | set(m2):
        if k[1] == "watch":
            continue
        a = (m1.get(k, 0) - m0.get(k, 0)) / entries
        b = (m2.get(k, 0) - m1.get(k, 0)) / entries
        per.setdefault(k, {})[t] = (a, b)
        tot = per.setdefault((k[0], "all"), {}).get(t, (0, 0))
        per[(k[0], "all")][t] = (tot[0] + a, tot[1] + b)
print()
print(f"requests per archive entry ({entries} entries), first run on each mount:")
print()
print("| layer | op |" + "".join(f" tar x, {t} |" for t in targets) + "".join(f" rm -rf, {t} |" for t in targets))
print("|---|---|" + "---|" * (2 * len(targets)))
for k in sorted(per, key=lambda k: (k[0], k[1] == "all", k[1])):
    v = per[k]
    if all(v.get(t, (0, 0))[0] < 0.005 and v.get(t, (0, 0))[1] < 0.005 for t in targets):
        continue
    print(f"| {k[0]} | {k[1]} |" + "".join(f" {v.get(t, (0, 0))[0]:.2f} |" for t in targets) + "".join(f" {v.get(t, (0, 0))[1]:.2f} |" for t in targets))
PY

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
#
# Options: -r repetitions (3), -d directory on the disk to test (default a
# new directory under ./tmp), -p pario binary (default: built from this
# tree), -t tar file to extract instead of git archive HEAD.
# Needs git, curl, python3, /dev/fuse and Debian's fuse3. The mount and its
# files are removed on exit, whatever failed.
set -euo pipefail

reps=3 dir="" pario="" tarfile=""
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 2; }
while getopts "r:d:p:t:h" opt; do
  case $opt in
    r) reps=$OPTARG ;;
    d) dir=$OPTARG ;;
    p) pario=$OPTARG ;;
    t) tarfile=$OPTARG ;;
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
[ -n "$dir" ] || { mkdir -p tmp; dir=$(mktemp -d "$repo/tmp/bench-tar.XXXXXX"); }
mkdir -p "$dir"
dir=$(realpath "$dir")
local_dir=$dir/local mnt=$dir/mnt out=$dir/results
mkdir -p "$local_dir" "$mnt" "$out" "$dir/cluster"

mount_pid=""
cleanup() {
  set +e
  if [ -n "$mount_pid" ]; then
    "$pario" umount "$mnt" 2>/dev/null || "$pario" umount --lazy "$mnt" 2>/dev/null || fusermount3 -u -z "$mnt" 2>/dev/null
    kill "$mount_pid" 2>/dev/null; wait "$mount_pid" 2>/dev/null
  fi
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

"$pario" --log-level warn mount --embedded --dir "$dir/cluster" --metrics 127.0.0.1:0 "$mnt" >"$dir/mount.log" 2>&1 &
mount_pid=$!
for _ in $(seq 1 300); do grep -q " $mnt fuse" /proc/mounts && break; sleep 0.1; done
grep -q " $mnt fuse" /proc/mounts || { echo "bench-tar: pario mount did not mount $mnt:" >&2; cat "$dir/mount.log" >&2; exit 1; }
maddr=$(grep -o 'http://127.0.0.1:[0-9]*' "$dir/mount.log" | head -1 || true)
[ -n "$maddr" ] || { echo "bench-tar: the mount printed no metrics address:" >&2; cat "$dir/mount.log" >&2; exit 1; }

if [ -n "$tarfile" ]; then cp "$tarfile" "$dir/tree.tar"; else git -C "$repo" archive --format=tar HEAD >"$dir/tree.tar"; fi
entries=$(tar tf "$dir/tree.tar" | wc -l)
files=$(tar tvf "$dir/tree.tar" | grep -c '^-' || true)

echo "machine: $(nproc) CPUs, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg); disk: $(df -T "$dir" | awk 'NR==2 {print $2" on "$1}')"
echo "pario: $pario ($(git -C "$repo" rev-parse --short HEAD)); tar of $entries entries ($files regular files); $reps repetitions, ABBA order; $(date -u +%FT%TZ)"

now() { date +%s.%N; }
scrape() { curl -sf "$maddr/metrics" >"$1"; }

# tree_run TARGET REP: tar x, then rm -rf (seconds); the first mount run
# also records the request counts around each.
tree_run() {
  local t=$1 i=$2 d s e
  [ "$t" = local ] && d=$local_dir/tree || d=$mnt/tree
  mkdir -p "$d"; sync
  [ "$t" = mount ] && [ "$i" = 1 ] && scrape "$out/m0"
  s=$(now); tar xf "$dir/tree.tar" -C "$d"; e=$(now)
  echo "tar-x $t $(python3 -c "print($e-$s)")" >>"$out/all"
  [ "$t" = mount ] && [ "$i" = 1 ] && scrape "$out/m1"
  sync
  s=$(now); rm -rf "$d"; e=$(now)
  echo "rm-rf $t $(python3 -c "print($e-$s)")" >>"$out/all"
  [ "$t" = mount ] && [ "$i" = 1 ] && scrape "$out/m2"
  return 0
}

for i in $(seq 1 "$reps"); do
  if [ $((i % 2)) -eq 1 ]; then order=(local mount); else order=(mount local); fi
  for t in "${order[@]}"; do tree_run "$t" "$i"; done
  echo "repetition $i of $reps done" >&2
done

python3 - "$out" "$entries" <<'PY'
import re, statistics, sys
out, entries = sys.argv[1], int(sys.argv[2])
vals = {}
for line in open(out + "/all"):
    m, t, v = line.split()
    vals.setdefault(m, {}).setdefault(t, []).append(float(v))
print()
print("| what | local ext4, s | mount, s | mount / local |")
print("|---|---|---|---|")
for m in ("tar-x", "rm-rf"):
    loc, mnt = statistics.median(vals[m]["local"]), statistics.median(vals[m]["mount"])
    print(f"| {m} (median of {len(vals[m]['mount'])}) | {loc:.3f} | {mnt:.3f} | {mnt / loc:.2f}x |")

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
try:
    m0, m1, m2 = (counts(f"{out}/m{i}") for i in range(3))
except OSError:
    sys.exit(0)
print()
print(f"requests per archive entry ({entries} entries), first mount run:")
print()
print("| layer | op | tar x | rm -rf |")
print("|---|---|---|---|")
keys = sorted(set(m0) | set(m1) | set(m2))
tot = {}
for k in keys:
    a = (m1.get(k, 0) - m0.get(k, 0)) / entries
    b = (m2.get(k, 0) - m1.get(k, 0)) / entries
    if a < 0.005 and b < 0.005 or k[1] == "watch":
        continue
    tot.setdefault(k[0], [0, 0])
    tot[k[0]][0] += a
    tot[k[0]][1] += b
    print(f"| {k[0]} | {k[1]} | {a:.2f} | {b:.2f} |")
for layer, (a, b) in sorted(tot.items()):
    print(f"| {layer} | all | {a:.2f} | {b:.2f} |")
PY

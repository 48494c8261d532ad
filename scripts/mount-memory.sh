#!/usr/bin/env bash
# mount-memory.sh: the resident memory of `pario mount` before, during and
# after large files are written and read through it.
#
# A cluster (`pario up`, its own process) and a mount (`pario mount`, its
# own process, with --metrics) are started; FILES files of SIZE MiB are
# written at once through the mount (dd, 1 MiB blocks, one descriptor
# each), closed, read back at once, closed; the mount's VmRSS
# (/proc/PID/status) and its Go heap (in use; idle and not yet released)
# are printed at each step, the last one IDLE seconds after the files
# closed (the mount hands free memory back once idle for 2 s).
#
#   scripts/mount-memory.sh [FILES [SIZE_MIB [IDLE_S [mount flags...]]]]
#   scripts/mount-memory.sh 4 512 5 --memory 64m
#
# Needs /dev/fuse and Debian's fuse3. BENCH_DIR picks the disk.
set -euo pipefail
case "${1:-}" in -h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;; esac
cd "$(dirname "$0")/.."
files="${1:-4}" size="${2:-512}" idle="${3:-5}"
shift $(( $# < 3 ? $# : 3 ))
mkdir -p bin
go build -o bin/pario ./cmd/pario
base="$(mktemp -d "${BENCH_DIR:-/tmp}/mountmem.XXXXXX")"
mnt="$base/mnt" && mkdir -p "$mnt"
port=$(( 20000 + RANDOM % 20000 ))
up= mp=
cleanup() {
	[ -n "$mp" ] && { bin/pario umount "$mnt" 2>/dev/null || bin/pario umount --lazy "$mnt" 2>/dev/null || true; wait "$mp" 2>/dev/null || true; }
	[ -n "$up" ] && { kill "$up" 2>/dev/null; wait "$up" 2>/dev/null || true; }
	rm -rf "$base"
}
trap cleanup EXIT
bin/pario up --dir "$base/data" --log-level warn >/dev/null &
up=$!
bin/pario --cluster "$base/data/cluster" --log-level warn mount --metrics "127.0.0.1:$port" "$@" "$mnt" >/dev/null &
mp=$!
for _ in $(seq 150); do grep -q " $mnt fuse" /proc/mounts && break; sleep 0.1; done
grep -q " $mnt fuse" /proc/mounts || { echo "mount-memory: $mnt not mounted" >&2; exit 1; }

report() {
	local rss m
	rss=$(awk '/^VmRSS/ {print $2}' "/proc/$mp/status")
	m=$(curl -s "http://127.0.0.1:$port/metrics")
	awk -v what="$1" -v rss="$rss" '
		/^go_memstats_heap_inuse_bytes / {inuse=$2}
		/^go_memstats_heap_idle_bytes / {idle=$2}
		/^go_memstats_heap_released_bytes / {rel=$2}
		/^pario_mount_memory_used_bytes / {used=$2}
		END {printf "%-28s VmRSS %7.1f MiB  heap in use %7.1f MiB  idle unreleased %7.1f MiB  budget used %6.1f MiB\n",
			what, rss/1024, inuse/1048576, (idle-rel)/1048576, used/1048576}' <<<"$m"
}

echo "mount-memory $(date -u +%Y-%m-%dT%H:%MZ) host=$(hostname) $(nproc) CPUs; $files files x $size MiB; pario mount $*"
report "mounted"
pids=()
for i in $(seq "$files"); do dd if=/dev/urandom of="$mnt/f$i" bs=1M count="$size" status=none & pids+=($!); done
wait "${pids[@]}"
report "written, closed"
pids=()
for i in $(seq "$files"); do cat "$mnt/f$i" >/dev/null & pids+=($!); done
wait "${pids[@]}"
report "read, closed"
sleep "$idle"
report "idle ${idle} s after"

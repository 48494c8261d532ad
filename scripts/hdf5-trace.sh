#!/usr/bin/env bash
# hdf5-trace.sh: which I/O servers are busy while a pattern of
# scripts/hdf5-thesis.sh writes through the mount. It starts the same
# emulated cluster (pario up --servers 10 --disk-rate RATE --disk-seek SEEK
# --metrics), mounts it with --write-behind WB, runs one `pario-hdf5
# bench` write under mpirun for each pattern, and samples every I/O
# server's requests in flight and data bytes received (pario up's
# Prometheus metrics) every 100 ms. Per pattern it prints the write rate,
# the mean number of servers with a request in flight, the share of
# samples in which at most two servers were busy, the busiest server's
# share of the requests in flight, each server's bytes, and the busy
# servers sample by sample (9 stands for 9 or 10).
#
#   scripts/hdf5-trace.sh [-n ranks] [-R rate] [-D seek] [-S strip] [-W write-behind] [-m layer] [-F] [-a api] [patterns]
#   scripts/hdf5-trace.sh                        # POSIX 1-OST and disjoint, write-behind 8m
#   scripts/hdf5-trace.sh -W 0 1-OST disjoint    # the same without write-behind
#   scripts/hdf5-trace.sh -F 1-OST               # one file per rank
#   scripts/hdf5-trace.sh -m romio-nocb -a "-a HDF5 -c --hdf5.nofill --hdf5.setalignment 256k" disjoint 2-OST
#
# Patterns as in hdf5-thesis.sh: 1-OST, disjoint, 2-OST, 5-OST, 10-OST.
# -a is the bench API and its options (default "-a POSIX"), after the
# pattern's and -o, so it may override them ("-a POSIX -s 6"; pario's own
# client, without the mount: "-a PARIO --pario.layout
# simple_stripe:strip_size=256k,num_datafiles=10 -o pario:/thesis/f"). -F writes a
# file per process (-F), so no two ranks share a file's write-behind. -m
# is the MPI-IO layer as in hdf5-thesis.sh (ompio, romio-cb, romio-nocb).
# Run as root (mount); needs python3 and mpirun.
set -euo pipefail
case "${1:-}" in -h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;; esac
cd "$(dirname "$0")/.."

ranks=10 rate=4MB/s seek=10ms strip=256k wb=8m api="-a POSIX" fpp=() layer=ompio
while getopts n:R:D:S:W:a:m:F opt; do
	case $opt in
	n) ranks=$OPTARG ;;
	R) rate=$OPTARG ;;
	D) seek=$OPTARG ;;
	S) strip=$OPTARG ;;
	W) wb=$OPTARG ;;
	a) api=$OPTARG ;;
	F) fpp=(-F) ;;
	m) layer=$OPTARG ;;
	*) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
patterns=("$@")
[ ${#patterns[@]} -gt 0 ] || patterns=(1-OST disjoint)
mkdir -p bin
go build -o bin/pario ./cmd/pario
make -s build-hdf5
pario=$PWD/bin/pario h5=$PWD/bin/pario-hdf5

work=$(mktemp -d)
mnt=$work/mnt
upPID="" mountPID="" spid=""
cleanup() {
	set +e
	[ -z "$spid" ] || kill "$spid" 2>/dev/null
	if [ -n "$mountPID" ]; then
		"$pario" umount --lazy "$mnt" 2>/dev/null
		kill "$mountPID" 2>/dev/null
		wait "$mountPID" 2>/dev/null
	fi
	if [ -n "$upPID" ]; then
		kill "$upPID" 2>/dev/null
		wait "$upPID" 2>/dev/null
	fi
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mkdir -p "$mnt" "$work/data"
"$pario" up --dir "$work/data" --servers 10 --disk-rate "$rate" --disk-seek "$seek" \
	--metrics 127.0.0.1:0 --log-level info >"$work/up.log" 2>&1 &
upPID=$!
export PARIO_CLUSTER=$work/data/cluster
for _ in $(seq 100); do [ -f "$PARIO_CLUSTER" ] && break; sleep 0.2; done
"$pario" mount --write-behind "$wb" "$mnt" >"$work/mount.log" 2>&1 &
mountPID=$!
for _ in $(seq 100); do mountpoint -q "$mnt" && break; sleep 0.2; done
mountpoint -q "$mnt" || { cat "$work/mount.log" >&2; exit 1; }
addr=$(grep -o 'http://127.0.0.1:[0-9]*' "$work/up.log" | head -1)
[ -n "$addr" ] || { echo "hdf5-trace: no metrics address in pario up's log" >&2; cat "$work/up.log" >&2; exit 1; }
mkdir -p "$mnt/thesis"
"$pario" layout set /thesis -c 10 -S "$strip" >/dev/null

printf 'romio_cb_write enable\nromio_cb_read enable\n' >"$work/hints-cb"
printf 'romio_cb_write disable\nromio_cb_read disable\n' >"$work/hints-nocb"
case $layer in
ompio) mpiargs=(--mca io ompio) ;;
romio-cb) mpiargs=(--mca io romio321 -x "ROMIO_HINTS=$work/hints-cb") ;;
romio-nocb) mpiargs=(--mca io romio321 -x "ROMIO_HINTS=$work/hints-nocb") ;;
*) echo "hdf5-trace: unknown MPI-IO layer $layer" >&2; exit 2 ;;
esac
s=$(numfmt --from=iec "${strip^^}")
declare -A pat=(
	[1-OST]="-b $s -t $s -s 20"
	[disjoint]="-b $((20 * s)) -t $s -s 1"
	[2-OST]="-b $((2 * s)) -t $s -s 10"
	[5-OST]="-b $((5 * s)) -t $s -s 4"
	[10-OST]="-b $((10 * s)) -t $s -s 2"
)

# The sampler: every 100 ms until killed, one line per sample: the time
# and, per data server, requests in flight and data bytes received so far.
cat >"$work/sample.py" <<-'EOF'
		import re, sys, time, urllib.request
		url, out = sys.argv[1], sys.argv[2]
		infl = re.compile(r'^pario_requests_in_flight\{server="([^"]+)",service="data"\} (\S+)')
		byt = re.compile(r'^pario_request_bytes_total\{direction="in",op="([^"]+)",server="([^"]+)",service="data"\} (\S+)')
		with open(out, "w") as f:
		    while True:
		        t = time.time()
		        try:
		            body = urllib.request.urlopen(url, timeout=1).read().decode()
		        except Exception:
		            time.sleep(0.1); continue
		        fl, by = {}, {}
		        for line in body.splitlines():
		            m = infl.match(line)
		            if m: fl[m[1]] = float(m[2]); continue
		            m = byt.match(line)
		            if m and "write" in m[1].lower(): by[m[2]] = by.get(m[2], 0) + float(m[3])
		        f.write("%f %s\n" % (t, " ".join("%s:%d:%d" % (k, fl.get(k, 0), by.get(k, 0)) for k in sorted(set(fl) | set(by)))))
		        f.flush()
		        time.sleep(max(0, 0.1 - (time.time() - t)))
	EOF

i=0
for p in "${patterns[@]}"; do
	i=$((i + 1))
	python3 "$work/sample.py" "$addr/metrics" "$work/$i.samples" &
	spid=$!
	sleep 0.3
	# shellcheck disable=SC2086
	out=$(nice -n 5 mpirun --allow-run-as-root --oversubscribe "${mpiargs[@]}" -np "$ranks" "$h5" bench -i 1 ${pat[$p]} "${fpp[@]}" \
		-w -e -o "$mnt/thesis/f" $api 2>"$work/err") || { tail -3 "$work/err" >&2; }
	kill "$spid"
	wait "$spid" 2>/dev/null || true
	rm -f "$mnt"/thesis/f*
	w=$(awk '/^Summary of all tests:/ { s = 1; next } s && $1 == "write" { print $4 }' <<<"$out")
	python3 - "$work/$i.samples" "$p" "$w" "$wb" "$layer" <<-'EOF'
		import sys
		path, pat, rate, wb, layer = sys.argv[1:6]
		rows = []
		for line in open(path):
		    t, *cells = line.split()
		    rows.append((float(t), {c.split(":")[0]: (int(c.split(":")[1]), int(c.split(":")[2])) for c in cells}))
		# The write phase: from the first sample with data in flight to the last.
		busy = [sum(1 for fl, _ in r.values() if fl > 0) for _, r in rows]
		# How much of what is in flight waits on one server.
		top = [max(fl for fl, _ in r.values()) / sum(fl for fl, _ in r.values()) for _, r in rows if r and sum(fl for fl, _ in r.values()) > 0]
		idx = [i for i, b in enumerate(busy) if b > 0]
		if not idx:
		    print(f"{pat}: no requests seen"); sys.exit()
		phase = busy[idx[0]:idx[-1] + 1]
		first, last = rows[idx[0]][1], rows[idx[-1]][1]
		servers = sorted(last)
		mib = {s: (last[s][1] - first.get(s, (0, 0))[1]) / 2**20 for s in servers}
		print(f"{pat} ({layer}, write-behind {wb}): write {rate} MiB/s; servers busy per sample: mean {sum(phase)/len(phase):.1f} of {len(servers)}, "
		      f"<= 2 busy in {100*sum(1 for b in phase if b <= 2)/len(phase):.0f}% of {len(phase)} samples; "
		      f"busiest server's share of the requests in flight: mean {100*sum(top)/len(top):.0f}%")
		print("  MiB received per server: " + " ".join(f"{mib[s]:.1f}" for s in servers))
		print("  servers busy, sample by sample: " + "".join(str(min(b, 9)) for b in phase))
	EOF
done

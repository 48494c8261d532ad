#!/usr/bin/env bash
# hdf5-thesis.sh: the HDF5/NetCDF-4 thesis' (seed 002) results, scaled down,
# on an emulated 10-server pario cluster through the FUSE mount, with
# MPI-IO's POSIX (ufs) driver underneath MPIIO, HDF5 and NetCDF-4.
#
# It starts `pario up --servers 10 --disk-rate RATE --disk-seek SEEK
# --lock-revoke REVOKE` in a temporary
# directory, mounts it, sets the layout of the target directory with
# `pario layout set /thesis -c 10 -S STRIP`, and runs `bin/pario-hdf5
# bench` under mpirun with RANKS ranks for each stage:
#
#   patterns   1-OST, disjoint, 2-, 5- and 10-OST for POSIX, MPIIO,
#              HDF5 independent and HDF5 collective    -> docs/hdf5-patterns.csv
#   findings   NetCDF-4 alignment (independent, collective), the old and
#              fixed chunk rule on an unlimited-only variable, fill values
#              on/off (HDF5, NetCDF-4)                 -> docs/hdf5-findings.csv
#   rest       transfer sizes, chunk sizes, collective vs independent on
#              contiguous and chunked data, the fixed chunk rule at 2 MiB
#                                                      -> docs/hdf5-rest.csv
#   extendible an extendible dataset, HDF5 vs NetCDF-4 -> docs/hdf5-extendible.csv
#   transfers  transfer sizes -T, 4 ranks of -B bytes   -> docs/hdf5-transfers.csv
#   twod       the disjoint pattern in a 2-D dataset    -> docs/hdf5-twod.csv
#   bigt       the 1-OST and 2-OST patterns with a transfer of one block
#              against transfers of -K blocks in one call (figures 4.10,
#              4.13)                                   -> docs/hdf5-bigt.csv
#
# Each configuration runs REPS times, configurations alternating within a
# repetition (the machine is shared); the CSV holds every run, and
# tools/hdf5plot draws the medians into docs/hdf5-*.png.
#
# Collective configurations run once for each MPI-IO layer of -m (their
# config names end in [layer]):
#
#   ompio       Open MPI's own MPI-IO (4.1's default on a local file
#               system), its two-phase collective I/O
#   romio-cb    ROMIO (--mca io romio321), two-phase on (romio_cb_write=
#               romio_cb_read=enable); one aggregator, as all ranks share a node
#   romio-nocb  ROMIO with two-phase off (romio_cb_write=romio_cb_read=
#               disable): what the thesis ran
#   romio-nods  ROMIO with two-phase and data sieving off (romio_ds_write=
#               romio_ds_read=disable too): a rank's non-contiguous call
#               is then its pieces, where data sieving reads, patches and
#               writes back the whole span under a lock
#
# The hints go to ROMIO through a hints file (ROMIO_HINTS). Independent
# configurations run under -I (default ompio, as the runs before -m).
#
#   scripts/hdf5-thesis.sh [-s stages] [-n ranks] [-r reps] [-R rate] [-D seek] [-L revoke]
#                          [-S strip] [-m layers] [-I layer] [-T transfers] [-B bytes]
#                          [-p patterns] [-P strips] [-K blocks]
#   scripts/hdf5-thesis.sh -s patterns -r 3          # one stage
#   scripts/hdf5-thesis.sh -s findings -m romio-nocb # the thesis' collective only
#
# The transfer sweep of the rest stage (-T, default "128k 512k 1m 2m 8m")
# gives each of its ranks -B bytes (default 8m); the transfers stage
# sweeps -T with 4 ranks of -B each (the thesis goes to 512 MiB).
#
# The patterns stage runs the patterns of -p (default all five), each
# moving -P strips per rank (default 400: forty per I/O server, so that in
# the disjoint pattern the first touches of a datafile, which take extent
# locks from the neighbouring ranks, are a few of each rank's writes there,
# as in the thesis' runs of gigabytes per rank).
#
# The bigt stage runs the patterns of -p that are 1-OST or 2-OST (default
# both), -P strips per rank, first in transfers of one block as IOR makes
# them, then in transfers of -K blocks (default 40) made with --strided:
# one call of the API per transfer (one hyperslab for HDF5, a file view
# for MPI-IO), as the thesis' own benchmarks for its 512 MiB transfers
# over 1-2 MiB blocks (IOR refuses t > b); MPI-IO independent, HDF5
# independent and collective.
#
# Defaults: the first four stages, 10 ranks, 3 repetitions, 4MB/s per server (40MB/s
# for the ten: below what this machine's mount does unthrottled), a 10ms
# seek for each request that does not continue the previous one on its
# datafile (-D 0: bytes only, as before), 65ms for each extent lock a
# write takes from another rank, as Lustre's do: a strip's time on the
# emulated disk, since the holder flushes its dirty strip before the new
# writer is granted (-L 0: no lock emulation; docs/hdf5.md), 256k strips.
# Run as root (mount); needs /dev/fuse, fuse3, openmpi-bin, curl and the
# libraries of `make build-hdf5`.
set -euo pipefail
case "${1:-}" in -h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;; esac
cd "$(dirname "$0")/.."

stages="patterns findings rest extendible" ranks=10 reps=3 rate=4MB/s seek=10ms revoke=65ms strip=256k
patterns="1-OST disjoint 2-OST 5-OST 10-OST" perpattern=400
layers="ompio romio-cb romio-nocb" indep=ompio transfers="128k 512k 1m 2m 8m" perrank=8m bigblocks=40
while getopts s:n:r:R:D:L:S:m:I:T:B:p:P:K: opt; do
	case $opt in
	s) stages=$OPTARG ;;
	n) ranks=$OPTARG ;;
	r) reps=$OPTARG ;;
	R) rate=$OPTARG ;;
	D) seek=$OPTARG ;;
	L) revoke=$OPTARG ;;
	S) strip=$OPTARG ;;
	m) layers=$OPTARG ;;
	I) indep=$OPTARG ;;
	T) transfers=$OPTARG ;;
	B) perrank=$OPTARG ;;
	p) patterns=$OPTARG ;;
	P) perpattern=$OPTARG ;;
	K) bigblocks=$OPTARG ;;
	*) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" >&2; exit 2 ;;
	esac
done
for l in $layers $indep; do
	case $l in
	ompio | romio-cb | romio-nocb | romio-nods) ;;
	*) echo "hdf5-thesis: unknown MPI-IO layer $l (ompio, romio-cb, romio-nocb, romio-nods)" >&2; exit 2 ;;
	esac
done
for p in $patterns; do
	case $p in
	1-OST | disjoint | 2-OST | 5-OST | 10-OST) ;;
	*) echo "hdf5-thesis: unknown pattern $p (1-OST, disjoint, 2-OST, 5-OST, 10-OST)" >&2; exit 2 ;;
	esac
done
if ! [[ $bigblocks =~ ^[1-9][0-9]*$ ]] || [ $(((perpattern / 2) % bigblocks)) != 0 ]; then
	echo "hdf5-thesis: -K $bigblocks: want a count of blocks that divides half of -P ($perpattern strips per rank)" >&2
	exit 2
fi
if ! [[ $perpattern =~ ^[1-9][0-9]*0$ ]]; then
	echo "hdf5-thesis: -P $perpattern: want a positive multiple of 10 strips per rank" >&2
	exit 2
fi
for tool in mpirun fusermount3 curl; do
	command -v $tool >/dev/null || { echo "$tool not found: make deps" >&2; exit 1; }
done
mkdir -p bin
go build -o bin/pario ./cmd/pario
make -s build-hdf5
go build -o bin/hdf5plot ./tools/hdf5plot
pario=$PWD/bin/pario
h5=$PWD/bin/pario-hdf5

work=$(mktemp -d)
mnt=$work/mnt
upPID="" mountPID=""
cleanup() {
	set +e
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
emuFlags=()
[ "$seek" = 0 ] || emuFlags+=(--disk-seek "$seek")
[ "$revoke" = 0 ] || emuFlags+=(--lock-revoke "$revoke")
metrics=127.0.0.1:$((20000 + RANDOM % 20000))
"$pario" up --dir "$work/data" --servers 10 --disk-rate "$rate" "${emuFlags[@]}" --metrics "$metrics" --log-level warn >"$work/up.log" 2>&1 &
upPID=$!
export PARIO_CLUSTER=$work/data/cluster
for _ in $(seq 100); do [ -f "$PARIO_CLUSTER" ] && break; sleep 0.2; done
"$pario" mount "$mnt" >"$work/mount.log" 2>&1 &
mountPID=$!
for _ in $(seq 100); do mountpoint -q "$mnt" && break; sleep 0.2; done
mountpoint -q "$mnt" || { cat "$work/mount.log" >&2; exit 1; }
mkdir -p "$mnt/thesis"
"$pario" layout set /thesis -c 10 -S "$strip"
dir=$mnt/thesis
date=$(date -u +%Y-%m-%dT%H:%MZ)
printf 'romio_cb_write enable\nromio_cb_read enable\n' >"$work/hints-cb"
printf 'romio_cb_write disable\nromio_cb_read disable\n' >"$work/hints-nocb"
printf 'romio_cb_write disable\nromio_cb_read disable\nromio_ds_write disable\nromio_ds_read disable\n' >"$work/hints-nods"

# mpiargs LAYER: mpirun's arguments that select an MPI-IO layer.
mpiargs() {
	case $1 in
	ompio) echo "--mca io ompio" ;;
	romio-cb) echo "--mca io romio321 -x ROMIO_HINTS=$work/hints-cb" ;;
	romio-nocb) echo "--mca io romio321 -x ROMIO_HINTS=$work/hints-nocb" ;;
	romio-nods) echo "--mca io romio321 -x ROMIO_HINTS=$work/hints-nods" ;;
	esac
}
layer=$indep

# disk: the emulated disks' seeks and lock revocations so far, summed over
# the I/O servers ("SEEKS REVOCATIONS"), or "NA NA" if the scrape fails: a
# missed scrape leaves a run's counts empty rather than stopping the stage.
disk() {
	local m
	m=$(curl -sf "http://$metrics/metrics") || { echo "NA NA"; return; }
	awk '
		/^pario_data_emulated_seeks_total/ { s += $NF }
		/^pario_data_emulated_lock_revocations_total/ { r += $NF }
		END { printf "%d %d\n", s, r }' <<<"$m"
}

# run STAGE CONFIG ARGS...: one pario bench run (one repetition) through the
# mount; prints CSV rows of its write (and read) MiB/s, each with the seeks
# and lock revocations of the whole run (only writes take locks).
run() {
	local stage=$1 config=$2
	shift 2
	local out before after
	before=$(disk)
	# shellcheck disable=SC2046
	out=$(nice -n 5 mpirun --allow-run-as-root --oversubscribe $(mpiargs "$layer") -np "$ranks" "$h5" bench -i 1 -o "$dir/f" "$@" 2>"$work/err") || {
		echo "hdf5-thesis: $config failed: $(tail -3 "$work/err")" >&2
		rm -f "$dir/f"
		return 0
	}
	rm -f "$dir/f"
	after=$(disk)
	awk -v st="$stage" -v c="$config" -v n="$ranks" -v rep="$rep" -v d="$date" -v r="$rate" -v sk="$seek" -v rv="$revoke" \
		-v before="$before" -v after="$after" '
		BEGIN {
			split(before, b, " "); split(after, a, " ")
			if (b[1] != "NA" && a[1] != "NA") { seeks = a[1] - b[1]; revs = a[2] - b[2] }
		}
		/^Summary of all tests:/ { s = 1; next }
		s && ($1 == "write" || $1 == "read") { printf "%s,%s,%s,%d,%d,%s,%s,%s,%s,%s,%s,%s\n", st, c, $1, n, rep, $4, r, d, sk, rv, seeks, revs }' <<<"$out"
}

header="stage,config,operation,ranks,rep,MiBps,disk_rate,date,disk_seek,lock_revoke,seeks,revocations"

# coll STAGE CONFIG ARGS...: run a collective configuration once per layer
# of -m, as CONFIG[layer].
coll() {
	local stage=$1 config=$2
	shift 2
	for layer in $layers; do
		run "$stage" "$config[$layer]" "$@"
	done
	layer=$indep
}

# Every pattern moves -P strips per rank (a multiple of 10), t = one strip.
patterns() {
	local s=$strip k=$perpattern
	local -A pat=(
		[1-OST]="-b $s -t $s -s $k"
		[disjoint]="-b $((k * $(bytes "$s"))) -t $s -s 1"
		[2-OST]="-b $((2 * $(bytes "$s"))) -t $s -s $((k / 2))"
		[5-OST]="-b $((5 * $(bytes "$s"))) -t $s -s $((k / 5))"
		[10-OST]="-b $((10 * $(bytes "$s"))) -t $s -s $((k / 10))"
	)
	local -A api=(
		[POSIX]="-a POSIX"
		[MPIIO]="-a MPIIO"
		[HDF5-ind]="-a HDF5 --hdf5.nofill --hdf5.setalignment $strip"
	)
	for rep in $(seq "$reps"); do
		for p in $patterns; do
			for a in POSIX MPIIO HDF5-ind; do
				# shellcheck disable=SC2086
				run patterns "$a/$p" ${api[$a]} ${pat[$p]} -w -r -e
			done
			# shellcheck disable=SC2086
			coll patterns "HDF5-coll/$p" -a HDF5 -c --hdf5.nofill --hdf5.setalignment "$strip" ${pat[$p]} -w -r -e
		done
	done
}

findings() {
	local s=$strip
	for rep in $(seq "$reps"); do
		# NetCDF-4 on the 1-OST pattern, without and with alignment.
		run findings nc4-unaligned -a NC4 --nc4.nofill -b "$s" -t "$s" -s 20 -w -r -e
		run findings nc4-aligned -a NC4 --nc4.nofill --nc4.setalignment "$s" -b "$s" -t "$s" -s 20 -w -r -e
		coll findings nc4-unaligned-coll -a NC4 -c --nc4.nofill -b "$s" -t "$s" -s 20 -w -e
		coll findings nc4-aligned-coll -a NC4 -c --nc4.nofill --nc4.setalignment "$s" -b "$s" -t "$s" -s 20 -w -e
		# An unlimited-only variable, one rank (one-byte chunks are slow:
		# 32 KiB, against the thesis' 10 MiB).
		local n=$ranks
		ranks=1
		run findings chunk-rule-original -a NC4 -c --nc4.unlimited --nc4.chunk-rule original -b 32k -t 32k -w -e
		run findings chunk-rule-thesis -a NC4 -c --nc4.unlimited --nc4.chunk-rule thesis -b 32k -t 32k -w -e
		ranks=$n
		# Fill values: each rank 8 MiB contiguous.
		run findings hdf5-nofill -a HDF5 --hdf5.nofill -b 8m -t 1m -w -e
		run findings hdf5-fill -a HDF5 --hdf5.fill -b 8m -t 1m -w -e
		run findings nc4-nofill -a NC4 --nc4.nofill -b 8m -t 1m -w -e
		run findings nc4-fill -a NC4 --nc4.fill -b 8m -t 1m -w -e
	done
}

rest() {
	for rep in $(seq "$reps"); do
		# Transfer sizes on the disjoint pattern, -B per rank
		# (the thesis: 128 KiB to 512 MiB; the transfers stage goes further).
		for t in $transfers; do
			run rest "transfer/POSIX/$t" -a POSIX -b "$perrank" -t "$t" -s 1 -w -r -e
			run rest "transfer/HDF5/$t" -a HDF5 --hdf5.nofill -b "$perrank" -t "$t" -s 1 -w -r -e
		done
		# Chunk sizes (HDF5, disjoint, 8 MiB per rank, 1 MiB transfers).
		for c in 64k 256k 1m 4m; do
			run rest "chunk/$c" -a HDF5 --hdf5.nofill --hdf5.chunksize "$c" -b 8m -t 1m -s 1 -w -r -e
		done
		# Collective vs independent, contiguous (aligned) and chunked (1-OST).
		run rest "contig/ind" -a HDF5 --hdf5.nofill --hdf5.setalignment "$strip" -b "$strip" -t "$strip" -s 20 -w -r -e
		coll rest "contig/coll" -a HDF5 -c --hdf5.nofill --hdf5.setalignment "$strip" -b "$strip" -t "$strip" -s 20 -w -r -e
		run rest "chunked/ind" -a HDF5 --hdf5.nofill --hdf5.chunksize "$strip" -b "$strip" -t "$strip" -s 20 -w -r -e
		coll rest "chunked/coll" -a HDF5 -c --hdf5.nofill --hdf5.chunksize "$strip" -b "$strip" -t "$strip" -s 20 -w -r -e
		# The fixed chunk rule at a size where open and close do not
		# dominate (the findings stage writes 32 KiB for both rules).
		local n=$ranks
		ranks=1
		run rest "chunk-rule-thesis/2m" -a NC4 -c --nc4.unlimited --nc4.chunk-rule thesis -b 2m -t 256k -w -e
		ranks=$n
	done
}

# Transfer sizes beyond the rest stage's: 4 ranks of -B bytes each on the
# disjoint pattern, POSIX, HDF5 independent and collective (the thesis'
# figure 4.5 is collective; its reads keep rising to 512 MiB).
transfers() {
	local n=$ranks
	ranks=4
	for rep in $(seq "$reps"); do
		for t in $transfers; do
			run transfers "POSIX/$t" -a POSIX -b "$perrank" -t "$t" -s 1 -w -r -e
			run transfers "HDF5-ind/$t" -a HDF5 --hdf5.nofill --hdf5.setalignment "$strip" -b "$perrank" -t "$t" -s 1 -w -r -e
			coll transfers "HDF5-coll/$t" -a HDF5 -c --hdf5.nofill --hdf5.setalignment "$strip" -b "$perrank" -t "$t" -s 1 -w -r -e
		done
	done
	ranks=$n
}

# The disjoint pattern in a two-dimensional dataset (the thesis' figure
# 4.8, appendix A.12: dimx 2k, dimy 100m, contiguous): rows of 1 MiB, each
# rank 5 of them in strip-sized transfers inside a row, beside the same
# bytes in one dimension.
twod() {
	local s=$strip b=$((20 * $(bytes "$strip")))
	for rep in $(seq "$reps"); do
		for d in 1-D 2-D; do
			local h5o=() nco=()
			if [ $d = 2-D ]; then
				h5o=(--hdf5.dimy 1m) nco=(--nc4.dimy 1m)
			fi
			run twod "HDF5-ind-aligned/$d" -a HDF5 --hdf5.nofill --hdf5.setalignment "$s" "${h5o[@]}" -b "$b" -t "$s" -s 1 -w -r -e
			run twod "NC4-ind-unaligned/$d" -a NC4 --nc4.nofill "${nco[@]}" -b "$b" -t "$s" -s 1 -w -r -e
			coll twod "HDF5-coll-unaligned/$d" -a HDF5 -c --hdf5.nofill "${h5o[@]}" -b "$b" -t "$s" -s 1 -w -r -e
			coll twod "HDF5-coll-aligned/$d" -a HDF5 -c --hdf5.nofill --hdf5.setalignment "$s" "${h5o[@]}" -b "$b" -t "$s" -s 1 -w -r -e
			coll twod "NC4-coll-unaligned/$d" -a NC4 -c --nc4.nofill "${nco[@]}" -b "$b" -t "$s" -s 1 -w -r -e
		done
	done
}

# An extendible dataset, grown before each write: HDF5 against NetCDF-4
# (the thesis: 257.9 against 52.4 MiB/s).
extendible() {
	for rep in $(seq "$reps"); do
		coll extendible HDF5 -a HDF5 -c --hdf5.nofill --hdf5.unlimited --hdf5.chunksize "$strip" -b "$strip" -t "$strip" -s 20 -w -e
		coll extendible NC4 -a NC4 -c --nc4.nofill --nc4.unlimited --nc4.chunksize "$strip" -b "$strip" -t "$strip" -s 20 -w -e
	done
}

# Figures 4.10 and 4.13: the 1-OST and 2-OST patterns (a block of one and
# of two strips), -P strips per rank, in transfers of one block (IOR's
# calls, no --strided) and of -K blocks (--strided: one call each).
bigt() {
	local s=$strip k=$perpattern p b segs t config
	local -A api=(
		[MPIIO-ind]="-a MPIIO"
		[HDF5-ind]="-a HDF5 --hdf5.nofill --hdf5.setalignment $strip"
	)
	for rep in $(seq "$reps"); do
		for p in $patterns; do
			case $p in
			1-OST) b=$(bytes "$s") ;;
			2-OST) b=$((2 * $(bytes "$s"))) ;;
			*) continue ;;
			esac
			segs=$((k * $(bytes "$s") / b))
			for t in "$b" "$((b * bigblocks))"; do
				local strided=()
				[ "$t" = "$b" ] || strided=(--strided)
				config="$p/t=$((t / b))b"
				for a in MPIIO-ind HDF5-ind; do
					# shellcheck disable=SC2086
					run bigt "$a/$config" ${api[$a]} "${strided[@]}" -b "$b" -t "$t" -s "$segs" -w -r -e
				done
				coll bigt "HDF5-coll/$config" -a HDF5 -c --hdf5.nofill --hdf5.setalignment "$s" "${strided[@]}" -b "$b" -t "$t" -s "$segs" -w -r -e
			done
		done
	done
}

# bytes SIZE: 1m -> 1048576.
bytes() {
	local v=${1%[kKmMgG]} u=${1: -1}
	case $u in
	k | K) echo $((v << 10)) ;;
	m | M) echo $((v << 20)) ;;
	g | G) echo $((v << 30)) ;;
	*) echo "$1" ;;
	esac
}

for st in $stages; do
	csv=docs/hdf5-$st.csv
	{
		echo "$header"
		$st
	} >"$csv.tmp"
	if [ "$(wc -l <"$csv.tmp")" -le 1 ]; then
		# Every run failed: keep the CSV of the last good run.
		echo "hdf5-thesis: every run of $st failed; $csv left as it was" >&2
		rm -f "$csv.tmp"
		continue
	fi
	mv "$csv.tmp" "$csv"
	bin/hdf5plot -in "$csv" -out "docs/hdf5-$st.png"
	echo "hdf5-thesis: wrote $csv and docs/hdf5-$st.png" >&2
done

#!/usr/bin/env bash
# hdf5-findings.sh: the HDF5/NetCDF-4 thesis' findings (seed 002) measured
# with pario bench's cgo back ends in one run, written as CSV:
#
#   alignment   NetCDF-4 on the 1-OST pattern, without and with
#               nc_set_alignment to the strip (thesis: write 477 -> 916 MiB/s);
#   chunk-rule  an unlimited-only NetCDF-4 variable with the original and
#               the fixed default chunk (thesis: 0.01 -> 746 MiB/s);
#   fill        HDF5 with fill values written at allocation and without
#               (the thesis claims half the write speed, unmeasured).
#
#   scripts/hdf5-findings.sh [-n ranks] [-i reps] [-d dir] [-o out.csv] [-S strip] [-m layer]
#
# -d is the directory written (default: a fresh temporary one). The
# alignment rows only mean something on striped storage whose strip is -S
# (default 1m): a pario mount whose directory has that layout (pario
# advise ... --apply, or pario layout set DIR -S 1m -c N), or Lustre with
# lfs setstripe -S 1m. Rates are each variant's mean over -i repetitions;
# compare rows of one run, not runs of different sessions. -m is the
# MPI-IO layer of every run, as in hdf5-thesis.sh: ompio (Open MPI's
# default, two-phase collective I/O), romio-cb (ROMIO, two-phase on) or
# romio-nocb (ROMIO, two-phase off: what the thesis ran).
set -euo pipefail
case "${1:-}" in -h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;; esac
cd "$(dirname "$0")/.."

ranks=4 reps=3 dir="" out=/dev/stdout strip=1m layer=ompio
while getopts n:i:d:o:S:m: opt; do
	case $opt in
	n) ranks=$OPTARG ;;
	i) reps=$OPTARG ;;
	d) dir=$OPTARG ;;
	o) out=$OPTARG ;;
	S) strip=$OPTARG ;;
	m) layer=$OPTARG ;;
	*) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" >&2; exit 2 ;;
	esac
done
for tool in mpirun h5dump; do
	command -v $tool >/dev/null || { echo "$tool not found: make deps (openmpi-bin, hdf5-tools)" >&2; exit 1; }
done
make -s build-hdf5
bin=$PWD/bin/pario-hdf5
hints=$(mktemp)
if [ -z "$dir" ]; then
	dir=$(mktemp -d)
	trap 'rm -rf "$dir" "$hints"' EXIT
else
	trap 'rm -f "$hints"' EXIT
fi
case $layer in
ompio) mpiargs=(--mca io ompio) ;;
romio-cb)
	printf 'romio_cb_write enable\nromio_cb_read enable\n' >"$hints"
	mpiargs=(--mca io romio321 -x "ROMIO_HINTS=$hints")
	;;
romio-nocb)
	printf 'romio_cb_write disable\nromio_cb_read disable\n' >"$hints"
	mpiargs=(--mca io romio321 -x "ROMIO_HINTS=$hints")
	;;
*) echo "hdf5-findings: unknown MPI-IO layer $layer (ompio, romio-cb, romio-nocb)" >&2; exit 2 ;;
esac

# bench VARIANT ARGS...: one pario bench run; prints the mean write (and
# read, with -r) MiB/s of its summary as CSV rows.
bench() {
	local finding=$1 variant=$2
	shift 2
	mpirun --allow-run-as-root --oversubscribe "${mpiargs[@]}" -np "$ranks" "$bin" bench -i "$reps" -o "$dir/f" "$@" |
		awk -v f="$finding" -v v="$variant" -v n="$ranks" '
			/^Summary of all tests:/ { s = 1; next }
			s && ($1 == "write" || $1 == "read") { printf "%s,%s,%s,%d,%s\n", f, v, $1, n, $4 }'
	rm -f "$dir/f"
}

{
	echo "finding,variant,operation,ranks,mean_MiBps"
	# The 1-OST pattern: each rank's turn is one strip.
	bench alignment unaligned -a NC4 -O noFill=1 -b "$strip" -t "$strip" -s 16 -w -r -e
	bench alignment aligned -a NC4 -O noFill=1,setAlignment="$strip" -b "$strip" -t "$strip" -s 16 -w -r -e
	bench alignment unaligned-collective -a NC4 -c -O noFill=1 -b "$strip" -t "$strip" -s 16 -w -e
	bench alignment aligned-collective -a NC4 -c -O noFill=1,setAlignment="$strip" -b "$strip" -t "$strip" -s 16 -w -e
	# One rank: the thesis' 10 MiB test, scaled to 256 KiB (one-byte
	# chunks write very slowly).
	ranks_saved=$ranks ranks=1
	bench chunk-rule original -a NC4 -c --nc4.unlimited --nc4.chunk-rule original -b 256k -t 256k -w
	bench chunk-rule thesis -a NC4 -c --nc4.unlimited --nc4.chunk-rule thesis -b 256k -t 256k -w
	ranks=$ranks_saved
	bench fill nofill -a HDF5 --hdf5.nofill -b 64m -t 1m -w -e
	bench fill fill-at-allocation -a HDF5 --hdf5.fill -b 64m -t 1m -w -e
} >"$out"

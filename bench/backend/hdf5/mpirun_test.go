//go:build hdf5

package hdf5_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pario/pario/bench"
	"github.com/pario/pario/internal/testbin"
	"github.com/pario/pario/internal/testenv"
)

// parioBin is pario built with the tag hdf5 (the cgo back ends).
var parioBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "pario-hdf5-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	parioBin = filepath.Join(dir, "pario")
	out, err := exec.Command("go", "build", "-tags", "hdf5", "-o", parioBin, "github.com/pario/pario/cmd/pario").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "go build -tags hdf5: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func need(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.SkipOrFail(t, "%s not found (Debian: apt-get install openmpi-bin hdf5-tools netcdf-bin)", tool)
		}
	}
}

const (
	ranks    = 2
	block    = 64 << 10
	transfer = 16 << 10
	segments = 4
	dataSize = ranks * block * segments
)

// mpirunBench writes (and reads back and verifies: -W -R) a file with
// pario bench under mpirun and returns its path.
func mpirunBench(t *testing.T, args ...string) string {
	t.Helper()
	path, _ := mpirunBenchOut(t, args...)
	return path
}

// mpirunBenchOut is mpirunBench that also returns what pario bench printed.
func mpirunBenchOut(t *testing.T, args ...string) (path, out string) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "test.dat")
	full := append([]string{"--allow-run-as-root", "--oversubscribe", "-np", strconv.Itoa(ranks), parioBin, "bench",
		"-b", strconv.Itoa(block), "-t", strconv.Itoa(transfer), "-s", strconv.Itoa(segments), "-w", "-r", "-W", "-R", "-k", "-o", path}, args...)
	cmd := exec.Command("mpirun", full...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("mpirun %s: %v\n%s\n%s", strings.Join(full, " "), err, stdout.String(), stderr.String())
	}
	if strings.Contains(stdout.String()+stderr.String(), "WARNING") {
		t.Errorf("warnings:\n%s\n%s", stdout.String(), stderr.String())
	}
	return path, stdout.String()
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// checkData checks the benchmark's stamps in the bytes of the dataset:
// one per 4 KiB, naming the offset and the rank that owns it.
func checkData(t *testing.T, data []byte) {
	t.Helper()
	checkBlocks(t, data, block, dataSize)
}

// checkBlocks is checkData for blocks of another size.
func checkBlocks(t *testing.T, data []byte, block, dataSize int) {
	t.Helper()
	if len(data) != dataSize {
		t.Fatalf("dataset holds %d bytes, want %d", len(data), dataSize)
	}
	for off := 0; off < len(data); off += 4096 {
		w := binary.LittleEndian.Uint64(data[off:])
		gotOff, gotRank, rep := bench.DecodeStamp(w)
		wantRank := (off / block) % ranks
		if gotOff != int64(off) || gotRank != wantRank || rep != 0 {
			t.Fatalf("stamp at %d says offset %d, rank %d, repetition %d; want %d, %d, 0", off, gotOff, gotRank, rep, off, wantRank)
		}
	}
}

// dumpData extracts /data with h5dump (NetCDF-4 files are HDF5 files).
func dumpData(t *testing.T, path string) []byte {
	t.Helper()
	out := filepath.Join(t.TempDir(), "data.bin")
	run(t, "h5dump", "-d", "/data", "-b", "LE", "-o", out, path)
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var offsetRE = regexp.MustCompile(`OFFSET (\d+)`)

// dataOffset is the address of /data's contiguous storage.
func dataOffset(t *testing.T, path string) int64 {
	t.Helper()
	out := run(t, "h5dump", "-p", "-H", "-d", "/data", path)
	m := offsetRE.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no OFFSET in h5dump -p -H:\n%s", out)
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	return n
}

func contains(t *testing.T, what, out string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(out, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, out)
		}
	}
}

func TestMPIIO(t *testing.T) {
	need(t, "mpirun")
	// An IOR hints file, named as IOR names it (camel case).
	hintsFile := filepath.Join(t.TempDir(), "hints")
	if err := os.WriteFile(hintsFile, []byte("# IOR hints\nIOR_HINT__MPI__romio_cb_write=enable\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"-a", "MPIIO"}, {"-a", "MPIIO", "-c", "--mpiio.hints", "romio_cb_write=enable"},
		{"-a", "MPIIO", "-c", "--mpiio.hintsFileName=" + hintsFile}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			path := mpirunBench(t, args...)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			checkData(t, b)
		})
	}
}

// --strided: a transfer of several blocks is one call of the API (one
// hyperslab; one file view), as the thesis' own benchmarks for its
// figures 4.10 and 4.13; the file holds the same bytes as IOR's pattern,
// and the header says how the calls were made.
func TestStridedCalls(t *testing.T) {
	need(t, "mpirun", "h5dump")
	for _, tc := range []struct {
		name   string
		args   []string
		header string
	}{
		{"HDF5 independent, two blocks a call", []string{"-a", "HDF5", "--strided", "-t", "128k"}, "one H5Dwrite / H5Dread of a hyperslab per transfer"},
		{"HDF5 collective, four blocks a call", []string{"-a", "HDF5", "-c", "--strided", "-t", "256k"}, "one H5Dwrite / H5Dread of a hyperslab per transfer"},
		{"HDF5 collective, unlimited", []string{"-a", "HDF5", "-c", "--hdf5.unlimited", "--hdf5.chunksize", "32k", "--strided", "-t", "128k"}, "of a hyperslab per transfer"},
		{"HDF5 2-D rows", []string{"-a", "HDF5", "--hdf5.dimy", "16k", "--strided", "-t", "128k"}, "one H5Dwrite / H5Dread per block (2-D)"},
		// Calls across block boundaries: 48k blocks in 64k calls, ranges
		// of 48k and 16k, then 32k and 32k (a union of hyperslabs).
		{"HDF5 collective, calls across blocks", []string{"-a", "HDF5", "-c", "--strided", "-b", "48k", "-t", "64k"}, "of a hyperslab per transfer"},
		{"MPIIO independent", []string{"-a", "MPIIO", "--strided", "-t", "128k"}, "a file view (MPI_File_set_view, collective) and one call per transfer"},
		{"MPIIO collective, calls across blocks", []string{"-a", "MPIIO", "-c", "--strided", "-b", "48k", "-t", "64k"}, "a file view"},
		{"MPIIO collective", []string{"-a", "MPIIO", "-c", "--strided", "-t", "256k"}, "a file view"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, out := mpirunBenchOut(t, tc.args...)
			contains(t, "pario bench", out, tc.header)
			b := block
			if slices.Contains(tc.args, "48k") {
				b = 48 << 10
			}
			data := dumpData
			if tc.args[1] == "MPIIO" {
				data = func(t *testing.T, path string) []byte {
					b, err := os.ReadFile(path)
					if err != nil {
						t.Fatal(err)
					}
					return b
				}
			}
			checkBlocks(t, data(t, path), b, ranks*b*segments)
		})
	}
}

func TestHDF5(t *testing.T) {
	need(t, "mpirun", "h5dump")
	cases := []struct {
		name   string
		args   []string
		header []string // in h5dump -p -H
		align  int64    // the data's address is a multiple of it
	}{
		{"contiguous independent", []string{"-a", "HDF5"},
			[]string{`DATASET "data"`, "H5T_STD_U8LE", "SIMPLE { ( 524288 ) / ( 524288 ) }", "CONTIGUOUS"}, 0},
		{"aligned, no fill", []string{"-a", "HDF5", "-O", "setAlignment=64k,noFill=1"},
			[]string{"CONTIGUOUS", "H5D_FILL_TIME_NEVER"}, 64 << 10},
		{"fill at allocation", []string{"-a", "HDF5", "--hdf5.fill"},
			[]string{"H5D_FILL_TIME_ALLOC"}, 0},
		{"chunked collective", []string{"-a", "HDF5", "-c", "-O", "chunkSize=64k"},
			[]string{"CHUNKED ( 65536 )"}, 0},
		{"unlimited", []string{"-a", "HDF5", "-c", "--hdf5.unlimited", "--hdf5.chunksize", "32k"},
			[]string{"SIMPLE { ( 524288 ) / ( H5S_UNLIMITED ) }", "CHUNKED ( 32768 )"}, 0},
		// The thesis' 2-D layout: transfers of whole rows, and inside rows.
		{"2-D rows of 16 KiB", []string{"-a", "HDF5", "--hdf5.dimy", "16k"},
			[]string{"SIMPLE { ( 32, 16384 ) / ( 32, 16384 ) }", "CONTIGUOUS"}, 0},
		{"2-D rows of 64 KiB, 2x32k chunks, unlimited", []string{"-a", "HDF5", "-c", "--hdf5.dimy", "64k", "--hdf5.unlimited",
			"--hdf5.chunkx", "2", "--hdf5.chunky", "32k"},
			[]string{"SIMPLE { ( 8, 65536 ) / ( H5S_UNLIMITED, 65536 ) }", "CHUNKED ( 2, 32768 )"}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := mpirunBench(t, tc.args...)
			contains(t, "h5dump -p -H", run(t, "h5dump", "-p", "-H", path), tc.header...)
			checkData(t, dumpData(t, path))
			if tc.align > 0 {
				if off := dataOffset(t, path); off%tc.align != 0 {
					t.Errorf("data at %d, not a multiple of %d", off, tc.align)
				}
			}
		})
	}
}

// NetCDF-4: the file opens in ncdump, and the thesis' first two findings
// show in it: without nc_set_alignment the data starts off the strip, and
// the chunk rule decides an unlimited-only variable's chunk.
func TestNC4(t *testing.T) {
	need(t, "mpirun", "h5dump", "ncdump")
	cases := []struct {
		name    string
		args    []string
		ncdump  []string // in ncdump -h -s
		aligned int      // 1: data on a 64 KiB boundary, -1: off it, 0: chunked
	}{
		{"contiguous independent", []string{"-a", "NC4", "-O", "noFill=1"},
			[]string{"x = 524288 ;", "ubyte data(x) ;", `data:_Storage = "contiguous"`, `data:_NoFill = "true"`}, -1},
		{"aligned collective", []string{"-a", "NC4", "-c", "-O", "setAlignment=64k"},
			[]string{`data:_Storage = "contiguous"`}, 1},
		{"unlimited, thesis' chunk rule", []string{"-a", "NC4", "-c", "--nc4.unlimited", "--nc4.chunk-rule", "thesis"},
			[]string{"x = UNLIMITED ; // (524288 currently)", "data:_ChunkSizes = 4194304 ;"}, 0},
		{"chunked", []string{"-a", "NC4", "--nc4.chunksize", "64k"},
			[]string{"data:_ChunkSizes = 65536 ;"}, 0},
		{"2-D rows of 16 KiB", []string{"-a", "NC4", "--nc4.dimy", "16k"},
			[]string{"x = 32 ;", "y = 16384 ;", "ubyte data(x, y) ;"}, 0},
		{"2-D unlimited, 2x32k chunks", []string{"-a", "NC4", "-c", "--nc4.unlimited", "--nc4.dimy", "64k", "--nc4.chunkx", "2", "--nc4.chunky", "32k"},
			[]string{"x = UNLIMITED ; // (8 currently)", "y = 65536 ;", "data:_ChunkSizes = 2, 32768 ;"}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := mpirunBench(t, tc.args...)
			contains(t, "ncdump -h -s", run(t, "ncdump", "-h", "-s", path), tc.ncdump...)
			checkData(t, dumpData(t, path))
			switch off := int64(0); tc.aligned {
			case 1:
				if off = dataOffset(t, path); off%(64<<10) != 0 {
					t.Errorf("aligned: data at %d", off)
				}
			case -1:
				if off = dataOffset(t, path); off%(64<<10) == 0 {
					t.Errorf("NetCDF-4 without alignment put the data at %d, on a strip boundary; the finding needs it off", off)
				}
			}
		})
	}
}

// The original 4.3 rule gives an unlimited-only variable one-byte chunks:
// a small write, since each byte is a chunk.
func TestNC4OriginalChunkRule(t *testing.T) {
	need(t, "mpirun", "ncdump")
	path := filepath.Join(t.TempDir(), "orig.nc")
	out, err := exec.Command("mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "1", parioBin, "bench",
		"-a", "NC4", "-c", "--nc4.unlimited", "--nc4.chunk-rule", "original", "-b", "8k", "-t", "8k", "-w", "-k", "-o", path).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	contains(t, "ncdump -h -s", run(t, "ncdump", "-h", "-s", path), "x = UNLIMITED ; // (8192 currently)", "data:_ChunkSizes = 1 ;")
}

// Bad input gets a clear error: ranks that are not MPI's, an unknown
// chunk rule, a chunk larger than the dataset, a file that is not HDF5.
func TestBadInput(t *testing.T) {
	need(t, "mpirun")
	dir := t.TempDir()
	badHints := filepath.Join(dir, "bad-hints")
	if err := os.WriteFile(badHints, []byte("IOR_HINT__MPI__romio_cb_write=enable\nIOR_HINT__MPI__cb_nodes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-a", "HDF5", "-N", "2"}, "run the ranks under mpirun -np 2"},
		{[]string{"-a", "NC4", "--nc4.unlimited", "-c", "--nc4.chunk-rule", "best"}, `--nc4.chunk-rule "best": want library, original or thesis`},
		{[]string{"-a", "HDF5", "--hdf5.chunksize", "4m"}, "--hdf5.chunksize 4194304 is larger than the dataset's 1048576 bytes"},
		{[]string{"-a", "NC4", "--nc4.unlimited"}, "--nc4.unlimited needs --nc4.collective"},
		{[]string{"-a", "HDF5", "--hdf5.dimy", "96k"}, "--hdf5.dimy 98304 does not divide the dataset's 1048576 bytes"},
		{[]string{"-a", "HDF5", "--hdf5.dimy", "128k", "--hdf5.chunky", "1k"}, "--hdf5.chunkx and --hdf5.chunky go together"},
		{[]string{"-a", "HDF5", "--hdf5.chunkx", "2", "--hdf5.chunky", "1k"}, "need --hdf5.dimy"},
		// HDF5's own limits, refused before the file is made (they were
		// "H5Pset_chunk failed", exit status 1, after the open), and a
		// product of chunkx and chunky past int64 (it wrapped to 0: "needs
		// --hdf5.chunksize").
		{[]string{"-a", "HDF5", "-b", "8g", "--hdf5.chunksize", "4g"}, "--hdf5.chunksize 4294967296: HDF5 chunks must be under 4 GiB"},
		{[]string{"-a", "NC4", "-b", "8g", "--nc4.chunksize", "5g"}, "--nc4.chunksize 5368709120: HDF5 chunks must be under 4 GiB"},
		{[]string{"-a", "HDF5", "-c", "--hdf5.unlimited", "--hdf5.dimy", "1k", "--hdf5.chunkx", "4611686018427387904", "--hdf5.chunky", "4"},
			"--hdf5.chunkx 4611686018427387904 x --hdf5.chunky 4: HDF5 chunks must be under 4 GiB"},
		// A hint that is not key=value was dropped without a word.
		{[]string{"-a", "MPIIO", "--mpiio.hints", "romio_cb_write=enable,cb_nodes"}, `--mpiio.hints "romio_cb_write=enable,cb_nodes": "cb_nodes" is not key=value`},
		{[]string{"-a", "NC4", "-O", "hints=garbage"}, `--nc4.hints "garbage": "garbage" is not key=value`},
		{[]string{"-a", "HDF5", "--hdf5.hints", "=enable"}, `--hdf5.hints "=enable": "=enable" has no key`},
		// IOR warned about a hints file it could not read, and ran without
		// its hints.
		{[]string{"-a", "MPIIO", "--mpiio.hintsFileName", filepath.Join(dir, "missing")}, "--mpiio.hintsfilename: open " + filepath.Join(dir, "missing") + ": no such file or directory"},
		{[]string{"-a", "HDF5", "-O", "hintsFileName=" + badHints}, "--hdf5.hintsfilename: " + badHints + `:2: "IOR_HINT__MPI__cb_nodes": want IOR_HINT__MPI__key=value`},
	} {
		out, code := testbin.Run(t, exec.Command(parioBin, append([]string{"bench", "-b", "1m", "-t", "256k", "-w", "-o", filepath.Join(dir, "f")}, tc.args...)...))
		want := 2 // a mistake in the call
		if tc.args[len(tc.args)-1] == "2" && tc.args[len(tc.args)-2] == "-N" {
			want = 1 // found by the ranks once MPI has started
		}
		if code != want || !strings.Contains(out, tc.want) {
			t.Errorf("pario bench %s: exit status %d, output %q; want %d and an error containing %q", strings.Join(tc.args, " "), code, out, want, tc.want)
		}
	}
	// The library's reason is in the error, not only the call that
	// failed ("H5Fcreate failed").
	out, err := exec.Command(parioBin, "bench", "-a", "HDF5", "-b", "1m", "-t", "256k", "-w", "-o", filepath.Join(dir, "none", "f")).CombinedOutput()
	if want := "H5Fcreate failed: MPI_File_open failed: MPI error string is 'MPI_ERR_NO_SUCH_FILE: no such file or directory'"; err == nil || !strings.Contains(string(out), want) {
		t.Errorf("writing into a directory that is not there: %v\n%s\nwant %q", err, out, want)
	}
	// Reading a file that is not HDF5.
	bad := filepath.Join(dir, "not.h5")
	if err := os.WriteFile(bad, bytes.Repeat([]byte("x"), 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = exec.Command("mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "1", parioBin, "bench", "-a", "HDF5",
		"-b", "1m", "-t", "256k", "-r", "-o", bad).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "H5Fopen failed: file signature not found") {
		t.Errorf("reading a file that is not HDF5: %v\n%s", err, out)
	}
}

// pario advise --file reads the dataset through the library: the
// unaligned NetCDF-4 file gets the alignment advice with the data's real
// address; the aligned HDF5 one does not. Bad input: a variable the file
// does not have, a file that is not HDF5.
func TestAdviseFile(t *testing.T) {
	need(t, "mpirun")
	nc := mpirunBench(t, "-a", "NC4", "-O", "noFill=1")
	h5 := mpirunBench(t, "-a", "HDF5", "-O", "setAlignment=64k,noFill=1")
	target := []string{"--ranks", "2", "--pattern", "interleaved", "--block", "64k", "--transfer", "16k", "--strip-size", "64k", "--stripe-count", "2"}
	out := run(t, parioBin, append([]string{"advise", "--file", nc}, target...)...)
	contains(t, "advise --file (NetCDF-4)", out, "access:  netcdf4 dataset 524288 of byte", "(read from the file)", "* 1. alignment", "nc_set_alignment(0, 65536)")
	out = run(t, parioBin, append([]string{"advise", "--file", h5, "--var", "data"}, target...)...)
	contains(t, "advise --file (HDF5)", out, "access:  hdf5 dataset 524288 of byte", "advice:  keep: the data starts on a strip boundary")

	bad := filepath.Join(t.TempDir(), "not.h5")
	if err := os.WriteFile(bad, []byte("not HDF5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--file", nc, "--var", "temperature"}, `--var: ` + nc + ` has no dataset "temperature" (it has: data, x)`},
		{[]string{"--file", bad}, "not.h5: not an HDF5 or NetCDF-4 file"},
		{[]string{"--file", nc, "--dims", "4"}, "--dims comes from --file"},
	} {
		out, err := exec.Command(parioBin, append([]string{"advise"}, tc.args...)...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), tc.want) {
			t.Errorf("pario advise %s: %v, %q; want an error containing %q", strings.Join(tc.args, " "), err, out, tc.want)
		}
	}
}

// A stonewalling deadline (-D) with collective calls: the ranks stop
// after the same transfer (they agree after each one, as IOR broadcasts
// its decision), where ranks stopping on their own clocks left the others
// in a collective call for ever (4 of 10 runs hung before).
func TestStonewallWithCollectiveCalls(t *testing.T) {
	need(t, "mpirun")
	for _, args := range [][]string{
		{"-a", "HDF5", "-c", "-t", "16k"},
		{"-a", "MPIIO", "--strided", "-t", "32k"},
	} {
		for i := range 3 {
			path := filepath.Join(t.TempDir(), "sw.dat")
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			full := append([]string{"--allow-run-as-root", "--oversubscribe", "-np", strconv.Itoa(ranks), parioBin, "bench",
				"-D", "1", "-b", "512m", "-w", "-o", path}, args...)
			out, err := exec.CommandContext(ctx, "mpirun", full...).CombinedOutput()
			hung := ctx.Err() != nil
			cancel()
			if hung {
				t.Fatalf("run %d of %s hung past 60 s with a 1 s deadline:\n%s", i, strings.Join(args, " "), out)
			}
			if err != nil || !strings.Contains(string(out), "\nwrite ") {
				t.Fatalf("run %d of %s: %v\n%s", i, strings.Join(args, " "), err, out)
			}
		}
	}
}

// pario advise --file on what is not a regular file is refused at once
// as a mistake in the call (exit status 2) naming it: a named pipe held
// the reader for its whole minute ("a damaged file?"), a directory was
// "not an HDF5 or NetCDF-4 file". A file that is not there is an error
// (status 1) naming --file.
func TestAdviseFileNotRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.nc")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	// An empty file and a NetCDF classic one are no HDF5 files either
	// (they were "not an HDF5 or NetCDF-4 file", exit status 1, without
	// --file or why).
	empty, classic := filepath.Join(dir, "empty.nc"), filepath.Join(dir, "classic.nc")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(classic, append([]byte("CDF\x02"), make([]byte, 60)...), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		code int
		want string
	}{
		{empty, 2, "pario: --file " + empty + ": is empty: not an HDF5 or NetCDF-4 file"},
		{classic, 2, "pario: --file " + classic + ": is a NetCDF classic file (CDF-2), not NetCDF-4 (nccopy -k nc4 converts it)"},
		{fifo, 2, "pario: --file " + fifo + ": is not a regular file (a named pipe)"},
		{dir, 2, "pario: --file " + dir + ": is a directory"},
		{filepath.Join(dir, "nope.nc"), 1, "pario: --file " + filepath.Join(dir, "nope.nc") + ": no such file or directory"},
	} {
		start := time.Now()
		out, code := testbin.Run(t, exec.Command(parioBin, "advise", "--file", tc.path, "--transfer", "16k"))
		if code != tc.code || !strings.HasPrefix(out, tc.want) || strings.Count(out, "\n") != 1 {
			t.Errorf("pario advise --file %s: exit %d, %q; want exit %d and one line starting %q", tc.path, code, out, tc.code, tc.want)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("pario advise --file %s took %v", tc.path, d)
		}
	}
}

// pario advise --file reads fill values as on when HDF5 writes them at
// allocation: NetCDF-4 always defines a fill value (fill time IFSET with
// a user-defined value), so its files are filled unless written with
// noFill; HDF5's default (IFSET with the library's value) writes none,
// fill=1 (ALLOC) does. Before, only ALLOC counted: the NetCDF-4 file
// with fill on, the thesis' case, was advised "keep off".
func TestAdviseFileFill(t *testing.T) {
	need(t, "mpirun")
	target := []string{"--ranks", "2", "--pattern", "interleaved", "--block", "64k", "--transfer", "16k", "--strip-size", "64k", "--stripe-count", "2"}
	for _, tc := range []struct {
		bench []string
		want  string
	}{
		{[]string{"-a", "NC4"}, "* 3. fill values    now:     on (read from the file: fill time ifset, a user-defined fill value)\n                    advice:  off: nc_def_var_fill(ncid, varid, NC_NOFILL, NULL)"},
		{[]string{"-a", "NC4", "-O", "noFill=1"}, "  3. fill values    now:     off (read from the file: fill time never, the library's default fill value)\n                    advice:  keep off"},
		{[]string{"-a", "HDF5"}, "  3. fill values    now:     off (read from the file: fill time ifset, the library's default fill value)\n                    advice:  keep off"},
		{[]string{"-a", "HDF5", "-O", "fill=1"}, "* 3. fill values    now:     on (read from the file: fill time alloc, "},
		{[]string{"-a", "HDF5", "-O", "noFill=1"}, "  3. fill values    now:     off (read from the file: fill time never, "},
	} {
		path := mpirunBench(t, tc.bench...)
		out := run(t, parioBin, append([]string{"advise", "--file", path}, target...)...)
		contains(t, "advise --file (bench "+strings.Join(tc.bench, " ")+")", out, tc.want)
	}
}

// ncgenFile writes a NetCDF-4 file from CDL text with ncgen.
func ncgenFile(t *testing.T, cdl string) string {
	t.Helper()
	need(t, "ncgen")
	dir := t.TempDir()
	src, nc := filepath.Join(dir, "f.cdl"), filepath.Join(dir, "f.nc")
	if err := os.WriteFile(src, []byte(cdl), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, "ncgen", "-k", "nc4", "-o", nc, src)
	return nc
}

// pario advise --file refuses a variable whose elements are no
// fixed-size numbers, naming it and its type: a NetCDF-4 string variable
// (8-byte pointers) was advised as "1024 of double". Numbers, enums and
// chars are advised with their own type names.
func TestAdviseFileTypes(t *testing.T) {
	nc := ncgenFile(t, `netcdf t {
types:
  compound cmp { int a ; int b ; } ;
  byte enum color { RED = 0, GREEN = 1 } ;
dimensions:
  x = 1024 ;
variables:
  string s(x) ;
  cmp c(x) ;
  color e(x) ;
  char ch(x) ;
  float f(x) ;
}`)
	for _, tc := range []struct {
		v    string
		code int
		want string
	}{
		{"s", 2, `pario: advise: invalid access description: ` + nc + `: dataset "s" has a variable-length string type`},
		{"c", 2, `pario: advise: invalid access description: ` + nc + `: dataset "c" has a compound type`},
		{"e", 0, "access:  netcdf4 dataset 1024 of byte (1.0 KiB)"},
		{"ch", 0, "access:  netcdf4 dataset 1024 of char (1.0 KiB)"},
		{"f", 0, "access:  netcdf4 dataset 1024 of float (4.0 KiB)"},
	} {
		out, code := testbin.Run(t, exec.Command(parioBin, "advise", "--file", nc, "--var", tc.v, "--transfer", "1k"))
		if code != tc.code || !strings.HasPrefix(out, tc.want) {
			t.Errorf("pario advise --file %s --var %s: exit %d, %q; want exit %d and %q", nc, tc.v, code, out, tc.code, tc.want)
		}
	}
}

// pario advise --file --var takes a variable in a NetCDF-4 group by its
// path, with or without the leading slash ("has no dataset" before), and
// lists group variables by path when the name is not there.
func TestAdviseFileGroups(t *testing.T) {
	nc := ncgenFile(t, `netcdf g {
dimensions:
  x = 1024 ;
variables:
  double d(x) ;
group: sub {
  variables:
    short inner(x) ;
  }
}`)
	for _, v := range []string{"sub/inner", "/sub/inner"} {
		out := run(t, parioBin, "advise", "--file", nc, "--var", v, "--transfer", "1k")
		contains(t, "advise --file --var "+v, out, "access:  netcdf4 dataset 1024 of short (2.0 KiB)")
	}
	out, code := testbin.Run(t, exec.Command(parioBin, "advise", "--file", nc, "--var", "inner", "--transfer", "1k"))
	if want := `pario: --var: ` + nc + ` has no dataset "inner" (it has: d, sub/inner, x)`; code != 2 || !strings.HasPrefix(out, want) {
		t.Errorf("advise --var inner: exit %d, %q; want exit 2 and %q", code, out, want)
	}
	// Without --var: the only variable, in a group.
	only := ncgenFile(t, `netcdf g {
dimensions:
  x = 1024 ;
group: sub {
  variables:
    int inner(x) ;
  }
}`)
	out = run(t, parioBin, "advise", "--file", only, "--transfer", "1k")
	contains(t, "advise --file (one variable, in a group)", out, "access:  netcdf4 dataset 1024 of int (4.0 KiB)")
}

//go:build hdf5

package hdf5_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pario/pario/internal/testbin"
)

// TestAdviseDamagedFiles feeds pario advise --file what is not a whole
// HDF5 file: garbage, real HDF5 and NetCDF-4 files cut short, and real
// files with a stretch of bytes overwritten. Each ends in exit status 1
// and one line naming the file and saying what is wrong, or (an overwrite
// the reader never looks at) in advice; never in a crash report. Parts of
// the HDF5 library (1.10.8 among them) die of a segmentation fault on a
// damaged root group, so pario reads files in a child process.
func TestAdviseDamagedFiles(t *testing.T) {
	need(t, "mpirun")
	real := map[string][]byte{}
	for name, args := range map[string][]string{
		"hdf5.h5": {"-a", "HDF5", "-O", "noFill=1,chunkSize=16k"},
		"nc4.nc":  {"-a", "NC4", "-O", "noFill=1"},
	} {
		b, err := os.ReadFile(mpirunBench(t, args...))
		if err != nil {
			t.Fatal(err)
		}
		real[name] = b
	}
	// The whole files are read.
	dir := t.TempDir()
	target := []string{"--ranks", "2", "--pattern", "interleaved", "--block", "64k", "--transfer", "16k", "--strip-size", "64k", "--stripe-count", "2"}
	advise := func(path string) (string, int) {
		t.Helper()
		return testbin.Run(t, exec.Command(parioBin, append([]string{"advise", "--file", path}, target...)...))
	}
	write := func(name string, b []byte) string {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	// refused checks a clear refusal: status 1, one line "pario: PATH:
	// ..." with want in it.
	refused := func(what, path, out string, code int, want string) {
		t.Helper()
		if code != 1 || strings.Count(out, "\n") != 1 || !strings.HasPrefix(out, "pario: "+path+": ") || !strings.Contains(out, want) {
			t.Errorf("%s: exit %d, output %q; want exit 1 and one line \"pario: %s: ...\" containing %q", what, code, out, path, want)
		}
	}
	for name, b := range real {
		out, code := advise(write(name, b))
		if code != 0 || !strings.Contains(out, "access:  ") {
			t.Fatalf("the whole %s: exit %d:\n%s", name, code, out)
		}
	}

	// Garbage.
	rng := rand.New(rand.NewPCG(1, 2))
	noise := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	signature := []byte("\x89HDF\r\n\x1a\n")
	for _, tc := range []struct {
		name string
		b    []byte
		want string
	}{
		// An empty file and NetCDF's classic format ("CDF\x01") are
		// mistakes in the call (TestAdviseFileNotRegular).
		{"one-byte", []byte{0x89}, "not an HDF5 or NetCDF-4 file"},
		{"text", []byte("CDF\x09 not HDF5 at all\n"), "not an HDF5 or NetCDF-4 file"},
		{"half-signature", signature[:4], "not an HDF5 or NetCDF-4 file"},
		{"noise", noise(1 << 20), "not an HDF5 or NetCDF-4 file"},
		{"signature", signature, "a damaged or truncated HDF5 file"},
		{"signature-noise", append(append([]byte{}, signature...), noise(4096)...), "a damaged or truncated HDF5 file"},
	} {
		path := write(tc.name, tc.b)
		out, code := advise(path)
		refused(tc.name, path, out, code, tc.want)
	}
	// A directory is a mistake in the call (TestAdviseFileNotRegular).
	if out, code := advise(dir); code != 2 || out != "pario: --file "+dir+": is a directory; want an HDF5 or NetCDF-4 file\n" {
		t.Errorf("a directory: exit %d, output %q; want exit 2 and --file %s: is a directory", code, out, dir)
	}

	for _, name := range []string{"hdf5.h5", "nc4.nc"} {
		b := real[name]
		// Cut short: before the signature ends the file is not HDF5;
		// after the superblock the library says how much is missing.
		for _, n := range []int{1, 7, 8, 16, 64, 512, 4096, len(b) / 2, len(b) - 1} {
			path := write(fmt.Sprintf("%s.%d", name, n), b[:n])
			out, code := advise(path)
			want := "not an HDF5 or NetCDF-4 file"
			switch {
			case n >= 512:
				want = fmt.Sprintf("a damaged or truncated HDF5 file: the library cannot open it (truncated file: eof = %d,", n)
			case n >= len(signature):
				want = "a damaged or truncated HDF5 file"
			}
			refused(fmt.Sprintf("%s cut to %d bytes", name, n), path, out, code, want)
		}
		// Overwritten: 48 bytes of 0xff every 64 bytes over the first
		// KiB (the superblock, the root group's header, B-tree and
		// heap), the rest of the file whole.
		advised, crashed := 0, 0
		for off := 0; off < 1024; off += 64 {
			d := bytes.Clone(b)
			copy(d[off:], bytes.Repeat([]byte{0xff}, 48))
			path := write(fmt.Sprintf("%s.ff%d", name, off), d)
			out, code := advise(path)
			if code == 0 && strings.HasPrefix(out, "access:  ") {
				advised++
				continue
			}
			if strings.Contains(out, "the HDF5 library crashed") {
				crashed++
			}
			refused(fmt.Sprintf("%s with bytes %d-%d overwritten", name, off, off+47), path, out, code, "")
		}
		t.Logf("%s overwritten at 16 places: %d advised, %d refused (%d of them crashing the library in the child)", name, advised, 16-advised, crashed)
	}
}

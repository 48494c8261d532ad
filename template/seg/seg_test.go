package seg

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
)

func extents(t *testing.T, fn Func, data string, pmin, pmax int64) []int64 {
	t.Helper()
	segs, err := All(fn, strings.NewReader(data), pmin, pmax)
	if err != nil {
		t.Fatal(err)
	}
	var out []int64
	for _, s := range segs {
		out = append(out, s.Extent)
	}
	return out
}

func eq(a, b []int64) bool { return slices.Equal(a, b) }

func TestBuiltins(t *testing.T) {
	fasta := ">a x\nACGT\nAC\n>b\nGG\n>c\n"
	for _, tc := range []struct {
		name       string
		fn         Func
		data       string
		pmin, pmax int64
		want       []int64
	}{
		{"fixed", Fixed(4), "0123456789", 0, 10, []int64{4, 4, 2}},
		{"fixed part", Fixed(4), "0123456789", 3, 9, []int64{4, 2}},
		{"lines", Lines, "ab\nc\n\nlast", 0, 10, []int64{3, 2, 1, 4}},
		{"lines past eof", Lines, "ab\n", 0, 100, []int64{3}},
		{"lines part", Lines, "ab\ncd\nef\n", 3, 9, []int64{3, 3}},
		{"fasta", FASTA, fasta, 0, int64(len(fasta)), []int64{13, 6, 3}},
		{"fasta gt inside line", FASTA, ">a\nA>C\n>b\n", 0, 10, []int64{7, 3}},
		{"lenprefix", LenPrefix32, "\x02\x00\x00\x00ab\x00\x00\x00\x00\x01\x00\x00\x00z", 0, 15, []int64{6, 4, 5}},
	} {
		if got := extents(t, tc.fn, tc.data, tc.pmin, tc.pmax); !eq(got, tc.want) {
			t.Errorf("%s: extents %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		fn   Func
		data string
		want string
	}{
		{"fasta no header", FASTA, "ACGT\n>a\n", "starts with '>'"},
		{"lenprefix short header", LenPrefix32, "\x02\x00", "2 bytes of a 4-byte length"},
		{"lenprefix truncated", LenPrefix32, "\x09\x00\x00\x00ab", "runs past the end"},
		{"fixed zero", Fixed(0), "ab", "not positive"},
	} {
		_, err := All(tc.fn, strings.NewReader(tc.data), 0, int64(len(tc.data)))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestRecordsWhole: for random record files, every built-in cuts exactly
// the records that were written, whatever their sizes (across chunk
// boundaries too).
func TestRecordsWhole(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := range 20 {
		var lines, fasta, lp bytes.Buffer
		var lineExt, fastaExt, lpExt []int64
		for range 1 + rng.IntN(40) {
			n := rng.IntN(3 * maxChunk / 2)
			if iter%2 == 0 {
				n = rng.IntN(50)
			}
			body := bytes.Repeat([]byte{'A' + byte(rng.IntN(4))}, n)
			lines.Write(body)
			lines.WriteByte('\n')
			lineExt = append(lineExt, int64(n+1))
			rec := append([]byte(">h\n"), body...)
			rec = append(rec, '\n')
			fasta.Write(rec)
			fastaExt = append(fastaExt, int64(len(rec)))
			binary.Write(&lp, binary.LittleEndian, uint32(n))
			lp.Write(body)
			lpExt = append(lpExt, int64(n+4))
		}
		for _, c := range []struct {
			fn   Func
			data []byte
			want []int64
		}{{Lines, lines.Bytes(), lineExt}, {FASTA, fasta.Bytes(), fastaExt}, {LenPrefix32, lp.Bytes(), lpExt}} {
			if got := extents(t, c.fn, string(c.data), 0, int64(len(c.data))); !eq(got, c.want) {
				t.Fatalf("iteration %d: extents %v, want %v", iter, got, c.want)
			}
		}
	}
}

func TestRegistry(t *testing.T) {
	for _, n := range []string{"Lines", "FASTA", "LenPrefix32"} {
		if _, err := Lookup(n); err != nil {
			t.Error(err)
		}
	}
	if _, err := Lookup("BSize"); err == nil || !strings.Contains(err.Error(), `"BSize"`) {
		t.Errorf("Lookup(BSize) = %v", err)
	}
	if err := Register("TestOnly", Fixed(1)); err != nil {
		t.Fatal(err)
	}
	if err := Register("TestOnly", Fixed(1)); err == nil {
		t.Error("registered a name twice")
	}
}

// FuzzBuiltins: on any bytes and any part, no built-in panics, and the
// segments they cut tile the part from its start without overlap.
func FuzzBuiltins(f *testing.F) {
	f.Add([]byte(">a\nAC\n>b\nG\n"), uint8(0), uint8(11))
	f.Add([]byte("ab\ncd\n\nlast"), uint8(3), uint8(200))
	f.Add([]byte("\x02\x00\x00\x00ab\xff\xff\xff\xff"), uint8(0), uint8(12))
	f.Fuzz(func(t *testing.T, data []byte, lo, hi uint8) {
		pmin, pmax := int64(lo), int64(hi)
		if pmin > pmax {
			pmin, pmax = pmax, pmin
		}
		for name, fn := range map[string]Func{"Lines": Lines, "FASTA": FASTA, "LenPrefix32": LenPrefix32, "Fixed3": Fixed(3)} {
			segs, err := All(fn, bytes.NewReader(data), pmin, pmax)
			if err != nil && strings.Contains(err.Error(), "leaves") {
				t.Fatalf("%s: %v", name, err)
			}
			at := pmin
			for _, s := range segs {
				if s.Base != at || s.Extent <= 0 || s.Base+s.Extent > pmax {
					t.Fatalf("%s: segment %+v after offset %d in [%d, %d)", name, s, at, pmin, pmax)
				}
				at += s.Extent
			}
		}
	})
}

// TestSmallRecordsReadLittle: cutting a file of small records reads (and
// allocates) about a record's worth per call, not 64 KiB: the parent calls
// the function once per record, and with 64 KiB a call a 64 MiB file of
// 340-byte records took 10 s to cut instead of 0.3 s.
func TestSmallRecordsReadLittle(t *testing.T) {
	var b bytes.Buffer
	for i := range 2000 {
		fmt.Fprintf(&b, ">r%d\n%s\n", i, bytes.Repeat([]byte("ACGT"), 80))
	}
	r := &countingReader{r: bytes.NewReader(b.Bytes())}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	segs, err := All(FASTA, r, 0, int64(b.Len()))
	runtime.ReadMemStats(&after)
	if err != nil || len(segs) != 2000 {
		t.Fatalf("%d segments, %v", len(segs), err)
	}
	perRecord := func(n uint64) uint64 { return n / uint64(len(segs)) }
	if got := perRecord(uint64(r.n)); got > 4<<10 {
		t.Errorf("read %d bytes per record of %d bytes", got, b.Len()/len(segs))
	}
	if got := perRecord(after.TotalAlloc - before.TotalAlloc); got > 8<<10 {
		t.Errorf("allocated %d bytes per record of %d bytes", got, b.Len()/len(segs))
	}
}

type countingReader struct {
	r io.ReaderAt
	n int64
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.n += int64(n)
	return n, err
}

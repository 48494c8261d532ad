package client_test

import (
	"bytes"
	"context"
	"io"
	"strconv"
	"testing"

	"github.com/pario/pario/client"
	"github.com/pario/pario/dist"
	"pgregory.net/rapid"
)

// TestReadAtMatchesModel: reads of any size at any offset (across strip
// boundaries, past the end, over holes, large enough to go out as several
// requests per server) return what a plain byte slice holding the same
// writes returns, under small and large strips.
func TestReadAtMatchesModel(t *testing.T) {
	c := startEmbedded(t)
	ctx := context.Background()
	n := 0
	rapid.Check(t, func(t *rapid.T) {
		n++
		strip := rapid.SampledFrom([]int{1000, 4096, 65536, 100000, 1 << 20}).Draw(t, "strip")
		l, err := dist.ParseLayout("simple_stripe:strip_size=" + strconv.Itoa(strip))
		if err != nil {
			t.Fatal(err)
		}
		f, err := c.Create(ctx, "/model"+strconv.Itoa(n), client.CreateOptions{Mode: 0o644, Layout: l})
		if err != nil {
			t.Fatal(err)
		}
		var model []byte
		// Writes with gaps between them leave holes; the file may stay
		// stuffed (short) or span every server.
		for i := rapid.IntRange(0, 4).Draw(t, "writes"); i > 0; i-- {
			off := rapid.IntRange(0, 3<<20).Draw(t, "woff")
			data := make([]byte, rapid.IntRange(1, 1<<20).Draw(t, "wlen"))
			for j := range data {
				data[j] = byte(j*31 + off + 1)
			}
			if _, err := f.WriteAtContext(ctx, data, int64(off)); err != nil {
				t.Fatal(err)
			}
			if end := off + len(data); end > len(model) {
				model = append(model, make([]byte, end-len(model))...)
			}
			copy(model[off:], data)
		}
		for i := rapid.IntRange(1, 6).Draw(t, "reads"); i > 0; i-- {
			off := rapid.IntRange(0, len(model)+100).Draw(t, "roff")
			p := make([]byte, rapid.IntRange(1, 3<<20).Draw(t, "rlen"))
			for j := range p {
				p[j] = 0xee // a read must overwrite every byte it returns
			}
			got, err := f.ReadAtContext(ctx, p, int64(off))
			want := 0
			if off < len(model) {
				want = copy(make([]byte, len(p)), model[off:])
			}
			if got != want {
				t.Fatalf("ReadAt(%d bytes at %d) of a %d-byte file = %d, %v; want %d", len(p), off, len(model), got, err, want)
			}
			if want < len(p) && err != io.EOF || want == len(p) && err != nil {
				t.Fatalf("ReadAt(%d bytes at %d) of a %d-byte file: error %v", len(p), off, len(model), err)
			}
			if want > 0 && !bytes.Equal(p[:got], model[off:off+got]) {
				t.Fatalf("ReadAt(%d bytes at %d) of a %d-byte file: bytes differ from the model", len(p), off, len(model))
			}
		}
		if err := c.Remove(ctx, f.Name()); err != nil {
			t.Fatal(err)
		}
	})
}

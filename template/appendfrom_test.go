package template

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// shortReader holds fewer bytes than AppendFrom is told.
type shortReader struct{ data []byte }

func (r shortReader) ReadAt(p []byte, off int64) (int, error) {
	return bytes.NewReader(r.data).ReadAt(p, off)
}

// AppendFrom copies more than one piece (1 MiB) into an atomic log whole,
// and a source shorter than promised fails without moving the log's end:
// the next append lands where the failed one began.
func TestAppendFrom(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	a := ann(t, "out LOG rc wc a main=0")
	big := bytes.Repeat([]byte("x"), placeChunk*2+5)
	runRanks(t, 1, path, nil, func(ctx context.Context, g *Group, f File) error {
		s, err := g.Open(ctx, a, f, Bounds{})
		if err != nil {
			return err
		}
		defer s.Close()
		if off, err := s.AppendFrom(ctx, bytes.NewReader(big), int64(len(big))); err != nil || off != 0 {
			t.Errorf("AppendFrom of %d bytes: at %d, %v", len(big), off, err)
		}
		_, err = s.AppendFrom(ctx, shortReader{[]byte("abc")}, 10)
		if err == nil || !strings.Contains(err.Error(), "append 10 bytes at") || !strings.Contains(err.Error(), io.ErrUnexpectedEOF.Error()) {
			t.Errorf("AppendFrom of a short source: %v", err)
		}
		if off, err := s.Append(ctx, []byte("end")); err != nil || off != int64(len(big)) {
			t.Errorf("Append after the failed one: at %d, %v; want %d", off, err, len(big))
		}
		return nil
	})
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data[:len(big)], big) || string(data[len(big):len(big)+3]) != "end" {
		t.Errorf("log of %d bytes: want the large append then \"end\"", len(data))
	}
}

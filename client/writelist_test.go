package client_test

import (
	"bytes"
	"context"
	"errors"
	"syscall"
	"testing"

	"github.com/pario/pario/client"
)

func TestWriteList(t *testing.T) {
	c := startEmbedded(t)
	ctx := context.Background()
	f, err := c.Create(ctx, "/list", client.CreateOptions{Layout: mustLayout(t, "simple_stripe:strip_size=64")})
	if err != nil {
		t.Fatal(err)
	}
	spans := []client.Span{{0, 10}, {100, 300}, {1000, 1}, {1001, 64}, {5000, 7}, {5100, 3}, {5300, 2}}
	var p []byte
	want := make([]byte, 5302)
	for _, s := range spans {
		for i := range s.Len {
			p = append(p, byte(s.Off+i)|1) // never 0: holes read as 0
			want[s.Off+i] = byte(s.Off+i) | 1
		}
	}
	if err := f.WriteList(ctx, spans, p); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(want))
	if _, err := f.ReadAt(got, 0); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("the file differs from the list written")
	}
	for _, tc := range []struct {
		name  string
		spans []client.Span
		n     int
	}{
		{"overlap", []client.Span{{0, 10}, {5, 10}}, 20},
		{"out of order", []client.Span{{100, 10}, {0, 10}}, 20},
		{"negative", []client.Span{{-1, 10}}, 10},
		{"buffer short", []client.Span{{0, 10}}, 9},
	} {
		if err := f.WriteList(ctx, tc.spans, make([]byte, tc.n)); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("%s: %v, want EINVAL", tc.name, err)
		}
	}
	if _, err := f.ReadAt(got, 0); err != nil || !bytes.Equal(got, want) {
		t.Errorf("a refused list write changed the file (%v)", err)
	}
}

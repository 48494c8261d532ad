package data

import (
	"bytes"
	"errors"
	"syscall"
	"testing"

	"github.com/pario/pario/wire"
)

// A list write puts each range's bytes at its offset; one whose ranges do
// not account for the data writes nothing.
func TestWriteList(t *testing.T) {
	s := openStore(t, StoreOptions{})
	h := &Handler{Store: s}
	ensure(t, s, 7)
	serve := func(r WriteListRequest, data []byte) error {
		var e wire.Enc
		r.Encode(&e)
		_, err := h.ServeWire(ctx, &wire.Request{Op: OpWriteList.Code, Args: e.Bytes(), Data: data})
		return err
	}
	if err := serve(WriteListRequest{ID: 7, Ranges: []Range{{0, 3}, {10, 2}, {5, 1}}}, []byte("abcdef")); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 12)
	n, _ := s.ReadAt(ctx, 7, got, 0)
	if want := []byte("abc\x00\x00f\x00\x00\x00\x00de"); n != 12 || !bytes.Equal(got, want) {
		t.Errorf("datafile = %q (%d B), want %q", got[:n], n, want)
	}
	if err := serve(WriteListRequest{ID: 7, Ranges: []Range{{100, 3}, {200, 4}}}, []byte("abcdef")); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("ranges of 7 B for 6 B of data: %v, want EINVAL", err)
	}
	if size, _, err := s.Usage(ctx, 7); err != nil || size != 12 {
		t.Errorf("after a refused list write the datafile has %d B (%v), want 12", size, err)
	}
}

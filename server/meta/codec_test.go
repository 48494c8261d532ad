package meta

import (
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/pario/pario/dist"
)

var codecSamples = []Attr{
	{},
	{ID: RootID, Kind: KindDir, Mode: 0o755, Mtime: 1, Ctime: 2},
	{ID: 7, Kind: KindDir, Mode: 0o700, Mtime: -5, Ctime: math.MaxInt64,
		Layout: dist.Layout{Dist: "simple_stripe", Params: "strip_size=1048576"}},
	{ID: math.MaxUint64, Kind: KindFile, Mode: 0o7777, Mtime: math.MinInt64, Ctime: 0,
		Layout:  dist.Layout{Dist: "varstrip", Params: "strips=0:200000;1:4000000", Datafiles: 2},
		Servers: []uint32{3, math.MaxUint32}, Stuffed: true, Size: math.MaxInt64},
	{ID: 42, Kind: KindFile, Mode: 0o644, Layout: dist.Layout{Dist: "basic", Datafiles: 1},
		Servers: []uint32{0}, Size: 288664},
}

func TestAttrRoundTrip(t *testing.T) {
	for _, a := range codecSamples[1:] {
		b := encodeAttr(&a)
		got, err := decodeAttr(b)
		if err != nil {
			t.Fatalf("decode(encode(%+v)): %v", a, err)
		}
		if !reflect.DeepEqual(got, a) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", got, a)
		}
	}
}

func TestDecodeAttrRejects(t *testing.T) {
	good := encodeAttr(&codecSamples[3])
	// Every proper prefix is truncated.
	for n := range len(good) {
		if _, err := decodeAttr(good[:n]); !errors.Is(err, errCorrupt) {
			t.Errorf("prefix of %d/%d bytes: err = %v, want errCorrupt", n, len(good), err)
		}
	}
	bad := map[string][]byte{
		"trailing byte":  append(append([]byte(nil), good...), 0),
		"version 0":      append([]byte{0}, good[1:]...),
		"version 2":      append([]byte{2}, good[1:]...),
		"kind 0":         {attrVersion, 5, 0},
		"kind 3":         {attrVersion, 5, 3},
		"huge mode":      {attrVersion, 5, 2, 0x80, 0x80, 0x80, 0x80, 0x10},
		"overlong int":   {attrVersion, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01},
		"string too big": {attrVersion, 5, 2, 0, 0, 0, 0xff, 0x01, 'a'},
		"servers too many": {attrVersion, 5, 2, 0, 0, 0, 0, 0, 0,
			0xff, 0xff, 0xff, 0xff, 0x0f, 0},
		"server > uint32": {attrVersion, 5, 2, 0, 0, 0, 0, 0, 0,
			1, 0x80, 0x80, 0x80, 0x80, 0x10, 0, 0},
		"datafiles too big": {attrVersion, 5, 2, 0, 0, 0, 0, 0,
			0x80, 0x80, 0x80, 0x80, 0x10, 0, 0, 0},
		"unknown flag": {attrVersion, 5, 2, 0, 0, 0, 0, 0, 0, 0, 2, 0},
	}
	for name, b := range bad {
		if a, err := decodeAttr(b); !errors.Is(err, errCorrupt) {
			t.Errorf("%s: decode = %+v, %v; want errCorrupt", name, a, err)
		}
	}
	// The minimal valid record, for contrast.
	if _, err := decodeAttr([]byte{attrVersion, 5, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0}); err != nil {
		t.Errorf("minimal record: %v", err)
	}
}

// FuzzDecodeAttr checks that decoding arbitrary bytes never panics, that
// failures wrap errCorrupt, and that whatever decodes survives a round trip.
// The seed corpus is in testdata/fuzz/FuzzDecodeAttr.
func FuzzDecodeAttr(f *testing.F) {
	for _, a := range codecSamples {
		f.Add(encodeAttr(&a))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := decodeAttr(b)
		if err != nil {
			if !errors.Is(err, errCorrupt) {
				t.Fatalf("error %v does not wrap errCorrupt", err)
			}
			return
		}
		again, err := decodeAttr(encodeAttr(&a))
		if err != nil {
			t.Fatalf("re-decoding %+v: %v", a, err)
		}
		if !reflect.DeepEqual(again, a) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", again, a)
		}
	})
}

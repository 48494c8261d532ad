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
	{ID: 42, Kind: KindFile, Mode: 0o644, Uid: 1000, Gid: 100, Layout: dist.Layout{Dist: "basic", Datafiles: 1},
		Servers: []uint32{0}, Size: 288664},
	{ID: 43, Kind: KindFile, Mode: 0o600, Mtime: 1700000000123456789, Ctime: 1700000001000000001,
		Atime: 1700000002999999999, Layout: dist.Layout{Dist: "basic", Datafiles: 1}, Servers: []uint32{1}},
	{ID: 44, Kind: KindFIFO, Mode: 0o644, Mtime: 3, Ctime: 3, Atime: 3},
	{ID: 45, Kind: KindSocket, Mode: 0o755, Uid: math.MaxUint32, Gid: Nobody},
	{ID: 46, Kind: KindCharDev, Mode: 0o666, Rdev: 0x0103},
	{ID: 47, Kind: KindBlockDev, Mode: 0o660, Rdev: math.MaxUint64},
}

// encodeAttrV1 writes the version 1 form (no Atime, Rdev, Uid, Gid), as
// stores made before version 2 hold it.
func encodeAttrV1(a *Attr) []byte {
	b := encodeAttr(a)
	b[0] = attrVersionV1
	// Cut Atime, Rdev, Uid and Gid, which follow ID, Kind, Mode, Mtime
	// and Ctime.
	d := decoder{b: b[1:]}
	d.uvarint("id")
	d.byte("kind")
	d.uvarint("mode")
	d.varint("mtime")
	d.varint("ctime")
	at := len(b) - len(d.b)
	d.varint("atime")
	d.uvarint("rdev")
	d.uvarint("uid")
	d.uvarint("gid")
	return append(b[:at:at], d.b...)
}

// encodeAttrV2 writes the version 2 form (no Uid, Gid), as stores made
// before owners were kept hold it.
func encodeAttrV2(a *Attr) []byte {
	b := encodeAttr(a)
	b[0] = attrVersionV2
	d := decoder{b: b[1:]}
	d.uvarint("id")
	d.byte("kind")
	d.uvarint("mode")
	d.varint("mtime")
	d.varint("ctime")
	d.varint("atime")
	d.uvarint("rdev")
	at := len(b) - len(d.b)
	d.uvarint("uid")
	d.uvarint("gid")
	return append(b[:at:at], d.b...)
}

// Records of version 2 decode as owned by root: Uid and Gid 0.
func TestAttrDecodesVersion2(t *testing.T) {
	for _, a := range codecSamples[1:] {
		got, err := decodeAttr(encodeAttrV2(&a))
		if err != nil {
			t.Fatalf("decode v2 of %+v: %v", a, err)
		}
		want := a
		want.Uid, want.Gid = 0, 0
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("v2 record:\n got %+v\nwant %+v", got, want)
		}
	}
}

// Records of version 1 decode: Atime reads as Mtime, Rdev as 0.
func TestAttrDecodesVersion1(t *testing.T) {
	for _, a := range codecSamples[1:6] {
		got, err := decodeAttr(encodeAttrV1(&a))
		if err != nil {
			t.Fatalf("decode v1 of %+v: %v", a, err)
		}
		want := a
		want.Atime, want.Rdev, want.Uid, want.Gid = a.Mtime, 0, 0, 0
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("v1 record:\n got %+v\nwant %+v", got, want)
		}
	}
	// A special file cannot be in a version 1 record.
	if _, err := decodeAttr(encodeAttrV1(&codecSamples[7])); !errors.Is(err, errCorrupt) {
		t.Errorf("v1 FIFO: %v, want errCorrupt", err)
	}
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
	v1 := byte(attrVersionV1)
	bad := map[string][]byte{
		"trailing byte":  append(append([]byte(nil), good...), 0),
		"version 0":      append([]byte{0}, good[1:]...),
		"version 4":      append([]byte{4}, good[1:]...),
		"kind 0":         {attrVersion, 5, 0},
		"kind 7":         {attrVersion, 5, 7},
		"v1 kind 3":      {v1, 5, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0},
		"huge mode":      {attrVersion, 5, 2, 0x80, 0x80, 0x80, 0x80, 0x10},
		"overlong int":   {attrVersion, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01},
		"huge uid":       {attrVersion, 5, 2, 0, 0, 0, 0, 0, 0x80, 0x80, 0x80, 0x80, 0x10},
		"overlong rdev":  {attrVersion, 5, 5, 0, 0, 0, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01},
		"string too big": {v1, 5, 2, 0, 0, 0, 0xff, 0x01, 'a'},
		"servers too many": {v1, 5, 2, 0, 0, 0, 0, 0, 0,
			0xff, 0xff, 0xff, 0xff, 0x0f, 0},
		"server > uint32": {v1, 5, 2, 0, 0, 0, 0, 0, 0,
			1, 0x80, 0x80, 0x80, 0x80, 0x10, 0, 0},
		"datafiles too big": {v1, 5, 2, 0, 0, 0, 0, 0,
			0x80, 0x80, 0x80, 0x80, 0x10, 0, 0, 0},
		"unknown flag": {v1, 5, 2, 0, 0, 0, 0, 0, 0, 0, 2, 0},
	}
	for name, b := range bad {
		if a, err := decodeAttr(b); !errors.Is(err, errCorrupt) {
			t.Errorf("%s: decode = %+v, %v; want errCorrupt", name, a, err)
		}
	}
	// The minimal valid records, for contrast.
	if _, err := decodeAttr([]byte{v1, 5, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0}); err != nil {
		t.Errorf("minimal v1 record: %v", err)
	}
	if _, err := decodeAttr([]byte{attrVersion, 5, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}); err != nil {
		t.Errorf("minimal record: %v", err)
	}
}

// FuzzDecodeAttr checks that decoding arbitrary bytes never panics, that
// failures wrap errCorrupt, and that whatever decodes survives a round trip.
// The seed corpus is in testdata/fuzz/FuzzDecodeAttr.
func FuzzDecodeAttr(f *testing.F) {
	for _, a := range codecSamples {
		f.Add(encodeAttr(&a))
		f.Add(encodeAttrV1(&a))
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

package meta

import (
	"errors"
	"math"
	"reflect"
	"strings"
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
	{ID: 47, Kind: KindBlockDev, Mode: 0o660, Rdev: math.MaxUint64, Nlink: 3},
	{ID: 48, Kind: KindSymlink, Mode: 0o777, Uid: 1000, Gid: 1000, Nlink: 1, Target: "../a/b"},
	{ID: 49, Kind: KindSymlink, Mode: 0o777, Nlink: math.MaxUint32, Target: strings.Repeat("x/", MaxPathLen/2)},
	{ID: 50, Kind: KindDir, Mode: 0o755, Nlink: 5},
}

// encodeAttrOld writes the record a store of an older version holds:
// version 3 has no Nlink and Target, version 2 no Uid and Gid either,
// version 1 no Atime and Rdev either.
func encodeAttrOld(a *Attr, version byte) []byte {
	b := encodeAttr(a)
	b[0] = version
	d := decoder{b: b[1:]}
	d.uvarint("id")
	d.byte("kind")
	d.uvarint("mode")
	d.varint("mtime")
	d.varint("ctime")
	cut := func() int { return len(b) - len(d.b) }
	at := cut()
	d.varint("atime")
	d.uvarint("rdev")
	if version >= attrVersionV2 {
		at = cut()
	}
	d.uvarint("uid")
	d.uvarint("gid")
	if version >= attrVersionV3 {
		at = cut()
	}
	d.uvarint("nlink")
	d.string("target")
	return append(b[:at:at], d.b...)
}

func encodeAttrV1(a *Attr) []byte { return encodeAttrOld(a, attrVersionV1) }
func encodeAttrV2(a *Attr) []byte { return encodeAttrOld(a, attrVersionV2) }

// oldNlink is what a record from before version 4 reads as: 1 link, or
// unknown (0) for a directory.
func oldNlink(a Attr) uint32 {
	if a.Kind == KindDir {
		return 0
	}
	return 1
}

// Records of version 3 decode with Nlink 1 (unknown for directories).
func TestAttrDecodesVersion3(t *testing.T) {
	for _, a := range codecSamples[1:] {
		if a.Kind == KindSymlink {
			if _, err := decodeAttr(encodeAttrOld(&a, attrVersionV3)); !errors.Is(err, errCorrupt) {
				t.Errorf("v3 symbolic link: %v, want errCorrupt", err)
			}
			continue
		}
		got, err := decodeAttr(encodeAttrOld(&a, attrVersionV3))
		if err != nil {
			t.Fatalf("decode v3 of %+v: %v", a, err)
		}
		want := a
		want.Nlink = oldNlink(a)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("v3 record:\n got %+v\nwant %+v", got, want)
		}
	}
}

// Records of version 2 decode as owned by root: Uid and Gid 0.
func TestAttrDecodesVersion2(t *testing.T) {
	for _, a := range codecSamples[1:] {
		if a.Kind == KindSymlink {
			continue
		}
		got, err := decodeAttr(encodeAttrV2(&a))
		if err != nil {
			t.Fatalf("decode v2 of %+v: %v", a, err)
		}
		want := a
		want.Uid, want.Gid, want.Nlink = 0, 0, oldNlink(a)
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
		want.Atime, want.Rdev, want.Uid, want.Gid, want.Nlink = a.Mtime, 0, 0, 0, oldNlink(a)
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
		"trailing byte":     append(append([]byte(nil), good...), 0),
		"version 0":         append([]byte{0}, good[1:]...),
		"version 5":         append([]byte{5}, good[1:]...),
		"kind 0":            {attrVersion, 5, 0},
		"kind 8":            {attrVersion, 5, 8},
		"v3 kind 7":         append([]byte{attrVersionV3}, encodeAttrOld(&codecSamples[11], attrVersionV3)[1:]...),
		"file target":       {attrVersion, 5, 2, 0, 0, 0, 0, 0, 0, 0, 1, 1, 'a', 0, 0, 0, 0, 0, 0},
		"symlink no target": {attrVersion, 5, 7, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0},
		"target too long":   encodeAttr(&Attr{ID: 5, Kind: KindSymlink, Target: strings.Repeat("x", MaxPathLen+1)}),
		"v1 kind 3":         {v1, 5, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0},
		"huge mode":         {attrVersion, 5, 2, 0x80, 0x80, 0x80, 0x80, 0x10},
		"overlong int":      {attrVersion, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01},
		"huge uid":          {attrVersion, 5, 2, 0, 0, 0, 0, 0, 0x80, 0x80, 0x80, 0x80, 0x10},
		"overlong rdev":     {attrVersion, 5, 5, 0, 0, 0, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01},
		"string too big":    {v1, 5, 2, 0, 0, 0, 0xff, 0x01, 'a'},
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
	if _, err := decodeAttr([]byte{attrVersion, 5, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}); err != nil {
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
		f.Add(encodeAttrOld(&a, attrVersionV3))
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

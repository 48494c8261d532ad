package results

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/pario/pario/tune/search"
)

func sampleKey() Key {
	return Key{
		System:    "kraken",
		Objective: "striping/v1 size=107374182400",
		Params:    search.Params{{Name: "stripe-count", Value: 40}, {Name: "strip-size", Value: 1 << 20}, {Name: "transfer-size", Value: 1 << 25}},
	}
}

func TestKeyCanonical(t *testing.T) {
	k := sampleKey()
	a, err := k.Encode()
	if err != nil {
		t.Fatal(err)
	}
	r := k
	r.Params = slices.Clone(k.Params)
	slices.Reverse(r.Params)
	b, err := r.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Error("parameter order changes the key")
	}
	got, err := DecodeKey(a)
	if err != nil {
		t.Fatal(err)
	}
	want := search.Params{{Name: "strip-size", Value: 1 << 20}, {Name: "stripe-count", Value: 40}, {Name: "transfer-size", Value: 1 << 25}}
	if got.System != k.System || got.Objective != k.Objective || !slices.Equal(got.Params, want) {
		t.Errorf("DecodeKey = %+v", got)
	}
	if !bytes.HasPrefix(a, prefix(k.System, k.Objective)) || !bytes.HasPrefix(a, prefix(k.System, "")) {
		t.Error("key does not start with its system and objective prefix")
	}
	// A system whose name extends another's does not share its prefix.
	k2 := k
	k2.System = "kraken2"
	c, _ := k2.Encode()
	if bytes.HasPrefix(c, prefix("kraken", "")) {
		t.Error(`"kraken2" key has the "kraken" prefix`)
	}
}

func TestKeyRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		names := rapid.SliceOfNDistinct(rapid.StringN(1, 12, 40), 0, 6, rapid.ID[string]).Draw(t, "names")
		k := Key{
			System:    rapid.StringN(1, 20, 60).Draw(t, "system"),
			Objective: rapid.StringN(1, 20, 60).Draw(t, "objective"),
		}
		for _, n := range names {
			k.Params = append(k.Params, search.Param{Name: n, Value: rapid.Int64().Draw(t, "value")})
		}
		b, err := k.Encode()
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeKey(b)
		if err != nil {
			t.Fatalf("DecodeKey(Encode(%+v)): %v", k, err)
		}
		if got.System != k.System || got.Objective != k.Objective || len(got.Params) != len(k.Params) {
			t.Fatalf("round trip: %+v -> %+v", k, got)
		}
		for _, p := range k.Params {
			if v, ok := got.Params.Get(p.Name); !ok || v != p.Value {
				t.Fatalf("parameter %q: %d, %v", p.Name, v, ok)
			}
		}
		b2, _ := got.Encode()
		if !bytes.Equal(b, b2) {
			t.Fatal("re-encoding differs")
		}
	})
}

func TestKeyEncodeErrors(t *testing.T) {
	long := strings.Repeat("x", maxString+1)
	for _, tc := range []struct {
		k    Key
		want string
	}{
		{Key{Objective: "o"}, "no system"},
		{Key{System: "s"}, "no objective"},
		{Key{System: "s", Objective: "o", Params: search.Params{{Name: "", Value: 1}}}, "without a name"},
		{Key{System: "s", Objective: "o", Params: search.Params{{Name: "a", Value: 1}, {Name: "a", Value: 2}}}, `parameter "a" twice`},
		{Key{System: long, Objective: "o"}, "longer than 4096"},
	} {
		if _, err := tc.k.Encode(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Encode(%.40v) = %v, want %q", tc.k, err, tc.want)
		}
	}
}

func TestDecodeKeyErrors(t *testing.T) {
	good, _ := sampleKey().Encode()
	unsorted := []byte{keyVersion}
	unsorted = appendString(unsorted, "s")
	unsorted = appendString(unsorted, "o")
	unsorted = append(unsorted, 2)
	unsorted = append(appendString(unsorted, "b"), 2)
	unsorted = append(appendString(unsorted, "a"), 2)
	for name, b := range map[string][]byte{
		"empty":     nil,
		"version":   append([]byte{9}, good[1:]...),
		"truncated": good[:len(good)-1],
		"trailing":  append(slices.Clone(good), 0),
		"unsorted":  unsorted,
		"overlong":  {keyVersion, 0x81, 0x00, 's', 1, 'o', 0},
		"count":     {keyVersion, 1, 's', 1, 'o', 0xff, 0xff, 0xff, 0xff, 0x0f},
		"nosystem":  {keyVersion, 0, 1, 'o', 0},
	} {
		if _, err := DecodeKey(b); err == nil || !errors.Is(err, errCorrupt) {
			t.Errorf("%s: DecodeKey(%x) = %v, want a corrupt-record error", name, b, err)
		}
	}
}

func TestRecordRoundTrip(t *testing.T) {
	for _, r := range []Record{
		{Value: 210.14, Time: time.Unix(1700000000, 5), Duration: 3 * time.Millisecond, Source: "model"},
		{Value: math.Inf(1), Time: time.Unix(0, 0), Source: ""},
		{Value: -1e300, Time: time.Unix(-5, 0), Duration: 0, Source: "bench"},
	} {
		got, err := decodeRecord(encodeRecord(r))
		if err != nil {
			t.Fatal(err)
		}
		if got.Value != r.Value || !got.Time.Equal(r.Time) || got.Duration != r.Duration || got.Source != r.Source {
			t.Errorf("round trip %+v -> %+v", r, got)
		}
	}
	good := encodeRecord(Record{Value: 1, Source: "sim"})
	for name, b := range map[string][]byte{
		"empty":     nil,
		"version":   append([]byte{2}, good[1:]...),
		"short":     good[:5],
		"truncated": good[:len(good)-1],
		"trailing":  append(slices.Clone(good), 1),
		"nan":       encodeRecord(Record{Value: math.NaN()}),
		"negative":  encodeRecord(Record{Value: 1, Duration: -1}),
	} {
		if _, err := decodeRecord(b); err == nil || !errors.Is(err, errCorrupt) {
			t.Errorf("%s: decodeRecord(%x) = %v, want a corrupt-record error", name, b, err)
		}
	}
}

// FuzzDecodeKey: decoding never panics, and whatever decodes re-encodes to
// the same bytes (the encoding is canonical).
func FuzzDecodeKey(f *testing.F) {
	good, _ := sampleKey().Encode()
	f.Add(good)
	f.Add([]byte{})
	f.Add([]byte{keyVersion, 1, 's', 1, 'o', 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		k, err := DecodeKey(b)
		if err != nil {
			return
		}
		b2, err := k.Encode()
		if err != nil {
			t.Fatalf("decoded key %+v does not encode: %v", k, err)
		}
		if !bytes.Equal(b, b2) {
			t.Fatalf("DecodeKey(%x) = %+v re-encodes to %x", b, k, b2)
		}
	})
}

// FuzzDecodeRecord: decoding never panics, and whatever decodes re-encodes
// to the same bytes.
func FuzzDecodeRecord(f *testing.F) {
	f.Add(encodeRecord(Record{Value: 210.14, Time: time.Unix(1700000000, 5), Duration: time.Second, Source: "simulator"}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeRecord(b)
		if err != nil {
			return
		}
		if b2 := encodeRecord(r); !bytes.Equal(b, b2) {
			t.Fatalf("decodeRecord(%x) = %+v re-encodes to %x", b, r, b2)
		}
	})
}

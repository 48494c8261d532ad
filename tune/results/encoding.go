package results

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"go.etcd.io/bbolt"

	"github.com/pario/pario/tune/search"
)

// Key identifies one evaluation: the system it ran on (or was simulated
// for), the objective with its settings and version, and the parameters.
// Two keys are the same when these are, whatever the order of Params.
type Key struct {
	// System names the machine or calibration, e.g. "kraken" or
	// "sim:lambda=0.1,gamma=0.125,V=0.0625".
	System string
	// Objective names what was measured and how, with a version, e.g.
	// "striping/v1 size=107374182400". Change it whenever the same
	// parameters would give a different value.
	Objective string
	Params    search.Params
}

// Record is a stored result.
type Record struct {
	Value    float64       // the objective's value (never NaN)
	Time     time.Time     // when the evaluation finished
	Duration time.Duration // how long it took
	Source   string        // where the value came from: "model", "simulator", "bench", ...
}

const (
	keyVersion    = 1
	recordVersion = 1
	// maxString bounds every string of a key or record.
	maxString = 4096
)

// errCorrupt is wrapped by every decoding error.
var errCorrupt = errors.New("corrupt results record")

// Encode returns the canonical encoding of k, the database key:
//
//	byte   version (1)
//	uv+b   System    (uvarint length, then bytes)
//	uv+b   Objective
//	uv     number of parameters
//	per parameter, in increasing byte order of names:
//	uv+b   name
//	sv     value (zig-zag varint)
//
// All keys of one system, and of one system and objective, share a prefix.
// Encode fails for an empty system, objective or parameter name, a repeated
// name, a string over 4096 bytes or a key over bbolt's limit.
func (k Key) Encode() ([]byte, error) {
	if k.System == "" {
		return nil, errors.New("results: key has no system")
	}
	if k.Objective == "" {
		return nil, errors.New("results: key has no objective")
	}
	ps := slices.Clone(k.Params)
	slices.SortFunc(ps, func(a, b search.Param) int { return strings.Compare(a.Name, b.Name) })
	for i, p := range ps {
		if p.Name == "" {
			return nil, errors.New("results: key has a parameter without a name")
		}
		if i > 0 && ps[i-1].Name == p.Name {
			return nil, fmt.Errorf("results: key has parameter %q twice", p.Name)
		}
	}
	b := prefix(k.System, k.Objective)
	b = binary.AppendUvarint(b, uint64(len(ps)))
	for _, p := range ps {
		b = appendString(b, p.Name)
		b = binary.AppendVarint(b, p.Value)
	}
	for _, s := range append([]string{k.System, k.Objective}, names(ps)...) {
		if len(s) > maxString {
			return nil, fmt.Errorf("results: key string of %d bytes is longer than %d", len(s), maxString)
		}
	}
	if len(b) > bbolt.MaxKeySize {
		return nil, fmt.Errorf("results: key of %d bytes is longer than %d", len(b), bbolt.MaxKeySize)
	}
	return b, nil
}

func names(ps search.Params) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Name
	}
	return out
}

// prefix is the encoding's start for a system and an objective; with an
// empty objective it is the prefix of every key of the system.
func prefix(system, objective string) []byte {
	b := []byte{keyVersion}
	b = appendString(b, system)
	if objective != "" {
		b = appendString(b, objective)
	}
	return b
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// DecodeKey decodes a key written by Key.Encode. It accepts only canonical
// encodings (parameters in strictly increasing name order, no trailing
// bytes) and returns an error, never panics, on anything else.
func DecodeKey(b []byte) (Key, error) {
	d := decoder{b: b}
	if v := d.byte(); d.err == nil && v != keyVersion {
		return Key{}, fmt.Errorf("results: key version %d (this build reads %d): %w", v, keyVersion, errCorrupt)
	}
	k := Key{System: d.string(), Objective: d.string()}
	n := d.uvarint()
	if d.err == nil && n > uint64(len(d.b)) {
		d.fail("%d parameters in %d bytes", n, len(d.b))
	}
	for i := uint64(0); i < n && d.err == nil; i++ {
		p := search.Param{Name: d.string(), Value: d.varint()}
		if d.err == nil && len(k.Params) > 0 && k.Params[len(k.Params)-1].Name >= p.Name {
			d.fail("parameter %q after %q: not in canonical order", p.Name, k.Params[len(k.Params)-1].Name)
		}
		k.Params = append(k.Params, p)
	}
	d.end()
	if d.err == nil && (k.System == "" || k.Objective == "") {
		d.fail("empty system or objective")
	}
	for _, p := range k.Params {
		if d.err == nil && p.Name == "" {
			d.fail("parameter without a name")
		}
	}
	if d.err != nil {
		return Key{}, fmt.Errorf("results: key: %w", d.err)
	}
	return k, nil
}

// encodeRecord encodes r:
//
//	byte   version (1)
//	8      Value, IEEE 754 bits, big-endian
//	sv     Time, unix nanoseconds
//	sv     Duration, nanoseconds (not negative)
//	uv+b   Source
func encodeRecord(r Record) []byte {
	b := []byte{recordVersion}
	b = binary.BigEndian.AppendUint64(b, math.Float64bits(r.Value))
	b = binary.AppendVarint(b, r.Time.UnixNano())
	b = binary.AppendVarint(b, int64(r.Duration))
	return appendString(b, r.Source)
}

func checkRecord(r Record) error {
	switch {
	case math.IsNaN(r.Value):
		return errors.New("results: record value is NaN")
	case r.Duration < 0:
		return fmt.Errorf("results: record duration %v is negative", r.Duration)
	case len(r.Source) > maxString:
		return fmt.Errorf("results: record source of %d bytes is longer than %d", len(r.Source), maxString)
	}
	return nil
}

// decodeRecord decodes a value written by encodeRecord; it returns an
// error, never panics, on anything else.
func decodeRecord(b []byte) (Record, error) {
	d := decoder{b: b}
	if v := d.byte(); d.err == nil && v != recordVersion {
		return Record{}, fmt.Errorf("results: record version %d (this build reads %d): %w", v, recordVersion, errCorrupt)
	}
	var r Record
	if len(d.b) < 8 && d.err == nil {
		d.fail("truncated value")
	} else if d.err == nil {
		r.Value = math.Float64frombits(binary.BigEndian.Uint64(d.b))
		d.b = d.b[8:]
	}
	r.Time = time.Unix(0, d.varint())
	r.Duration = time.Duration(d.varint())
	r.Source = d.string()
	d.end()
	if d.err == nil {
		if err := checkRecord(r); err != nil {
			d.fail("%v", err)
		}
	}
	if d.err != nil {
		return Record{}, fmt.Errorf("results: record: %w", d.err)
	}
	return r, nil
}

// decoder reads the encodings; the first error sticks and later reads
// return zero values.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", errCorrupt, fmt.Sprintf(format, args...))
	}
}

func (d *decoder) byte() byte {
	if d.err != nil {
		return 0
	}
	if len(d.b) == 0 {
		d.fail("truncated")
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	// Canonical: the shortest encoding only.
	if n != len(binary.AppendUvarint(nil, v)) {
		d.fail("overlong varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	u := d.uvarint()
	return int64(u>>1) ^ -int64(u&1)
}

func (d *decoder) string() string {
	n := d.uvarint()
	if d.err != nil {
		return ""
	}
	if n > maxString || n > uint64(len(d.b)) {
		d.fail("string of %d bytes with %d left", n, len(d.b))
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *decoder) end() {
	if d.err == nil && len(d.b) != 0 {
		d.fail("%d trailing bytes", len(d.b))
	}
}

// hasPrefix reports whether key k starts with p.
func hasPrefix(k, p []byte) bool { return bytes.HasPrefix(k, p) }

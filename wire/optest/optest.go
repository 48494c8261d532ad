// Package optest checks a service's op table (see wire.OpTable): that the
// table is well formed and names the right types, that every request and
// response survives an encode/decode round trip, that each op's argument
// section keeps its byte layout, and, as a fuzz target per op, that any
// section that decodes encodes back to itself.
//
// A service's tests list representative values of every op in Samples and
// call CheckTable, CheckSamples and, from a FuzzOpXxx target, Fuzz.
package optest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/pario/pario/wire"
)

// Sample holds representative values of one op.
type Sample struct {
	Op        wire.OpInfo
	Requests  []Value
	Responses []Value
}

// Value is one request or response and the bytes its argument section
// must encode to. Wire is written with raw wire.Enc calls, as the
// hand-written encoders before the op types did, so a change of layout
// shows up as a failed test rather than as a silent incompatibility.
type Value struct {
	Msg  wire.Message
	Wire func(e *wire.Enc)
}

// CheckTable checks that table passes Check, that name(code) agrees with
// it for every code, that each op's request type is named after the op
// (op "getbyid": GetByIDRequest) and that samples cover every op.
func CheckTable(t *testing.T, table wire.OpTable, name func(uint8) string, samples []Sample) {
	t.Helper()
	if err := table.Check(); err != nil {
		t.Fatal(err)
	}
	for code := 0; code < 256; code++ {
		want := "unknown"
		if o, ok := table.Lookup(uint8(code)); ok {
			want = o.Name
		}
		if got := name(uint8(code)); got != want {
			t.Errorf("OpName(%d) = %q, the table says %q", code, got, want)
		}
	}
	covered := map[uint8]bool{}
	for _, s := range samples {
		covered[s.Op.Code] = len(s.Requests) > 0 && len(s.Responses) > 0
	}
	for _, o := range table {
		req, resp := o.NewRequest(), o.NewResponse()
		if req == nil || resp == nil {
			t.Errorf("op %q: no request or response type", o.Name)
			continue
		}
		if got := reflect.TypeOf(req).Elem().Name(); !strings.EqualFold(got, o.Name+"Request") {
			t.Errorf("op %q: request type %s is not named after the op", o.Name, got)
		}
		if !strings.HasSuffix(reflect.TypeOf(resp).Elem().Name(), "Response") {
			t.Errorf("op %q: response type %T is not a ...Response", o.Name, resp)
		}
		if !covered[o.Code] {
			t.Errorf("op %q: no sample request and response", o.Name)
		}
	}
}

// CheckSamples checks every sample value: it is of its op's type, encodes
// to its Wire bytes, and decodes back to itself.
func CheckSamples(t *testing.T, samples []Sample) {
	t.Helper()
	for _, s := range samples {
		for i, v := range s.Requests {
			checkValue(t, fmt.Sprintf("%s request %d", s.Op.Name, i), s.Op.NewRequest(), v)
		}
		for i, v := range s.Responses {
			checkValue(t, fmt.Sprintf("%s response %d", s.Op.Name, i), s.Op.NewResponse(), v)
		}
	}
}

func checkValue(t *testing.T, what string, zero wire.Message, v Value) {
	t.Helper()
	if reflect.TypeOf(zero) != reflect.TypeOf(v.Msg) {
		t.Errorf("%s: sample is a %T, the op's type is %T", what, v.Msg, zero)
		return
	}
	got := encode(v.Msg)
	if v.Wire != nil {
		var e wire.Enc
		v.Wire(&e)
		if want := e.Bytes(); !bytes.Equal(got, want) {
			t.Errorf("%s: encodes to %x, the wire layout is %x", what, got, want)
		}
	}
	back := zero
	if err := back.Decode(wire.NewDec(got)); err != nil {
		t.Errorf("%s: %+v does not decode from its own encoding: %v", what, v.Msg, err)
		return
	}
	if !reflect.DeepEqual(back, v.Msg) {
		t.Errorf("%s: round trip of %+v gave %+v", what, v.Msg, back)
	}
}

// Seeds returns the encodings of a sample's values, as fuzz seeds.
func Seeds(s Sample) [][]byte {
	var out [][]byte
	for _, v := range append(append([]Value(nil), s.Requests...), s.Responses...) {
		out = append(out, encode(v.Msg))
	}
	return out
}

// Fuzz is the body of op's fuzz target: the input is tried as a request
// and as a response, and whatever decodes must encode to bytes that decode
// to the same value and encode to themselves again. Decoding must never
// panic, whatever the input.
func Fuzz(f *testing.F, s Sample) {
	for _, b := range Seeds(s) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		roundTrip(t, s.Op.Name+" request", s.Op.NewRequest, b)
		roundTrip(t, s.Op.Name+" response", s.Op.NewResponse, b)
	})
}

func roundTrip(t *testing.T, what string, zero func() wire.Message, b []byte) {
	x := zero()
	if err := x.Decode(wire.NewDec(b)); err != nil {
		return
	}
	enc := encode(x)
	y := zero()
	if err := y.Decode(wire.NewDec(enc)); err != nil {
		t.Fatalf("%s: %+v decoded from %x, but not from its encoding %x: %v", what, x, b, enc, err)
	}
	if !reflect.DeepEqual(x, y) {
		t.Fatalf("%s: decoded %+v from %x, re-encoded %x decodes to %+v", what, x, b, enc, y)
	}
	if again := encode(y); !bytes.Equal(again, enc) {
		t.Fatalf("%s: %+v encodes to %x, then to %x", what, x, enc, again)
	}
}

func encode(m wire.Encoder) []byte {
	var e wire.Enc
	m.Encode(&e)
	return e.Bytes()
}

// FuzzName names an op's fuzz target: op "getbyid" is FuzzOpGetbyid.
func FuzzName(op string) string { return "FuzzOp" + strings.ToUpper(op[:1]) + op[1:] }

// Find returns the sample of op, failing the test if there is none.
func Find(t testing.TB, samples []Sample, op wire.OpInfo) Sample {
	t.Helper()
	for _, s := range samples {
		if s.Op.Code == op.Code {
			return s
		}
	}
	t.Fatalf("no sample of op %q", op.Name)
	return Sample{}
}

// WriteCorpus writes the seeds of each sample to dir/<FuzzName>/sample-N
// in the go fuzz corpus format. Tests call it under an -update-corpus
// flag, so that the committed corpus follows the samples.
func WriteCorpus(dir string, samples []Sample) error {
	for _, s := range samples {
		d := filepath.Join(dir, FuzzName(s.Op.Name))
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		for i, b := range Seeds(s) {
			body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", b)
			if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("sample-%d", i)), []byte(body), 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

// V returns a sample value: msg, whose argument section is what layout
// writes.
func V(msg wire.Message, layout func(e *wire.Enc)) Value { return Value{Msg: msg, Wire: layout} }

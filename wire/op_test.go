package wire

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
)

// The op types of a small test service: a note (text and a number) is
// stored, its length is answered; the bulk data travels beside them.
type noteRequest struct {
	Text string
	N    uint64
}

func (r noteRequest) Encode(e *Enc) {
	e.String(r.Text)
	e.U64(r.N)
}

func (r *noteRequest) Decode(d *Dec) error {
	r.Text, r.N = d.String("text"), d.U64("n")
	return d.Done()
}

type noteResponse struct{ Len int64 }

func (r noteResponse) Encode(e *Enc) { e.I64(r.Len) }

func (r *noteResponse) Decode(d *Dec) error {
	r.Len = d.Offset("length")
	return d.Done()
}

var (
	opNote     = NewOp[noteRequest, noteResponse](1, "note", true)
	opNoteOnce = NewOp[noteRequest, noteResponse](2, "noteonce", false)
	testOps    = OpTable{opNote.OpInfo, opNoteOnce.OpInfo}
)

func TestOpTableCheck(t *testing.T) {
	if err := testOps.Check(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		table OpTable
		want  string
	}{
		{"same code", OpTable{opNote.OpInfo, NewOp[noteRequest, noteResponse](1, "other", true).OpInfo}, "share code 1"},
		{"same name", OpTable{opNote.OpInfo, NewOp[noteRequest, noteResponse](9, "note", true).OpInfo}, `named "note"`},
		{"no name", OpTable{NewOp[noteRequest, noteResponse](3, "", true).OpInfo}, "op 3 has no name"},
		{"no types", OpTable{{Code: 4, Name: "bare"}}, "not made with NewOp"},
	} {
		err := tc.table.Check()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Check = %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
	if o, ok := testOps.Lookup(2); !ok || o.Name != "noteonce" || o.Idempotent {
		t.Errorf("Lookup(2) = %+v, %v", o, ok)
	}
	if got := testOps.Name(3); got != "unknown" {
		t.Errorf("Name(3) = %q", got)
	}
	if _, ok := opNote.NewRequest().(*noteRequest); !ok {
		t.Errorf("NewRequest is a %T", opNote.NewRequest())
	}
	if _, ok := opNote.NewResponse().(*noteResponse); !ok {
		t.Errorf("NewResponse is a %T", opNote.NewResponse())
	}
}

// noteHandler serves the test ops with Serve; the data of a note "echo"
// is sent back.
func noteHandler(ctx context.Context, req *Request) (Response, error) {
	switch req.Op {
	case opNote.Code, opNoteOnce.Code:
		op := opNote
		if req.Op == opNoteOnce.Code {
			op = opNoteOnce
		}
		echo := false
		resp, err := Serve(op, req, func(r noteRequest) (noteResponse, error) {
			if r.Text == "fail" {
				return noteResponse{}, syscall.ENOSPC
			}
			echo = r.Text == "echo"
			return noteResponse{Len: int64(len(r.Text)) + int64(r.N)}, nil
		})
		if echo {
			resp.Data = [][]byte{bytes.Clone(req.Data)}
		}
		return resp, err
	case 9: // answers with arguments no noteResponse decodes from
		return Response{Args: []byte{1, 2, 3}}, nil
	}
	return Response{}, syscall.ENOSYS
}

func TestCallServe(t *testing.T) {
	s := startServer(t, handlerFunc(noteHandler), ServerOptions{})
	e := newTestEndpoint(t, s.Addr, fastRetries)
	ctx := context.Background()

	data := []byte("bulk bytes")
	into := [][]byte{make([]byte, 4), make([]byte, 20)}
	resp, n, err := Call(ctx, e, opNote, noteRequest{Text: "echo", N: 10}, [][]byte{data[:3], data[3:]}, into)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Len != 14 || n != len(data) {
		t.Fatalf("Call = %+v, %d bytes; want length 14, %d bytes", resp, n, len(data))
	}
	if got := append(into[0][:4:4], into[1][:n-4]...); !bytes.Equal(got, data) {
		t.Fatalf("data read into the caller's slices: %q, want %q", got, data)
	}

	// A handler's error comes back with its errno.
	if _, _, err := Call(ctx, e, opNote, noteRequest{Text: "fail"}, nil, nil); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("handler error: %v, want ENOSPC", err)
	}

	// A request that does not decode is EINVAL naming the op and the field.
	_, _, err = e.Call(ctx, opNote.Code, true, []byte{5, 'a'}, nil, nil)
	if !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), `note request: wire: field "text"`) {
		t.Fatalf("undecodable request: %v, want EINVAL naming the op and field", err)
	}
	_, _, err = e.Call(ctx, opNote.Code, true, append(noteRequest{Text: "x"}.appendTo(), 0), nil, nil)
	if !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), "trailing") {
		t.Fatalf("request with trailing bytes: %v, want EINVAL", err)
	}

	// A response that does not decode names the server, the op and the field.
	badReply := NewOp[noteRequest, noteResponse](9, "badreply", true)
	_, _, err = Call(ctx, e, badReply, noteRequest{}, nil, nil)
	if err == nil || !strings.HasPrefix(err.Error(), "test endpoint (") || !strings.Contains(err.Error(), `badreply reply: wire: field "length"`) {
		t.Fatalf("undecodable reply: %v", err)
	}
}

func (r noteRequest) appendTo() []byte {
	var e Enc
	r.Encode(&e)
	return e.Bytes()
}

// Call takes retries from the op's table entry: after the server hangs up
// mid-call an idempotent op is sent again, another is not.
func TestCallIdempotence(t *testing.T) {
	var requests atomic.Int64
	addr := fakeServer(t, func(nc net.Conn) {
		for {
			f, err := ReadFrame(nc)
			if err != nil {
				return
			}
			if requests.Add(1)%2 == 1 {
				return
			}
			nc.Write(AppendFrame(nil, f.Op, FlagResponse, f.ReqID, noteResponse{Len: 7}.appendTo(), nil))
		}
	})
	ctx := context.Background()
	e := newTestEndpoint(t, addr, fastRetries)
	resp, _, err := Call(ctx, e, opNote, noteRequest{Text: "a"}, nil, nil)
	if err != nil || resp.Len != 7 || requests.Load() != 2 {
		t.Fatalf("idempotent op: %+v, %v after %d requests, want an answer after 2", resp, err, requests.Load())
	}
	_, _, err = Call(ctx, e, opNoteOnce, noteRequest{Text: "a"}, nil, nil)
	var ce *ConnError
	if !errors.As(err, &ce) || requests.Load() != 3 {
		t.Fatalf("non-idempotent op: %v after %d requests, want a ConnError after 3", err, requests.Load())
	}
}

func (r noteResponse) appendTo() []byte {
	var e Enc
	r.Encode(&e)
	return e.Bytes()
}

func TestDecFail(t *testing.T) {
	d := NewDec([]byte{1, 2})
	d.U8("first")
	d.Fail("layout", errors.New("no such distribution"))
	d.Fail("later", errors.New("ignored"))
	err := d.Done()
	if err == nil || err.Error() != `wire: field "layout" at byte 1: no such distribution` {
		t.Fatalf("Done = %v", err)
	}
}

// Call's codec state is one allocation however the request encodes; the
// hand-written encoders grew their buffer once per field size class.
func BenchmarkCallWrite(b *testing.B) {
	s := startServer(b, handlerFunc(noteHandler), ServerOptions{})
	e := NewEndpoint("bench", s.Addr, testSecret, EndpointOptions{})
	defer e.Close()
	ctx := context.Background()
	data := [][]byte{make([]byte, 64<<10)}
	b.ReportAllocs()
	b.SetBytes(64 << 10)
	for b.Loop() {
		if _, _, err := Call(ctx, e, opNote, noteRequest{Text: "x", N: 1}, data, nil); err != nil {
			b.Fatal(err)
		}
	}
}

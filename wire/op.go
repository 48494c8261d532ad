package wire

import (
	"context"
	"fmt"
	"syscall"
)

// A service's protocol is a table of ops. Each op has a code, a name, a
// request type and a response type that encode and decode their own
// argument section, and says whether it is idempotent. Clients call an op
// with Call, handlers decode with the request type (or Serve), so the
// layout of an op lives in one place and no call site decides retries.
// Bulk data (the frame's data section) is not part of the types: it is
// passed beside them, from and into the caller's slices as before.

// Encoder writes a message's argument section. Requests and responses
// implement it with a value receiver, so Call takes a request by value
// without an allocation.
type Encoder interface{ Encode(e *Enc) }

// Decoder reads a whole argument section (it ends with Dec.Done), so a
// missing, malformed or trailing field is an error naming the field.
type Decoder interface{ Decode(d *Dec) error }

// Message is a request or response type: *T of a type T with a value
// Encode and a pointer Decode.
type Message interface {
	Encoder
	Decoder
}

// OpInfo is one entry of a service's op table.
type OpInfo struct {
	Code uint8
	Name string // for logs and errors: "rename"
	// Idempotent ops are sent again after any transport failure, since a
	// second execution has the effect of one; the others only when they
	// never reached the server (see Endpoint.Call).
	Idempotent bool

	newRequest, newResponse func() Message
}

// NewRequest returns a zero request of the op, for code that handles ops
// without knowing their types (tests, tracing tools).
func (o OpInfo) NewRequest() Message { return o.newRequest() }

// NewResponse returns a zero response of the op.
func (o OpInfo) NewResponse() Message { return o.newResponse() }

// BadRequest is the error a handler answers for a request whose arguments
// do not decode: EINVAL, naming the op and (through err) the field.
func (o OpInfo) BadRequest(err error) error {
	return fmt.Errorf("%s request: %w: %w", o.Name, err, syscall.EINVAL)
}

// Op is an op whose requests are Req and responses Resp.
type Op[Req, Resp any] struct{ OpInfo }

// NewOp defines an op. Only Req and Resp need be given:
// NewOp[RenameRequest, RenameResponse](6, "rename", false).
func NewOp[Req, Resp any, PReq interface {
	*Req
	Message
}, PResp interface {
	*Resp
	Message
}](code uint8, name string, idempotent bool) Op[Req, Resp] {
	return Op[Req, Resp]{OpInfo{
		Code: code, Name: name, Idempotent: idempotent,
		newRequest:  func() Message { return PReq(new(Req)) },
		newResponse: func() Message { return PResp(new(Resp)) },
	}}
}

// OpTable lists a service's ops.
type OpTable []OpInfo

// Lookup returns the op with the given code.
func (t OpTable) Lookup(code uint8) (OpInfo, bool) {
	for _, o := range t {
		if o.Code == code {
			return o, true
		}
	}
	return OpInfo{}, false
}

// Name names an op code for logs and errors ("unknown" if not in t).
func (t OpTable) Name(code uint8) string {
	if o, ok := t.Lookup(code); ok {
		return o.Name
	}
	return "unknown"
}

// Check reports a table that cannot be dispatched: a repeated code or
// name, an empty name, or an op made without NewOp.
func (t OpTable) Check() error {
	codes := map[uint8]string{}
	names := map[string]bool{}
	for _, o := range t {
		switch {
		case o.Name == "":
			return fmt.Errorf("wire: op %d has no name", o.Code)
		case codes[o.Code] != "":
			return fmt.Errorf("wire: ops %q and %q share code %d", codes[o.Code], o.Name, o.Code)
		case names[o.Name]:
			return fmt.Errorf("wire: two ops are named %q", o.Name)
		case o.newRequest == nil || o.newResponse == nil:
			return fmt.Errorf("wire: op %q has no request or response type (not made with NewOp)", o.Name)
		}
		codes[o.Code], names[o.Name] = o.Name, true
	}
	return nil
}

// callState is the codec state of one Call in a single allocation: the
// encoder and its first bytes (every fixed-size request fits) and the
// decoder. Calls through type parameters make them escape, so they are
// allocated once together rather than one by one.
type callState struct {
	e   Enc
	d   Dec
	buf [32]byte
}

// Call performs op on ep: req becomes the argument section, data is sent
// as the bulk section straight from the caller's slices, and a response's
// bulk data is read straight into into (n bytes arrived). Retries follow
// the op's Idempotent. A response that does not decode is an error naming
// the server and the op.
func Call[Req Encoder, Resp any, PResp interface {
	*Resp
	Decoder
}](ctx context.Context, ep *Endpoint, op Op[Req, Resp], req Req, data, into [][]byte) (Resp, int, error) {
	var resp Resp
	st := new(callState)
	st.e.b = st.buf[:0]
	req.Encode(&st.e)
	args, n, err := ep.Call(ctx, op.Code, op.Idempotent, st.e.Bytes(), data, into)
	if err != nil {
		return resp, 0, err
	}
	st.d = Dec{b: args}
	if err := PResp(&resp).Decode(&st.d); err != nil {
		return resp, 0, fmt.Errorf("%s: %s reply: %w", ep.Name, op.Name, err)
	}
	return resp, n, nil
}

// Serve is a handler's side of an op: it decodes req's arguments as the
// op's request (a failure is BadRequest), runs fn and encodes its answer.
// Handlers of hot ops decode in place instead, since the request escapes
// through the type parameter.
func Serve[Req any, Resp Encoder, PReq interface {
	*Req
	Decoder
}](op Op[Req, Resp], req *Request, fn func(Req) (Resp, error)) (Response, error) {
	var r Req
	if err := PReq(&r).Decode(NewDec(req.Args)); err != nil {
		return Response{}, op.BadRequest(err)
	}
	resp, err := fn(r)
	if err != nil {
		return Response{}, err
	}
	return Reply(resp), nil
}

// Reply encodes a handler's answer.
func Reply[Resp Encoder](resp Resp) Response {
	st := new(struct {
		e   Enc
		buf [64]byte
	})
	st.e.b = st.buf[:0]
	resp.Encode(&st.e)
	return Response{Args: st.e.Bytes()}
}

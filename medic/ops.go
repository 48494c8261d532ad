package medic

import (
	"fmt"
	"math"
	"time"

	"github.com/pario/pario/wire"
)

// The transfer protocol's ops. It runs as a session over one stream
// (hello, auth, offer, then data frames answered by unsolicited acks, and
// done), not as independent calls over a wire.Endpoint: nothing is
// retried, an interrupted transfer resumes from what the receiver staged.
// So no op is marked idempotent; the table gives every message of the
// session its type. "Request" is what the op's first frame carries (from
// the receiver for hello and ack), "Response" the answer, empty where
// there is none. Data and probe frames carry their bytes in the frame's
// data section, beside the types.
var (
	opHello    = wire.NewOp[helloRequest, helloResponse](0x01, "hello", false)
	opAuth     = wire.NewOp[authRequest, authResponse](0x02, "auth", false)
	opOffer    = wire.NewOp[offerRequest, offerResponse](0x03, "offer", false)
	opData     = wire.NewOp[dataRequest, dataResponse](0x04, "data", false)
	opAck      = wire.NewOp[ackRequest, ackResponse](0x05, "ack", false)
	opDone     = wire.NewOp[doneRequest, doneResponse](0x06, "done", false)
	opProbe    = wire.NewOp[probeRequest, probeResponse](0x07, "probe", false)
	opProbeEnd = wire.NewOp[probeEndRequest, probeEndResponse](0x08, "probeend", false)
	opPing     = wire.NewOp[pingRequest, pingResponse](0x09, "ping", false)
	opRates    = wire.NewOp[ratesRequest, ratesResponse](0x0a, "rates", false)
)

// ops is the transfer protocol's op table.
var ops = wire.OpTable{
	opHello.OpInfo, opAuth.OpInfo, opOffer.OpInfo, opData.OpInfo, opAck.OpInfo,
	opDone.OpInfo, opProbe.OpInfo, opProbeEnd.OpInfo, opPing.OpInfo, opRates.OpInfo,
}

// encode renders a message's argument section.
func encode(m wire.Encoder) []byte {
	var e wire.Enc
	m.Encode(&e)
	return e.Bytes()
}

// helloRequest is the receiver's greeting: its protocol version, name and
// the nonce the sender's proof covers.
type helloRequest struct {
	Version uint8
	Name    string
	Nonce   []byte
}

func (r helloRequest) Encode(e *wire.Enc) {
	e.U8(r.Version)
	e.String(r.Name)
	e.Blob(r.Nonce)
}

func (r *helloRequest) Decode(d *wire.Dec) error {
	r.Version, r.Name, r.Nonce = d.U8("version"), d.String("name"), d.Blob("nonce")
	return d.Done()
}

// helloResponse is empty: the sender answers a hello with auth.
type helloResponse struct{}

func (helloResponse) Encode(*wire.Enc)          {}
func (*helloResponse) Decode(d *wire.Dec) error { return d.Done() }

// authRequest is the sender's nonce and its proof of the key over both
// nonces.
type authRequest struct{ Nonce, Proof []byte }

func (r authRequest) Encode(e *wire.Enc) {
	e.Blob(r.Nonce)
	e.Blob(r.Proof)
}

func (r *authRequest) Decode(d *wire.Dec) error {
	r.Nonce, r.Proof = d.Blob("nonce"), d.Blob("proof")
	return d.Done()
}

// authResponse is the receiver's proof of the key.
type authResponse struct{ Proof []byte }

func (r authResponse) Encode(e *wire.Enc) { e.Blob(r.Proof) }

func (r *authResponse) Decode(d *wire.Dec) error {
	r.Proof = d.Blob("proof")
	return d.Done()
}

// offerRequest announces a container: its digest (the transfer id), size,
// the name to store the output under, the sender's window, and how many
// bytes the receiver should take in between acknowledgements (protocol
// version 2; 0: ProgressAck).
type offerRequest struct {
	ID       []byte
	Size     int64
	Name     string
	Window   uint32
	AckEvery uint32
}

func (r offerRequest) Encode(e *wire.Enc) {
	e.Blob(r.ID)
	e.I64(r.Size)
	e.String(r.Name)
	e.U32(r.Window)
	e.U32(r.AckEvery)
}

func (r *offerRequest) Decode(d *wire.Dec) error {
	r.ID, r.Size, r.Name, r.Window, r.AckEvery = d.Blob("id"), d.I64("size"), d.String("name"), d.U32("window"), d.U32("ack every")
	return d.Done()
}

// offerResponse is how much of the container the receiver holds already:
// where the sender resumes.
type offerResponse struct{ Offset int64 }

func (r offerResponse) Encode(e *wire.Enc) { e.I64(r.Offset) }

func (r *offerResponse) Decode(d *wire.Dec) error {
	r.Offset = d.I64("offset")
	return d.Done()
}

// dataRequest places the frame's data at Offset of the container.
type dataRequest struct{ Offset int64 }

func (r dataRequest) Encode(e *wire.Enc) { e.I64(r.Offset) }

func (r *dataRequest) Decode(d *wire.Dec) error {
	r.Offset = d.I64("offset")
	return d.Done()
}

// dataResponse is empty: data is acknowledged by acks.
type dataResponse struct{}

func (dataResponse) Encode(*wire.Enc)          {}
func (*dataResponse) Decode(d *wire.Dec) error { return d.Done() }

// ackRequest is the receiver's count of the bytes it staged so far.
type ackRequest struct{ Acked int64 }

func (r ackRequest) Encode(e *wire.Enc) { e.I64(r.Acked) }

func (r *ackRequest) Decode(d *wire.Dec) error {
	r.Acked = d.I64("acked")
	return d.Done()
}

// ackResponse is empty: the sender does not answer acks.
type ackResponse struct{}

func (ackResponse) Encode(*wire.Enc)          {}
func (*ackResponse) Decode(d *wire.Dec) error { return d.Done() }

// doneRequest is empty: the whole container was sent.
type doneRequest struct{}

func (doneRequest) Encode(*wire.Enc)          {}
func (*doneRequest) Decode(d *wire.Dec) error { return d.Done() }

// doneResponse is the receiver's report of the stored output.
type doneResponse struct{ Result Result }

func (r doneResponse) Encode(e *wire.Enc) {
	e.String(r.Result.Path)
	e.I64(r.Result.Size)
	e.String(r.Result.Plugin)
	e.I64(int64(r.Result.Verify))
	e.I64(int64(r.Result.Decode))
	e.I64(int64(r.Result.Commit))
}

func (r *doneResponse) Decode(d *wire.Dec) error {
	res := &r.Result
	res.Path, res.Size, res.Plugin = d.String("path"), d.I64("size"), d.String("plugin")
	res.Verify = time.Duration(d.I64("verify"))
	res.Decode = time.Duration(d.I64("decode"))
	res.Commit = time.Duration(d.I64("commit"))
	return d.Done()
}

// probeRequest is empty: a probe frame's bytes are in its data section
// and are discarded.
type probeRequest struct{}

func (probeRequest) Encode(*wire.Enc)          {}
func (*probeRequest) Decode(d *wire.Dec) error { return d.Done() }

// probeResponse is empty: probes are answered at probeend.
type probeResponse struct{}

func (probeResponse) Encode(*wire.Enc)          {}
func (*probeResponse) Decode(d *wire.Dec) error { return d.Done() }

// probeEndRequest is empty: it ends a bandwidth probe.
type probeEndRequest struct{}

func (probeEndRequest) Encode(*wire.Enc)          {}
func (*probeEndRequest) Decode(d *wire.Dec) error { return d.Done() }

// probeEndResponse is how many probe bytes the receiver took in.
type probeEndResponse struct{ Bytes int64 }

func (r probeEndResponse) Encode(e *wire.Enc) { e.I64(r.Bytes) }

func (r *probeEndResponse) Decode(d *wire.Dec) error {
	r.Bytes = d.I64("bytes")
	return d.Done()
}

// pingRequest and pingResponse are empty: a ping measures a round trip.
type pingRequest struct{}

func (pingRequest) Encode(*wire.Enc)          {}
func (*pingRequest) Decode(d *wire.Dec) error { return d.Done() }

type pingResponse struct{}

func (pingResponse) Encode(*wire.Enc)          {}
func (*pingResponse) Decode(d *wire.Dec) error { return d.Done() }

// ratesRequest is empty: the sender asks how fast the receiver
// regenerates now, to price each plugin's g before it chooses one.
type ratesRequest struct{}

func (ratesRequest) Encode(*wire.Enc)          {}
func (*ratesRequest) Decode(d *wire.Dec) error { return d.Done() }

// maxRates bounds the plugin records of a rates answer (a receiver has
// a handful of plugins).
const maxRates = 1024

// ratesResponse is the receiver's speed now and its record of earlier
// regenerations, per plugin (see Rates).
type ratesResponse struct{ Rates Rates }

func (r ratesResponse) Encode(e *wire.Enc) {
	e.U64(math.Float64bits(r.Rates.Speed))
	e.Uvarint(uint64(len(r.Rates.Plugins)))
	for _, p := range r.Rates.Plugins {
		e.String(p.Plugin)
		e.I64(p.Regenerations)
		e.U64(math.Float64bits(p.Rate))
		e.U64(math.Float64bits(p.Speed))
	}
}

func (r *ratesResponse) Decode(d *wire.Dec) error {
	r.Rates.Speed = rate(d, "speed")
	n := d.Int("plugins", maxRates)
	r.Rates.Plugins = nil
	for i := 0; i < n && d.Err() == nil; i++ {
		r.Rates.Plugins = append(r.Rates.Plugins, PluginRate{
			Plugin:        d.String("plugin"),
			Regenerations: d.I64("regenerations"),
			Rate:          rate(d, "rate"),
			Speed:         rate(d, "speed"),
		})
	}
	return d.Done()
}

// rate reads a float that must be a finite, non-negative speed: the
// cost model divides by it.
func rate(d *wire.Dec, field string) float64 {
	v := math.Float64frombits(d.U64(field))
	if d.Err() == nil && (math.IsNaN(v) || math.IsInf(v, 0) || v < 0) {
		d.Fail(field, fmt.Errorf("%v is not a rate", v))
		return 0
	}
	return v
}

package medic

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/pario/pario/wire"
	"github.com/pario/pario/wire/optest"
)

var updateCorpus = flag.Bool("update-corpus", false, "rewrite testdata/fuzz/FuzzOp* from the op samples")

func empty(*wire.Enc) {}

var (
	sampleNonce = bytes.Repeat([]byte{0xa5}, nonceLen)
	sampleProof = bytes.Repeat([]byte{0x3c}, 32)
	sampleID    = bytes.Repeat([]byte{0x11}, 32)
)

// opSamples are representative values of every op, each with the layout
// its argument section had before the op types (raw wire.Enc calls).
var opSamples = []optest.Sample{
	{
		Op: opHello.OpInfo,
		Requests: []optest.Value{optest.V(&helloRequest{Version: protoVersion, Name: "storage site", Nonce: sampleNonce}, func(e *wire.Enc) {
			e.U8(protoVersion)
			e.String("storage site")
			e.Blob(sampleNonce)
		})},
		Responses: []optest.Value{optest.V(&helloResponse{}, empty)},
	},
	{
		Op:        opAuth.OpInfo,
		Requests:  []optest.Value{optest.V(&authRequest{Nonce: sampleNonce, Proof: sampleProof}, func(e *wire.Enc) { e.Blob(sampleNonce); e.Blob(sampleProof) })},
		Responses: []optest.Value{optest.V(&authResponse{Proof: sampleProof}, func(e *wire.Enc) { e.Blob(sampleProof) })},
	},
	{
		Op: opOffer.OpInfo,
		Requests: []optest.Value{optest.V(&offerRequest{ID: sampleID, Size: 1 << 30, Name: "out/run1.tsv", Window: DefaultWindow, AckEvery: 4 << 10}, func(e *wire.Enc) {
			e.Blob(sampleID)
			e.I64(1 << 30)
			e.String("out/run1.tsv")
			e.U32(DefaultWindow)
			e.U32(4 << 10)
		})},
		Responses: []optest.Value{optest.V(&offerResponse{Offset: 4 << 20}, func(e *wire.Enc) { e.I64(4 << 20) })},
	},
	{
		Op:        opData.OpInfo,
		Requests:  []optest.Value{optest.V(&dataRequest{Offset: 256 << 10}, func(e *wire.Enc) { e.I64(256 << 10) })},
		Responses: []optest.Value{optest.V(&dataResponse{}, empty)},
	},
	{
		Op:        opAck.OpInfo,
		Requests:  []optest.Value{optest.V(&ackRequest{Acked: 6 << 20}, func(e *wire.Enc) { e.I64(6 << 20) })},
		Responses: []optest.Value{optest.V(&ackResponse{}, empty)},
	},
	{
		Op:       opDone.OpInfo,
		Requests: []optest.Value{optest.V(&doneRequest{}, empty)},
		Responses: []optest.Value{optest.V(&doneResponse{Result: Result{
			Path: "/store/out/run1.tsv", Size: 123456789, Plugin: "blast",
			Verify: 3 * time.Millisecond, Decode: 2 * time.Second, Commit: 40 * time.Millisecond,
		}}, func(e *wire.Enc) {
			e.String("/store/out/run1.tsv")
			e.I64(123456789)
			e.String("blast")
			e.I64(int64(3 * time.Millisecond))
			e.I64(int64(2 * time.Second))
			e.I64(int64(40 * time.Millisecond))
		})},
	},
	{
		Op:        opProbe.OpInfo,
		Requests:  []optest.Value{optest.V(&probeRequest{}, empty)},
		Responses: []optest.Value{optest.V(&probeResponse{}, empty)},
	},
	{
		Op:        opProbeEnd.OpInfo,
		Requests:  []optest.Value{optest.V(&probeEndRequest{}, empty)},
		Responses: []optest.Value{optest.V(&probeEndResponse{Bytes: 1 << 26}, func(e *wire.Enc) { e.I64(1 << 26) })},
	},
	{
		Op:        opPing.OpInfo,
		Requests:  []optest.Value{optest.V(&pingRequest{}, empty)},
		Responses: []optest.Value{optest.V(&pingResponse{}, empty)},
	},
	{
		Op:       opRates.OpInfo,
		Requests: []optest.Value{optest.V(&ratesRequest{}, empty)},
		Responses: []optest.Value{
			optest.V(&ratesResponse{Rates: Rates{Speed: 2.5e9, Plugins: []PluginRate{
				{Plugin: "blast", Regenerations: 3, Rate: 1.6e6, Speed: 2.4e9},
				{Plugin: "zstd", Regenerations: 1, Rate: 800e6, Speed: 2.6e9},
			}}}, func(e *wire.Enc) {
				e.U64(math.Float64bits(2.5e9))
				e.Uvarint(2)
				e.String("blast")
				e.I64(3)
				e.U64(math.Float64bits(1.6e6))
				e.U64(math.Float64bits(2.4e9))
				e.String("zstd")
				e.I64(1)
				e.U64(math.Float64bits(800e6))
				e.U64(math.Float64bits(2.6e9))
			}),
			// A receiver that has regenerated nothing yet.
			optest.V(&ratesResponse{Rates: Rates{Speed: 1e9}}, func(e *wire.Enc) {
				e.U64(math.Float64bits(1e9))
				e.Uvarint(0)
			}),
		},
	},
}

func TestOpTable(t *testing.T) {
	optest.CheckTable(t, ops, ops.Name, opSamples)
}

func TestOpRoundTrip(t *testing.T) {
	optest.CheckSamples(t, opSamples)
	if *updateCorpus {
		if err := optest.WriteCorpus("testdata/fuzz", opSamples); err != nil {
			t.Fatal(err)
		}
	}
}

func sample(t testing.TB, op wire.OpInfo) optest.Sample { return optest.Find(t, opSamples, op) }

func FuzzOpHello(f *testing.F)    { optest.Fuzz(f, sample(f, opHello.OpInfo)) }
func FuzzOpAuth(f *testing.F)     { optest.Fuzz(f, sample(f, opAuth.OpInfo)) }
func FuzzOpOffer(f *testing.F)    { optest.Fuzz(f, sample(f, opOffer.OpInfo)) }
func FuzzOpData(f *testing.F)     { optest.Fuzz(f, sample(f, opData.OpInfo)) }
func FuzzOpAck(f *testing.F)      { optest.Fuzz(f, sample(f, opAck.OpInfo)) }
func FuzzOpDone(f *testing.F)     { optest.Fuzz(f, sample(f, opDone.OpInfo)) }
func FuzzOpProbe(f *testing.F)    { optest.Fuzz(f, sample(f, opProbe.OpInfo)) }
func FuzzOpProbeend(f *testing.F) { optest.Fuzz(f, sample(f, opProbeEnd.OpInfo)) }
func FuzzOpPing(f *testing.F)     { optest.Fuzz(f, sample(f, opPing.OpInfo)) }
func FuzzOpRates(f *testing.F)    { optest.Fuzz(f, sample(f, opRates.OpInfo)) }

// A rate the cost model would divide by must be a finite, non-negative
// number: a receiver cannot make the sender price with NaN or -Inf.
func TestRatesRefusesNonRates(t *testing.T) {
	for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), -1} {
		var e wire.Enc
		e.U64(math.Float64bits(v))
		e.Uvarint(0)
		var r ratesResponse
		if err := r.Decode(wire.NewDec(e.Bytes())); err == nil || !strings.Contains(err.Error(), "speed") {
			t.Errorf("speed %v: %v", v, err)
		}
	}
}

// An answer that does not decode is reported as such, not as a lost
// connection (the sender would be told to resume a transfer that cannot).
func TestLostKeepsMalformedAnswer(t *testing.T) {
	var r offerResponse
	err := r.Decode(wire.NewDec([]byte{1, 2}))
	err = lost(t.Context(), fmt.Errorf("%w: offer: %w", errMalformedAnswer, err), 0, 10)
	if !errors.Is(err, errMalformedAnswer) || strings.Contains(err.Error(), "connection to the receiver lost") {
		t.Fatalf("lost(malformed answer) = %v", err)
	}
	if err := lost(t.Context(), io.ErrUnexpectedEOF, 3, 10); !strings.Contains(err.Error(), "lost after it acknowledged 3 of 10 bytes") {
		t.Fatalf("lost(EOF) = %v", err)
	}
}

// A receiver of protocol version 1 (acknowledgements every 32 KiB, no
// ack every in the offer) is refused at its hello, naming both versions,
// before the sender writes anything.
func TestOldReceiverRefusedAtHello(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan int, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- -1
			return
		}
		defer c.Close()
		writeFrame(c, opHello.OpInfo, 0, helloRequest{Version: 1, Name: "old", Nonce: sampleNonce})
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		n, _ := io.Copy(io.Discard, c)
		got <- int(n)
	}()
	_, _, _, err = dialRates(context.Background(), &SendOptions{Addr: ln.Addr().String(), Key: make([]byte, 32)})
	if want := fmt.Sprintf("receiver speaks medic protocol 1, we speak %d", protoVersion); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("dial a version 1 receiver: %v, want a refusal naming both versions", err)
	}
	if n := <-got; n != 0 {
		t.Errorf("the sender wrote %d bytes to a version 1 receiver, want none", n)
	}
}

package medic_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pario/pario/medic"
	"github.com/pario/pario/medic/medictest"
)

// A link that stops carrying anything mid-send (a firewall that drops a
// long connection's packets, a receiver host gone without a reset): the
// sender gives up once the receiver has acknowledged nothing for
// StallTimeout with bytes outstanding, says so, and says the part sent
// can be resumed. Before, it waited on its window for as long as the
// kernel kept the connection (about 15 minutes of retransmissions), and
// here, where the proxy keeps it up, for ever.
func TestSendGivesUpOnAStalledLink(t *testing.T) {
	s := &site{key: medictest.Key(t)}
	startServer(t, s, nil, nil)
	path := writeFile(t, "big.bin", incompressible(4, 4<<20))
	proxy := startProxy(t, "stall", s.addr)
	if _, err := proxy.Toxics.AddToxicJson(strings.NewReader(
		`{"name":"bw","type":"bandwidth","stream":"upstream","attributes":{"rate":500}}`)); err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(500 * time.Millisecond)
		// Nothing passes any more, and the connection stays open.
		_, _ = proxy.Toxics.AddToxicJson(strings.NewReader(
			`{"name":"blackhole","type":"timeout","stream":"upstream","attributes":{"timeout":0}}`))
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	_, err := medic.SendFile(ctx, path, medic.SendFileOptions{
		Encode:   medic.EncodeOptions{Plugin: "raw", Cipher: medic.CipherXChaCha20Poly1305, Key: s.key},
		Send:     medic.SendOptions{Addr: proxy.Listen, Key: s.key, StallTimeout: 2 * time.Second},
		SpoolDir: t.TempDir(),
	})
	took := time.Since(start)
	t.Logf("after %v: %v", took.Round(time.Millisecond), err)
	if err == nil {
		t.Fatal("a send over a link that stopped carrying anything succeeded")
	}
	if errors.Is(err, context.DeadlineExceeded) || took > 10*time.Second {
		t.Fatalf("the sender waited %v on a link that stalled 0.5 s in, with a 2 s stall timeout", took)
	}
	for _, want := range []string{"acknowledged nothing for 2s", "send again to resume"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q: %v", want, err)
		}
	}
}

// Measuring the link (send --plan-first, plan --measure) over a link that
// stops carrying data gives up after StallTimeout too (before, it waited
// until the caller's context ended: for ever from the command line).
func TestMeasureGivesUpOnAStalledLink(t *testing.T) {
	s := &site{key: medictest.Key(t)}
	startServer(t, s, nil, nil)
	proxy := startProxy(t, "stall", s.addr)
	if _, err := proxy.Toxics.AddToxicJson(strings.NewReader(
		`{"name":"bw","type":"bandwidth","stream":"upstream","attributes":{"rate":200}}`)); err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(300 * time.Millisecond)
		_, _ = proxy.Toxics.AddToxicJson(strings.NewReader(
			`{"name":"blackhole","type":"timeout","stream":"upstream","attributes":{"timeout":0}}`))
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	_, _, err := medic.MeasureBandwidth(ctx, medic.SendOptions{Addr: proxy.Listen, Key: s.key, StallTimeout: 2 * time.Second}, 5*time.Second, 0)
	took := time.Since(start)
	t.Logf("after %v: %v", took.Round(time.Millisecond), err)
	if err == nil || errors.Is(err, context.DeadlineExceeded) || took > 10*time.Second {
		t.Fatalf("measuring a link that stalled 0.3 s in, with a 2 s stall timeout: %v after %v", err, took)
	}
	if !errors.Is(err, medic.ErrStalled) || !strings.Contains(err.Error(), "measuring the link") {
		t.Errorf("the error does not say the measurement stalled: %v", err)
	}
}

// A sender that paces itself (RateLimit) asks for acknowledgements often
// enough that its own pacing never looks like a stall (before the fix the
// receiver acknowledged every 32 KiB whatever the limit, and a 40 kB/s
// send with a 0.5 s stall timeout failed as stalled); a limit too low for
// even the smallest acknowledgement within the timeout is refused.
func TestRateLimitedSendIsNotAStall(t *testing.T) {
	s := &site{key: medictest.Key(t)}
	startServer(t, s, nil, nil)
	p := writeFile(t, "big.bin", incompressible(7, 96<<10))
	// 40 kB/s: 32 KiB, the usual acknowledgement, would take 0.8 s.
	_, err := sendFile(t, s, p, "raw", medic.SendOptions{RateLimit: 40e3, StallTimeout: 500 * time.Millisecond})
	if errors.Is(err, medic.ErrStalled) {
		t.Fatalf("a rate-limited send over a healthy link: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	_, err = sendFile(t, s, p, "raw", medic.SendOptions{RateLimit: 1000, StallTimeout: 5 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "rate limit of 1000 bytes/s") || !strings.Contains(err.Error(), "stall timeout") {
		t.Errorf("a limit of 1000 bytes/s with a 5 s stall timeout: %v, want a refusal naming both", err)
	}
}

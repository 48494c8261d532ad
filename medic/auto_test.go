package medic_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pario/pario/medic"
	"github.com/pario/pario/medic/cost"
	"github.com/pario/pario/medic/medictest"
)

// slowRegenPlugin stands for a semantic plugin whose regeneration is slow at
// the storage site but not here (a bigger database, a slower or loaded
// machine): its metadata is a seed and a count from the output's first
// line, and it regenerates the output from them after waiting for the
// site's resource slowregen-test.delay.
type slowRegenPlugin struct{}

func (slowRegenPlugin) Name() string { return "slowregen-test" }

func (slowRegenPlugin) Encode(_ context.Context, src medic.Source, meta io.Writer) error {
	f, err := os.Open(src.Path)
	if err != nil {
		return err
	}
	defer f.Close()
	first, err := bufio.NewReader(f).ReadString('\n')
	if err != nil {
		return fmt.Errorf("slowregen-test: %s has no first line: %w", src.Path, err)
	}
	_, err = io.WriteString(meta, first)
	return err
}

func (slowRegenPlugin) Decode(ctx context.Context, meta io.Reader, out io.Writer, env medic.Env) error {
	var seed uint64
	var n int
	if _, err := fmt.Fscanf(meta, "seed %d lines %d\n", &seed, &n); err != nil {
		return fmt.Errorf("slowregen-test metadata: %w", err)
	}
	if d, ok := env.Resources["slowregen-test.delay"]; ok {
		dt, err := time.ParseDuration(d)
		if err != nil {
			return err
		}
		select {
		case <-time.After(dt):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	_, err := out.Write(slowOutput(seed, n))
	return err
}

// slowOutput is what slowregen-test regenerates: hex lines (zstd halves them).
func slowOutput(seed uint64, n int) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d lines %d\n", seed, n)
	r := rand.New(rand.NewPCG(seed, 1))
	for range n {
		fmt.Fprintf(&b, "%016x%016x%016x\n", r.Uint64(), r.Uint64(), r.Uint64())
	}
	return []byte(b.String())
}

func init() { medic.Register(slowRegenPlugin{}) }

// The case: a receiver that regenerates slowly (here: 1.5 s for
// slowregen-test, which regenerates in no time at the sender). Over a fast
// link zstd is cheaper by the cost model once g is the receiver's; a plan
// that prices g with the sender's own calibration sends the semantic
// plugin anyway.
func TestAutoPricesTheReceiversRegeneration(t *testing.T) {
	s := &site{key: medictest.Key(t)}
	startServer(t, s, map[string]string{"slowregen-test.delay": "1500ms"}, nil)
	path := writeFile(t, "out.txt", slowOutput(7, 40000)) // 2 MB
	// An earlier send with slowregen-test: the receiver now knows how fast it
	// regenerates with it.
	if _, err := sendFile(t, s, path, "slowregen-test", medic.SendOptions{}); err != nil {
		t.Fatal(err)
	}
	p, err := medic.MakePlan(context.Background(), medic.PlanRequest{
		Path: path, Plugins: []string{"slowregen-test", "zstd"},
		Encode:  medic.EncodeOptions{Cipher: medic.CipherXChaCha20Poly1305, Key: s.key},
		Link:    cost.Link{B: 20e6, RoundTrip: medic.RoundTrips},
		Measure: medic.SendOptions{Addr: s.addr, Key: s.key},
	})
	if err != nil {
		t.Fatal(err)
	}
	var buf strings.Builder
	_ = p.WriteText(&buf)
	t.Logf("plan:\n%s", buf.String())
	if p.Choices[0].Name == "slowregen-test" {
		t.Fatalf("chose slowregen-test, which regenerates in 1.5 s at the receiver, over a 20 MB/s link")
	}
	for _, c := range p.Choices {
		if c.Name == "slowregen-test" && c.G < 1 {
			t.Errorf("slowregen-test priced with g = %.3f s; the receiver takes 1.5 s", c.G)
		}
	}
}

// slowConn lets its first free bytes through at once and then writes at
// rate bytes/s, as a link behind a buffer (or a proxy's first chunk) does.
type slowConn struct {
	net.Conn
	free int
	rate float64
}

func (c *slowConn) Write(p []byte) (int, error) {
	if c.free > 0 {
		n := min(c.free, len(p))
		c.free -= n
		if _, err := c.Conn.Write(p[:n]); err != nil {
			return 0, err
		}
		if n == len(p) {
			return n, nil
		}
		m, err := c.Write(p[n:])
		return n + m, err
	}
	time.Sleep(time.Duration(float64(len(p)) / c.rate * float64(time.Second)))
	return c.Conn.Write(p)
}

// A rough measure of the link is not one frame's: 128 KiB that pass at
// once must not make a 2 MB/s link look like a loopback.
func TestRoughBandwidthIsTheLinks(t *testing.T) {
	s := &site{key: medictest.Key(t)}
	startServer(t, s, nil, nil)
	const rate = 2e6
	o := medic.SendOptions{Addr: s.addr, Key: s.key, Dial: func(ctx context.Context, addr string) (net.Conn, error) {
		var d net.Dialer
		nc, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		return &slowConn{Conn: nc, free: 128 << 10, rate: rate}, nil
	}}
	b, _, err := medic.MeasureBandwidth(context.Background(), o, 0, 64<<20)
	if err != nil {
		t.Fatal(err)
	}
	// Loose bounds (sleeps overshoot on a loaded machine); the defect
	// measured the 128 KiB that pass at once: a hundred times the rate.
	if b < rate/4 || b > 4*rate {
		t.Errorf("rough bandwidth %.3g B/s over a %.3g B/s link", b, rate)
	}
}

// --bwlimit holds for a container smaller than the window: it went in one
// burst, as fast as loopback, before frames were cut to the limit.
func TestRateLimitHoldsForSmallContainers(t *testing.T) {
	s := &site{key: medictest.Key(t)}
	startServer(t, s, nil, nil)
	path := writeFile(t, "out.bin", slowOutput(3, 5000)) // 245 KB, incompressible enough
	rep, err := sendFile(t, s, path, "raw", medic.SendOptions{RateLimit: 1e6})
	if err != nil {
		t.Fatal(err)
	}
	sr := rep.Send
	if rate := float64(sr.Sent) / sr.Transfer.Seconds(); rate > 1.25e6 {
		t.Errorf("%d bytes in %v: %.3g B/s over a 1 MB/s limit", sr.Sent, sr.Transfer, rate)
	}
}

// The send that follows a plan sends the container the plan encoded for
// the plugin it chose, not a second encoding, and the other candidates'
// containers do not stay in the spool.
func TestAutoSendReusesThePlansContainer(t *testing.T) {
	s := &site{key: medictest.Key(t)}
	startServer(t, s, nil, nil)
	path := writeFile(t, "out.txt", report(20000))
	spool := filepath.Join(filepath.Dir(path), "spool")
	eo := medic.EncodeOptions{Cipher: medic.CipherXChaCha20Poly1305, Key: s.key}
	p, err := medic.MakePlan(context.Background(), medic.PlanRequest{
		Path: path, Plugins: []string{"zstd"}, Encode: eo,
		Link:  cost.Link{B: 1e6, RoundTrip: medic.RoundTrips},
		Spool: spool,
	})
	if err != nil {
		t.Fatal(err)
	}
	if p.Choices[0].Name != "zstd" {
		t.Fatalf("chose %s, want zstd on a 1 MB/s link", p.Choices[0].Name)
	}
	left, _ := filepath.Glob(filepath.Join(spool, "*"))
	if len(left) != 1 || p.Container != left[0] {
		t.Fatalf("spool holds %v after the plan, want only the chosen container %q", left, p.Container)
	}
	eo.Plugin = p.Choices[0].Name
	rep, err := medic.SendFile(context.Background(), path, medic.SendFileOptions{
		Encode: eo, Send: medic.SendOptions{Addr: s.addr, Key: s.key}, SpoolDir: spool})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Reused || rep.Encode != 0 {
		t.Errorf("the send encoded again (reused %v, encode %v): the plan's container was not reused", rep.Reused, rep.Encode)
	}
	if left, _ := filepath.Glob(filepath.Join(spool, "*")); len(left) != 0 {
		t.Errorf("spool holds %v after the send", left)
	}
}

// ratedPlugin is zstd's output framing with a stated regeneration rate:
// it counts its regenerations, so that a test sees whether a plan
// regenerated here to price it.
type ratedPlugin struct{}

var ratedEncodes, ratedDecodes atomic.Int64

const ratedRate = 1e6 // output bytes/s at medic.ReferenceSpeed

func (ratedPlugin) Name() string       { return "rated-test" }
func (ratedPlugin) RegenRate() float64 { return ratedRate }

func (ratedPlugin) Encode(_ context.Context, src medic.Source, meta io.Writer) error {
	ratedEncodes.Add(1)
	f, err := os.Open(src.Path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(meta, f)
	return err
}

func (ratedPlugin) Decode(_ context.Context, meta io.Reader, out io.Writer, _ medic.Env) error {
	ratedDecodes.Add(1)
	_, err := io.Copy(out, meta)
	return err
}

func init() { medic.Register(ratedPlugin{}) }

// A receiver with no record of a plugin that states its rate: the plan
// prices g from that rate at the receiver's speed and regenerates nothing
// here; after one send with it the receiver's record prices it.
func TestAutoPricesFromTheStatedRateWithoutRegenerating(t *testing.T) {
	s := &site{key: medictest.Key(t)}
	startServer(t, s, nil, nil)
	path := writeFile(t, "out.txt", report(20000))
	st, _ := os.Stat(path)
	req := medic.PlanRequest{
		Path: path, Plugins: []string{"rated-test", "zstd"},
		Encode:  medic.EncodeOptions{Cipher: medic.CipherXChaCha20Poly1305, Key: s.key},
		Link:    cost.Link{B: 50e3, RoundTrip: medic.RoundTrips}, // slow enough that rated-test may win
		Measure: medic.SendOptions{Addr: s.addr, Key: s.key},
	}
	ratedDecodes.Store(0)
	p, err := medic.MakePlan(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if n := ratedDecodes.Load(); n != 0 {
		t.Errorf("the plan regenerated rated-test %d times here to price it; it states its rate", n)
	}
	if p.GFrom["rated-test"] != medic.GDefault {
		t.Errorf("rated-test's g from %q, want %q", p.GFrom["rated-test"], medic.GDefault)
	}
	want := float64(st.Size()) / ratedRate * medic.ReferenceSpeed / p.Receiver.Speed
	for _, c := range p.Choices {
		if c.Name == "rated-test" && math.Abs(c.G-want) > 1e-9*want {
			t.Errorf("rated-test priced g = %.4f s, want %.4f s (its rate at the receiver's speed)", c.G, want)
		}
	}
	if _, err := sendFile(t, s, path, "rated-test", medic.SendOptions{}); err != nil {
		t.Fatal(err)
	}
	if p, err = medic.MakePlan(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if p.GFrom["rated-test"] != medic.GReceiver {
		t.Errorf("after a send, rated-test's g from %q, want the receiver's record", p.GFrom["rated-test"])
	}
}

// A plugin whose g alone (no metadata, no encoding) loses to raw is not
// encoded to be priced: the plan skips it and says why.
func TestAutoSkipsWhatCannotWinWithoutEncoding(t *testing.T) {
	s := &site{key: medictest.Key(t)}
	startServer(t, s, nil, nil)
	path := writeFile(t, "out.txt", report(20000))
	ratedEncodes.Store(0)
	// rated-test regenerates about 1 MB/s; the link moves 100 MB/s.
	p, err := medic.MakePlan(context.Background(), medic.PlanRequest{
		Path: path, Plugins: []string{"rated-test", "zstd"},
		Encode:  medic.EncodeOptions{Cipher: medic.CipherXChaCha20Poly1305, Key: s.key},
		Link:    cost.Link{B: 100e6, RoundTrip: medic.RoundTrips},
		Measure: medic.SendOptions{Addr: s.addr, Key: s.key},
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := ratedEncodes.Load(); n != 0 {
		t.Errorf("the plan encoded rated-test %d times; its g alone loses to raw", n)
	}
	var skipped error
	for _, sk := range p.Skipped {
		if sk.Plugin == "rated-test" {
			skipped = sk.Err
		}
	}
	if skipped == nil || !strings.Contains(skipped.Error(), "cannot win") {
		t.Errorf("rated-test not skipped as one that cannot win: %+v", p.Skipped)
	}
	if len(p.Choices) != 2 {
		t.Errorf("choices %+v, want raw and zstd", p.Choices)
	}
}

// With every g from the receiver's records, a plan neither regenerates
// here nor probes this site's speed (50 ms of every CPU).
func TestAutoWithRecordsProbesNothingHere(t *testing.T) {
	s := &site{key: medictest.Key(t)}
	startServer(t, s, nil, nil)
	path := writeFile(t, "out.txt", report(2000))
	for _, pl := range []string{"raw", "zstd"} {
		if _, err := sendFile(t, s, path, pl, medic.SendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	p, err := medic.MakePlan(context.Background(), medic.PlanRequest{
		Path: path, Plugins: []string{"zstd"},
		Encode:  medic.EncodeOptions{Cipher: medic.CipherXChaCha20Poly1305, Key: s.key},
		Link:    cost.Link{B: 1e6, RoundTrip: medic.RoundTrips},
		Measure: medic.SendOptions{Addr: s.addr, Key: s.key},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"raw", "zstd"} {
		if p.GFrom[n] != medic.GReceiver {
			t.Errorf("%s's g from %q, want the receiver's record", n, p.GFrom[n])
		}
	}
	if p.LocalSpeed != 0 {
		t.Errorf("the plan probed this site's speed (%.3g) though no price needed it", p.LocalSpeed)
	}
}

// send --auto's send goes over the plan's connection: it dials nothing,
// and the output arrives as with a fresh one.
func TestAutoSendReusesThePlansConnection(t *testing.T) {
	s := &site{key: medictest.Key(t)}
	startServer(t, s, nil, nil)
	path := writeFile(t, "out.txt", report(20000))
	spool := filepath.Join(filepath.Dir(path), "spool")
	eo := medic.EncodeOptions{Cipher: medic.CipherXChaCha20Poly1305, Key: s.key}
	var dials atomic.Int64
	dial := func(ctx context.Context, addr string) (net.Conn, error) {
		dials.Add(1)
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}
	p, err := medic.MakePlan(context.Background(), medic.PlanRequest{
		Path: path, Plugins: []string{"zstd"}, Encode: eo,
		Link:    cost.Link{RoundTrip: medic.RoundTrips},
		Measure: medic.SendOptions{Addr: s.addr, Key: s.key, Dial: dial},
		Spool:   spool, KeepSession: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if p.Session == nil {
		t.Fatal("no session kept with KeepSession")
	}
	defer p.Session.Close()
	planDials := dials.Load()
	d, _ := cost.Decide(p.Choices)
	eo.Plugin = d.Best.Name
	rep, err := medic.SendFile(context.Background(), path, medic.SendFileOptions{
		Encode: eo, Send: medic.SendOptions{Addr: s.addr, Key: s.key, Dial: dial, Session: p.Session}, SpoolDir: spool})
	if err != nil {
		t.Fatal(err)
	}
	if n := dials.Load() - planDials; n != 0 {
		t.Errorf("the send dialled %d times, want 0 (the plan's connection)", n)
	}
	if rep.Send == nil || rep.Send.Result.Path == "" {
		t.Errorf("send report %+v: nothing stored", rep.Send)
	}
	// The session is used once: closing it after the send is harmless.
	if err := p.Session.Close(); err != nil {
		t.Errorf("close after the send: %v", err)
	}
}

// stuckEncodePlugin states a fast regeneration, so that send --auto
// prices it as a winner over a slow link, and its encode never finishes
// before it is cancelled.
type stuckEncodePlugin struct{}

func (stuckEncodePlugin) Name() string       { return "stuckencode-test" }
func (stuckEncodePlugin) RegenRate() float64 { return 1e9 }

func (stuckEncodePlugin) Encode(ctx context.Context, _ medic.Source, _ io.Writer) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Minute):
		return errors.New("stuckencode-test: not cancelled within a minute")
	}
}

func (stuckEncodePlugin) Decode(context.Context, io.Reader, io.Writer, medic.Env) error {
	return errors.New("stuckencode-test: never sent")
}

func init() { medic.Register(stuckEncodePlugin{}) }

// A plugin whose encode began beside the send and was stopped when the
// send ended is reported as such, not as one that "could not win" (what
// the report said of it before).
func TestAutoReportsAnEncodeTheSendOutran(t *testing.T) {
	s := &site{key: medictest.Key(t)}
	startServer(t, s, nil, nil)
	path := writeFile(t, "out.txt", report(2000))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := medic.SendAuto(ctx, path, medic.AutoOptions{
		Plugins:  []string{"stuckencode-test"},
		Encode:   medic.EncodeOptions{Cipher: medic.CipherXChaCha20Poly1305, Key: s.key},
		Send:     medic.SendOptions{Addr: s.addr, Key: s.key, Name: "out.txt"},
		SpoolDir: t.TempDir(),
		// Given as slow, so that the plugin is encoded from the start;
		// the loopback link is fast, so zstd's send ends first.
		Link: cost.Link{B: 10e3, RTT: 0.001},
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Chosen != "zstd" {
		t.Fatalf("sent with %s, want zstd", rep.Chosen)
	}
	var b strings.Builder
	if err := rep.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	if !strings.Contains(text, "stuckencode-test") || !strings.Contains(text, "stopped, the send ended first") || strings.Contains(text, "could not win") {
		t.Errorf("the report does not say the plugin's encode was stopped by the send's end:\n%s", text)
	}
}

package medic

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pario/pario/wire"
)

// SendOptions configure the compute-site sender.
type SendOptions struct {
	Addr string // receiver, HOST:PORT
	Key  []byte
	TLS  *tls.Config // nil: plain TCP
	// Name is the destination name at the receiver (relative path).
	Name string
	// Window bounds the bytes in flight beyond the receiver's last
	// acknowledgement (default DefaultWindow). Like a TCP window, one
	// stream then moves at most Window/RTT.
	Window int
	// Buffer sizes the socket's send and receive buffers (bytes; 0 leaves
	// them to the kernel's autotuning): cost.SocketBuffer of the link's
	// bandwidth and RTT, as the paper sized them to the bandwidth-delay
	// product. Send widens Window to it, so that neither limits one
	// stream below the link.
	Buffer int
	// RateLimit caps the sending rate in bytes/s (0: none).
	RateLimit float64
	// Progress, when set, is called as acknowledgements arrive with the
	// bytes the receiver holds and the total.
	Progress func(done, total int64)
	// HandshakeTimeout bounds TLS and authentication (default
	// wire.HandshakeTimeout).
	HandshakeTimeout time.Duration
	// StallTimeout ends a send once the receiver has acknowledged
	// nothing for this long while bytes it has not acknowledged are on
	// their way, or the offer is unanswered (default DefaultStallTimeout):
	// a link that stopped carrying anything, or a receiver that stopped.
	// The regeneration after the last byte is not bounded by it.
	StallTimeout time.Duration
	// Dial replaces net.Dialer for tests.
	Dial func(ctx context.Context, addr string) (net.Conn, error)
	// Session, when set, is an authenticated connection to Addr (a plan's,
	// Plan.Session) that the first Send uses instead of dialling; Send
	// takes it over and closes it. A later Send (a resumption, a
	// fallback) dials.
	Session *Session
}

// Session is an authenticated connection to a receiver, kept open by a
// plan for the send that follows it.
type Session struct {
	mu sync.Mutex
	c  *sclient
}

// take hands the connection over once; nil after.
func (s *Session) take() *sclient {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.c
	s.c = nil
	return c
}

// Close closes the connection unless a Send took it.
func (s *Session) Close() error {
	if c := s.take(); c != nil {
		return c.nc.Close()
	}
	return nil
}

// SendReport is what happened during one Send, phase by phase.
type SendReport struct {
	ID      [32]byte
	Size    int64 // container bytes
	Resumed int64 // bytes the receiver already held
	Sent    int64 // bytes sent this time
	// Connect is the connection, handshake and offer: until the receiver
	// said where to resume.
	Connect time.Duration
	// Transfer is from the first data byte sent to the whole container
	// staged at the receiver; 0 when it held all of it already.
	Transfer time.Duration
	// Receiver is from the whole container staged to the receiver's
	// answer: its checks, the regeneration and the commit (Result has the
	// receiver's own times), or the attempt that ended in an error.
	Receiver time.Duration
	Total    time.Duration // connect to result
	Result   Result
}

type sclient struct {
	nc   net.Conn
	br   *bufio.Reader
	name string
	// rtt is the authentication's round trip (an HMAC on each side
	// besides the network's).
	rtt time.Duration
}

func dial(ctx context.Context, o *SendOptions) (*sclient, error) {
	c, _, err := dialBusy(ctx, o, false)
	return c, err
}

// dialBusy is dialOnce, dialling again while the receiver refuses for
// being at its connection limits (ErrBusy: other senders hold them; they
// end), backing off from 50 ms to 5 s (each wait jittered), for up to
// the stall timeout.
func dialBusy(ctx context.Context, o *SendOptions, wantRates bool) (*sclient, *Rates, error) {
	start, wait := time.Now(), 50*time.Millisecond
	for {
		c, r, err := dialOnce(ctx, o, wantRates)
		if err == nil || !errors.Is(err, ErrBusy) {
			return c, r, err
		}
		if time.Since(start)+wait > o.stall() {
			return nil, nil, fmt.Errorf("%w (dialled again for %v)", err, time.Since(start).Round(time.Millisecond))
		}
		// Jittered: senders refused together do not all come back at
		// the same moment.
		t := time.NewTimer(wait/2 + mrand.N(wait/2+1))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, nil, ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// dialRates connects and authenticates, and asks for the receiver's
// rates in the same round trip as the authentication (the request follows
// the auth frame without waiting for its answer). A receiver older than
// the rates op drops that connection: dialRates then dials again without
// asking, and returns nil rates and why (ratesErr).
func dialRates(ctx context.Context, o *SendOptions) (c *sclient, r *Rates, ratesErr, err error) {
	c, r, err = dialBusy(ctx, o, true)
	if err == nil || !errors.Is(err, errNoRates) {
		return c, r, nil, err
	}
	c, _, err2 := dialBusy(ctx, o, false)
	return c, nil, err, err2
}

// errNoRates marks a receiver that did not answer the rates op.
var errNoRates = errors.New("the receiver did not answer the rates op (older than it?)")

func dialOnce(ctx context.Context, o *SendOptions, wantRates bool) (*sclient, *Rates, error) {
	var nc net.Conn
	var err error
	if o.Dial != nil {
		nc, err = o.Dial(ctx, o.Addr)
	} else {
		var d net.Dialer
		nc, err = d.DialContext(ctx, "tcp", o.Addr)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("connect to receiver %s: %w", o.Addr, err)
	}
	if err := sizeBuffers(nc, o.Buffer); err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("connect to receiver %s: %w", o.Addr, err)
	}
	ht := o.HandshakeTimeout
	if ht == 0 {
		ht = wire.HandshakeTimeout
	}
	_ = nc.SetDeadline(time.Now().Add(ht))
	if o.TLS != nil {
		tc := tls.Client(nc, o.TLS)
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, nil, fmt.Errorf("TLS with %s: %w", o.Addr, err)
		}
		nc = tc
	}
	c := &sclient{nc: nc, br: bufio.NewReaderSize(nc, 64<<10)}
	if err := c.handshake(o.Key, wantRates); err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("receiver %s: %w", o.Addr, err)
	}
	var rates *Rates
	if wantRates {
		var r ratesResponse
		if err := c.answer(opRates.OpInfo, &r, nil); err != nil {
			nc.Close()
			return nil, nil, fmt.Errorf("receiver %s: %w: %w", o.Addr, errNoRates, err)
		}
		rates = &r.Rates
	}
	_ = nc.SetDeadline(time.Time{})
	return c, rates, nil
}

// sizeBuffers sets a TCP connection's send and receive buffers to n bytes
// (the kernel may cap them: net.core.wmem_max and rmem_max on Linux).
// n <= 0, or a connection that is not TCP (a test's pipe), is left alone.
func sizeBuffers(nc net.Conn, n int) error {
	tc, ok := nc.(*net.TCPConn)
	if !ok || n <= 0 {
		return nil
	}
	if err := tc.SetWriteBuffer(n); err != nil {
		return fmt.Errorf("socket send buffer of %d bytes: %w", n, err)
	}
	if err := tc.SetReadBuffer(n); err != nil {
		return fmt.Errorf("socket receive buffer of %d bytes: %w", n, err)
	}
	return nil
}

func (c *sclient) handshake(key []byte, wantRates bool) error {
	f, err := readFrame(c.br, maxPreAuthFrame)
	if err != nil {
		return fmt.Errorf("read hello (is it a `pario medic serve`? with --tls on one side only?): %w", err)
	}
	if f.Op != opHello.Code {
		return fmt.Errorf("expected hello, got op 0x%02x", f.Op)
	}
	if f.Flags&wire.FlagError != 0 {
		return fmt.Errorf("the receiver refused the connection: %w", decodeErr(f.Args))
	}
	var hello helloRequest
	if err := hello.Decode(wire.NewDec(f.Args)); err != nil {
		return err
	}
	c.name = hello.Name
	sn := hello.Nonce
	if hello.Version != protoVersion {
		return fmt.Errorf("receiver speaks medic protocol %d, we speak %d: run the same pario version at both sites", hello.Version, protoVersion)
	}
	cn := make([]byte, nonceLen)
	if _, err := rand.Read(cn); err != nil {
		return err
	}
	frames := wire.AppendFrame(nil, opAuth.Code, 0, 0, encode(authRequest{Nonce: cn, Proof: authProof(key, "client", sn, cn)}), nil)
	if wantRates {
		frames = wire.AppendFrame(frames, opRates.Code, 0, 0, encode(ratesRequest{}), nil)
	}
	t := time.Now()
	if _, err := c.nc.Write(frames); err != nil {
		return err
	}
	f, err = readFrame(c.br, maxPreAuthFrame)
	if err != nil {
		return fmt.Errorf("read auth answer: %w", err)
	}
	c.rtt = time.Since(t)
	if f.Flags&wire.FlagError != 0 {
		if rerr := decodeErr(f.Args); errors.Is(rerr, ErrBusy) {
			// Evicted before it authenticated, to admit another (a flood
			// took its place), and told so as a busy refusal: dialBusy
			// dials again.
			return fmt.Errorf("the receiver refused the connection: %w", rerr)
		}
		return ErrAuth
	}
	var a authResponse
	if a.Decode(wire.NewDec(f.Args)) != nil || !hmac.Equal(a.Proof, authProof(key, "server", sn, cn)) {
		return fmt.Errorf("%w: the receiver could not prove it holds the key", ErrAuth)
	}
	return nil
}

// errMalformedAnswer marks an answer of the receiver that does not decode:
// the connection is fine, so it is not reported as lost.
var errMalformedAnswer = errors.New("malformed answer from the receiver")

// answer reads frames until the answer to op, which it decodes into resp,
// passing acks on as they come.
func (c *sclient) answer(op wire.OpInfo, resp wire.Decoder, acks func(int64)) error {
	for {
		f, err := readFrame(c.br, wire.MaxArgLen)
		if err != nil {
			return err
		}
		if f.Flags&wire.FlagError != 0 {
			return decodeErr(f.Args)
		}
		if f.Op == opAck.Code {
			var a ackRequest
			if err := a.Decode(wire.NewDec(f.Args)); err != nil {
				return fmt.Errorf("%w: ack: %w", errMalformedAnswer, err)
			}
			if acks != nil {
				acks(a.Acked)
			}
			continue
		}
		if f.Op != op.Code {
			return fmt.Errorf("unexpected answer op 0x%02x, waiting for 0x%02x", f.Op, op.Code)
		}
		if err := resp.Decode(wire.NewDec(f.Args)); err != nil {
			return fmt.Errorf("%w: %s: %w", errMalformedAnswer, op.Name, err)
		}
		return nil
	}
}

// DefaultStallTimeout is SendOptions.StallTimeout's default. The receiver
// acknowledges at least every 32 KiB (ProgressAck), so a link carrying
// 1 kB/s or more acknowledges within a quarter of it; a send held to a
// lower RateLimit asks for acknowledgements more often (ackEvery).
const DefaultStallTimeout = 2 * time.Minute

// ackEvery is the acknowledgement interval a send of size bytes asks for:
// AckEvery(size), or less when the sender's own rate limit would take a
// quarter of the stall timeout or more to send it, so that the watchdog
// never blames the link for the limit. A limit too low for even MinAck
// within half the stall timeout is refused.
func ackEvery(size int64, rateLimit float64, stall time.Duration) (int64, error) {
	every := AckEvery(size)
	if rateLimit <= 0 {
		return every, nil
	}
	if float64(MinAck)/rateLimit >= stall.Seconds()/2 {
		return 0, fmt.Errorf("medic: a rate limit of %.0f bytes/s takes %.0f s to carry one acknowledgement's %d bytes, more than half the stall timeout (%v): raise the limit or the stall timeout",
			rateLimit, float64(MinAck)/rateLimit, MinAck, stall)
	}
	return max(MinAck, min(every, int64(rateLimit*stall.Seconds()/4))), nil
}

// ErrStalled is the error of a send whose receiver stopped acknowledging
// (SendOptions.StallTimeout).
var ErrStalled = errors.New("the receiver stopped acknowledging")

// ContainerID is the SHA-256 of a container file: its transfer id.
func ContainerID(path string) (int64, [32]byte, error) { return FileDigest(path) }

// Send transfers the container at path to the receiver and waits until
// it has regenerated, verified and stored the output. If the receiver
// already holds part of this container (an earlier Send was cut short),
// the transfer resumes there. When the receiver answers with an error
// (a RemoteError) the report of what the attempt cost comes with it.
func Send(ctx context.Context, path string, o SendOptions) (*SendReport, error) {
	if o.Window <= 0 {
		o.Window = DefaultWindow
	}
	o.Window = max(o.Window, o.Buffer)
	size, id, err := ContainerID(path)
	if err != nil {
		return nil, err
	}
	rep := &SendReport{ID: id, Size: size}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t0 := time.Now()
	c := o.Session.take()
	if c != nil {
		// The plan's connection: sized for the link it measured.
		if err := sizeBuffers(c.nc, o.Buffer); err != nil {
			c.nc.Close()
			return nil, fmt.Errorf("receiver %s: %w", o.Addr, err)
		}
	} else if c, err = dial(ctx, &o); err != nil {
		return nil, err
	}
	defer c.nc.Close()
	stop := context.AfterFunc(ctx, func() { c.nc.Close() })
	defer stop()
	stall := o.stall()
	var stalled atomic.Bool
	// failed is the error of a send cut short after acked of its bytes
	// reached the receiver.
	failed := func(err error, acked int64) error {
		if stalled.Load() || errors.Is(err, os.ErrDeadlineExceeded) {
			return fmt.Errorf("%w: it acknowledged nothing for %v with bytes on their way, after %d of %d "+
				"(the link stopped carrying data, or the receiver stopped); nothing was stored, the receiver keeps the part it got: send again to resume",
				ErrStalled, stall, acked, size)
		}
		return lost(ctx, err, acked, size)
	}

	// The receiver acknowledges every `every` bytes (asked in the offer,
	// before the offset is known); frames are no larger, so that it can.
	every, err := ackEvery(size, o.RateLimit, stall)
	if err != nil {
		return nil, err
	}
	offer := offerRequest{ID: id[:], Size: size, Name: o.Name, Window: uint32(o.Window), AckEvery: uint32(every)}
	_ = c.nc.SetDeadline(time.Now().Add(stall))
	if err := writeFrame(c.nc, opOffer.OpInfo, 0, offer); err != nil {
		return nil, failed(err, 0)
	}
	var offered offerResponse
	if err := c.answer(opOffer.OpInfo, &offered, nil); err != nil {
		return nil, failed(err, 0)
	}
	_ = c.nc.SetDeadline(time.Time{})
	off := offered.Offset
	rep.Resumed = off
	rep.Connect = time.Since(t0)
	if o.Progress != nil {
		o.Progress(off, size)
	}

	// A reader goroutine takes acknowledgements and the final answer.
	var (
		mu     sync.Mutex
		cond   = sync.NewCond(&mu)
		acked  = off
		rdErr  error
		result *doneResponse
		tAcked time.Time // when the receiver held the whole container
		// progressAt is when the receiver last acknowledged, or when
		// bytes went out with none outstanding: the stall watchdog
		// counts from it.
		progressAt = time.Now()
		sent       = off
	)
	go func() {
		var done doneResponse
		err := c.answer(opDone.OpInfo, &done, func(n int64) {
			mu.Lock()
			if n > acked {
				acked = n
			}
			progressAt = time.Now()
			if n == size && tAcked.IsZero() {
				tAcked = time.Now()
			}
			cond.Broadcast()
			mu.Unlock()
			if o.Progress != nil {
				o.Progress(n, size)
			}
		})
		mu.Lock()
		if err == nil {
			result = &done
		}
		rdErr = err
		cond.Broadcast()
		mu.Unlock()
	}()

	chunk := min(int(every), max(o.Window/4, MinAck))
	if o.RateLimit > 0 {
		// Frames of 20 ms at the limit: pacing whole window quarters
		// would send a small container in one burst, faster than the
		// limit.
		chunk = min(chunk, max(4096, int(o.RateLimit/50)))
	}
	// The watchdog: a receiver that acknowledges nothing for stall with
	// bytes outstanding is given up on. Closing the connection ends both
	// the writes and the reader.
	watchDone := make(chan struct{})
	defer close(watchDone)
	go func() {
		tick := time.NewTicker(max(min(stall/4, time.Second), time.Millisecond))
		defer tick.Stop()
		for {
			select {
			case <-watchDone:
				return
			case <-tick.C:
			}
			mu.Lock()
			waiting := sent > acked && result == nil && rdErr == nil && time.Since(progressAt) >= stall
			if waiting {
				// Closed under mu: an answer arriving now is not taken
				// between the decision and the close.
				stalled.Store(true)
				c.nc.Close()
			}
			mu.Unlock()
			if waiting {
				return
			}
		}
	}()

	buf := make([]byte, chunk)
	tStart := time.Now()
	var wErr error
	bw := bufio.NewWriterSize(c.nc, 2*chunk)
	for sent < size && wErr == nil {
		// Wait for room in the window.
		mu.Lock()
		for sent-acked >= int64(o.Window) && rdErr == nil && result == nil {
			mu.Unlock()
			if err := bw.Flush(); err != nil {
				wErr = err
			}
			mu.Lock()
			if wErr != nil {
				break
			}
			if sent-acked >= int64(o.Window) && rdErr == nil && result == nil {
				cond.Wait()
			}
		}
		re := rdErr
		mu.Unlock()
		if re != nil {
			return nil, failed(re, acked)
		}
		if wErr != nil {
			break
		}
		n, err := f.ReadAt(buf[:min(int64(chunk), size-sent)], sent)
		if err != nil && !(errors.Is(err, io.EOF) && int64(n) == size-sent) {
			return nil, fmt.Errorf("read container: %w", err)
		}
		frame := wire.AppendFrame(nil, opData.Code, 0, 0, encode(dataRequest{Offset: sent}), [][]byte{buf[:n]})
		if _, err := bw.Write(frame); err != nil {
			wErr = err
			break
		}
		mu.Lock()
		if sent == acked {
			progressAt = time.Now() // nothing was outstanding until now
		}
		sent += int64(n)
		mu.Unlock()
		if o.RateLimit > 0 {
			if err := bw.Flush(); err != nil {
				wErr = err
				break
			}
			due := tStart.Add(time.Duration(float64(sent-off) / o.RateLimit * float64(time.Second)))
			if dt := time.Until(due); dt > 0 {
				select {
				case <-time.After(dt):
				case <-ctx.Done():
					wErr = ctx.Err()
				}
			}
		}
	}
	if wErr == nil {
		wErr = bw.Flush()
	}
	if wErr == nil {
		wErr = writeFrame(c.nc, opDone.OpInfo, 0, doneRequest{})
	}
	tDone := time.Now()
	rep.Sent = sent - off
	mu.Lock()
	for result == nil && rdErr == nil {
		cond.Wait()
	}
	re, res := rdErr, result
	a := acked
	staged := tAcked
	mu.Unlock()
	// The phases: the transfer ends when the receiver acknowledged the
	// last byte (or, short of an acknowledgement, when done was sent); the
	// rest is the receiver's.
	if staged.IsZero() || staged.Before(tStart) {
		staged = tDone
	}
	if rep.Sent > 0 {
		rep.Transfer = staged.Sub(tStart)
	}
	rep.Receiver = time.Since(staged)
	rep.Total = time.Since(t0)
	if re != nil {
		var remote *RemoteError
		if errors.As(re, &remote) {
			return rep, re // what this attempt cost goes with the receiver's answer
		}
		return nil, failed(re, a)
	}
	if wErr != nil {
		return nil, failed(wErr, a)
	}
	rep.Result = res.Result
	return rep, nil
}

func lost(ctx context.Context, err error, acked, size int64) error {
	if ctx.Err() != nil {
		// Said as the other cuts are: where it stopped, and that it
		// resumes (before, only "context canceled").
		return fmt.Errorf("interrupted (%w) after the receiver acknowledged %d of %d bytes; "+
			"nothing was stored, the receiver keeps the part it got: send again to resume", ctx.Err(), acked, size)
	}
	var remote *RemoteError
	if errors.As(err, &remote) || errors.Is(err, errMalformedAnswer) {
		return err
	}
	if corruptFrame(err) {
		return fmt.Errorf("%w: a frame from the receiver failed its check after it acknowledged %d of %d bytes (%w); "+
			"nothing was stored, the receiver keeps the part it got: send again to resume", ErrTransit, acked, size, err)
	}
	return fmt.Errorf("connection to the receiver lost after it acknowledged %d of %d bytes (receiver crashed or network failed): %w; "+
		"nothing was stored, the receiver keeps the part it got: send again to resume", acked, size, err)
}

// Ping measures one round trip to a receiver (after the handshake).
func Ping(ctx context.Context, o SendOptions) (time.Duration, error) {
	c, err := dial(ctx, &o)
	if err != nil {
		return 0, err
	}
	defer c.nc.Close()
	t := time.Now()
	if err := writeFrame(c.nc, opPing.OpInfo, 0, pingRequest{}); err != nil {
		return 0, err
	}
	if err := c.answer(opPing.OpInfo, &pingResponse{}, nil); err != nil {
		return 0, err
	}
	return time.Since(t), nil
}

// MeasureBandwidth sends probe data to a receiver for about dur (at most
// maxBytes) and returns the bytes/s the receiver took in, and the round
// trip time. With dur <= 0 it stops after the rough rounds (of 16 KiB,
// then 4 times more until one lasts 50 ms): a rough rate.
func MeasureBandwidth(ctx context.Context, o SendOptions, dur time.Duration, maxBytes int64) (bw float64, rtt time.Duration, err error) {
	bw, rtt, _, err = MeasureLink(ctx, o, func(float64, time.Duration) bool { return dur <= 0 }, dur, maxBytes)
	return bw, rtt, err
}

// MeasureLink measures as MeasureBandwidth does, and stops after the
// rough rounds when enough says their rate and the RTT will do (rough is
// then true): a plan whose choice does not depend on a precise B.
func MeasureLink(ctx context.Context, o SendOptions, enough func(bw float64, rtt time.Duration) bool, dur time.Duration, maxBytes int64) (bw float64, rtt time.Duration, roughOnly bool, err error) {
	c, err := dial(ctx, &o)
	if err != nil {
		return 0, 0, false, err
	}
	defer c.nc.Close()
	stop := context.AfterFunc(ctx, func() { c.nc.Close() })
	defer stop()
	bw, rtt, roughOnly, err = c.measure(enough, dur, maxBytes, o.stall())
	if err != nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	return bw, rtt, roughOnly, err
}

// stall is StallTimeout or its default.
func (o *SendOptions) stall() time.Duration {
	if o.StallTimeout > 0 {
		return o.StallTimeout
	}
	return DefaultStallTimeout
}

// measure probes the link. Every write, and every answer it waits for,
// must come within stall, or it gives up with ErrStalled. (A probe's
// answer waits for the bytes queued on the way, at most a round's budget:
// a few seconds' worth at the rough rate, or the socket buffers'.)
func (c *sclient) measure(enough func(float64, time.Duration) bool, dur time.Duration, maxBytes int64, stall time.Duration) (bw float64, rtt time.Duration, roughOnly bool, err error) {
	defer func() {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			err = fmt.Errorf("%w: measuring the link, the receiver took in or answered nothing for %v (the link stopped carrying data, or the receiver stopped)", ErrStalled, stall)
		}
	}()
	progress := func() { _ = c.nc.SetDeadline(time.Now().Add(stall)) }
	defer c.nc.SetDeadline(time.Time{})
	t := time.Now()
	progress()
	if err := writeFrame(c.nc, opPing.OpInfo, 0, pingRequest{}); err != nil {
		return 0, 0, false, err
	}
	if err := c.answer(opPing.OpInfo, &pingResponse{}, nil); err != nil {
		return 0, 0, false, err
	}
	rtt = time.Since(t)
	// Frames of 16 KiB: the first round is one, which a slow link takes
	// long enough to measure (0.3 s at 50 KB/s) without spending more of
	// it on the probe than the output may need.
	buf := make([]byte, 16<<10)
	_, _ = rand.Read(buf)
	frame := wire.AppendFrame(nil, opProbe.Code, 0, 0, encode(probeRequest{}), [][]byte{buf})
	// One round writes n bytes (for at most d, when d > 0) and returns
	// the bytes/s the receiver took in, less a round trip, and how long
	// that took.
	round := func(d time.Duration, n int64) (float64, time.Duration, error) {
		var sent int64
		t0 := time.Now()
		for sent == 0 || sent < n && (d <= 0 || time.Since(t0) < d) {
			progress()
			if _, err := c.nc.Write(frame); err != nil {
				return 0, 0, err
			}
			sent += int64(len(buf))
		}
		progress()
		if err := writeFrame(c.nc, opProbeEnd.OpInfo, 0, probeEndRequest{}); err != nil {
			return 0, 0, err
		}
		var probed probeEndResponse
		if err := c.answer(opProbeEnd.OpInfo, &probed, nil); err != nil {
			return 0, 0, err
		}
		el := time.Since(t0)
		el = max(el-rtt, el/10)
		return float64(probed.Bytes) / el.Seconds(), el, nil
	}
	// Rough rounds of 16 KiB, then four times more until one takes
	// roughMin: a few frames can pass faster than the link (a proxy's
	// first chunk, TCP buffers), a round that lasts is the link's. The
	// rough rate bounds the long round to about dur's worth of bytes:
	// writing as fast as it can for dur would queue megabytes in the
	// socket buffers over a slow link, and the answer would wait for all
	// of them.
	const roughMin = 50 * time.Millisecond
	limit := maxBytes
	if limit <= 0 {
		limit = 64 << 20
	}
	var rough float64
	for n := int64(len(buf)); ; n *= 4 {
		var el time.Duration
		if rough, el, err = round(0, n); err != nil {
			return 0, 0, false, err
		}
		if el >= roughMin || 4*n > limit {
			break
		}
	}
	if enough != nil && enough(rough, rtt) {
		return rough, rtt, true, nil
	}
	budget := min(limit, max(int64(len(buf)), int64(rough*dur.Seconds())))
	if bw, _, err = round(dur, budget); err != nil {
		return 0, 0, false, err
	}
	return bw, rtt, false, nil
}

// SpoolName is the spool file name for an output encoded with o: the same
// output, plugin, parameters, cipher and key give the same name, so an
// interrupted send finds its container again and resumes.
func SpoolName(outDigest [32]byte, o EncodeOptions, dest string) string {
	h := sha256.New()
	fmt.Fprintf(h, "%x\x00%s\x00%v\x00%x\x00%s\x00%d\x00", outDigest, o.Plugin, o.Cipher, KeyID(o.Key), dest, o.ChunkSize)
	h.Write((&Header{Params: o.Params}).encode())
	return fmt.Sprintf("%x.medic", h.Sum(nil)[:16])
}

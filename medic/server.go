package medic

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	"github.com/pario/pario/units"
	"github.com/pario/pario/wire"
)

// ServerConfig configures the storage-site receiver.
type ServerConfig struct {
	// Key is the shared key: senders must prove they hold it, and it
	// opens encrypted containers.
	Key []byte
	// Store receives the regenerated outputs.
	Store Store
	// StagingDir keeps partial uploads by transfer id so that a sender
	// can resume after a crash or a lost connection.
	StagingDir string
	// Resources are the local resources plugins may use (Env.Resources).
	Resources map[string]string
	// TLS, when set, wraps every connection.
	TLS *tls.Config
	// Name identifies the receiver in the handshake (default: hostname).
	Name string
	// IdleTimeout drops a connection that sends nothing for this long
	// (default 5 minutes).
	IdleTimeout time.Duration
	// HandshakeTimeout bounds TLS and authentication (default
	// wire.HandshakeTimeout).
	HandshakeTimeout time.Duration
	// MaxConns and MaxConnsPerPeer bound the connections held at once,
	// in all and from one host (defaults DefaultMaxConns and
	// DefaultMaxConnsPerPeer): past them a connection is refused with
	// the reason, so that connections opened without the key cannot use
	// up the receiver's descriptors and memory. Past a quarter of
	// MaxConns in their handshake, a new connection takes the place of
	// the oldest unauthenticated one (older than a fifth of
	// HandshakeTimeout) from the network holding the most, and a network
	// whose connections keep being evicted is refused for a while
	// (wire.Gate), so that a flood without the key cannot keep honest
	// senders out.
	MaxConns, MaxConnsPerPeer int
	// MaxRegens is how many regenerations run at once (default
	// DefaultMaxRegens); the others wait their turn.
	MaxRegens int
	// StagingTTL is how long a staged part no transfer touches is kept
	// for a resumption (default DefaultStagingTTL; negative: for ever).
	StagingTTL time.Duration
	Logger     *slog.Logger
}

// DefaultMaxRegens is ServerConfig.MaxRegens's default. A regeneration
// may run a search on every CPU (blast runs blast.workers searches at
// once, the CPUs by default), so a site receiving from many senders at
// once would otherwise run as many searches as they sent outputs, each
// with its own memory.
const DefaultMaxRegens = 2

// DefaultStagingTTL is ServerConfig.StagingTTL's default. A part is
// staged for a send that may resume it; a send --auto that switches
// plugins abandons the part of the send it left, and a sender that gave
// up never comes back, so parts are not kept for ever.
const DefaultStagingTTL = 7 * 24 * time.Hour

// Defaults of ServerConfig's connection limits. A sender holds one
// connection per send (two while send --auto switches); a site with many
// senders behind one address (a NAT) may need more per peer.
const (
	DefaultMaxConns        = 1024
	DefaultMaxConnsPerPeer = 64
)

// preAuthBuffer is the read buffer of a connection until it has
// authenticated: the handshake's frames are small (maxPreAuthFrame), and
// a connection opened without the key must cost the receiver little.
const preAuthBuffer = 4 << 10

// connBuffer is the read buffer of an authenticated connection.
const connBuffer = 512 << 10

// Server is the storage-site daemon: it accepts containers, verifies
// them, regenerates the outputs with their plugins, checks the
// regenerated output's digest, and moves it into its store.
type Server struct {
	cfg ServerConfig
	// ctx is canceled by Close: it stops the regenerations under way,
	// and with them the programs plugins run (Command).
	ctx    context.Context
	cancel context.CancelFunc
	mu     sync.Mutex
	active map[string]bool
	gate   *wire.Gate
	// acc accepts, admits through gate and runs the connections.
	acc *wire.Acceptor
	// warnHandshake limits the warnings about failed handshakes, which
	// anyone can cause (no key needed), to a few per interval.
	warnHandshake *wire.LogLimiter
	// wg counts the staging expiry's goroutine.
	wg sync.WaitGroup
	// regenSlots holds a token per regeneration running (MaxRegens).
	regenSlots chan struct{}
	// refusing holds a token per refusal under way over TLS, where the
	// reason goes only after a handshake (maxRefusing).
	refusing chan struct{}
	// regens is the record of regenerations the rates op answers with.
	regens regenLog
	// speed is the latest SpeedProbe, which the rates op answers with
	// while it is younger than SpeedMaxAge (a probe per send would cost
	// every send --auto 50 ms).
	speed speedCache
}

// NewServer checks cfg, makes the staging directory and removes from it
// and from the store what a receiver that died during a regeneration left
// there (its work directory and temporary output), logging each.
func NewServer(cfg ServerConfig) (*Server, error) {
	if len(cfg.Key) != KeySize {
		return nil, fmt.Errorf("medic: server needs a %d-byte key", KeySize)
	}
	if cfg.Store == nil {
		return nil, errors.New("medic: server needs a store")
	}
	if cfg.StagingDir == "" {
		return nil, errors.New("medic: server needs a staging directory")
	}
	if err := CheckResources(context.Background(), cfg.Resources); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.StagingDir, 0o700); err != nil {
		return nil, err
	}
	if cfg.Name == "" {
		cfg.Name, _ = os.Hostname()
	}
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = 5 * time.Minute
	}
	if cfg.HandshakeTimeout == 0 {
		cfg.HandshakeTimeout = wire.HandshakeTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.MaxRegens <= 0 {
		cfg.MaxRegens = DefaultMaxRegens
	}
	if cfg.StagingTTL == 0 {
		cfg.StagingTTL = DefaultStagingTTL
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = DefaultMaxConns
	}
	if cfg.MaxConnsPerPeer <= 0 {
		cfg.MaxConnsPerPeer = DefaultMaxConnsPerPeer
	}
	ctx, cancel := context.WithCancel(context.Background())
	removeStale(ctx, cfg.StagingDir, cfg.Store, cfg.Logger)
	s := &Server{cfg: cfg, ctx: ctx, cancel: cancel, active: map[string]bool{},
		gate:       wire.NewGate(cfg.MaxConns, cfg.MaxConnsPerPeer, wire.DefaultMaxUnauthenticated(cfg.MaxConns), wire.EvictableAfter(cfg.HandshakeTimeout)),
		regenSlots: make(chan struct{}, cfg.MaxRegens), refusing: make(chan struct{}, maxRefusing),
		warnHandshake: wire.NewLogLimiter()}
	s.acc = wire.NewAcceptor(wire.AcceptorConfig{Gate: s.gate, Logger: cfg.Logger, Prefix: "medic: ", Refuse: s.refuseConn})
	s.speedNow() // the first probe, in the background: no rates op waits for one
	if cfg.StagingTTL > 0 {
		s.expireStaged()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			t := time.NewTicker(max(min(cfg.StagingTTL/4, time.Hour), time.Second))
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					s.expireStaged()
				}
			}
		}()
	}
	return s, nil
}

// Serve accepts connections on ln until Close.
func (s *Server) Serve(ln net.Listener) error {
	if s.cfg.TLS != nil {
		ln = tls.NewListener(ln, s.cfg.TLS)
	}
	return s.acc.Serve(context.Background(), ln, s.handle)
}

// refuseConn tells a connection the gate refused why, and closes it.
func (s *Server) refuseConn(c net.Conn, r *wire.Refusal) error {
	why := fmt.Errorf("%w: %s", ErrBusy, r.Reason("receiver "+s.cfg.Name, "--max-conns-per-peer", "--max-conns"))
	if s.cfg.TLS == nil {
		refuse(c, why, refuseTimeout) // one small write on a fresh connection
		return why
	}
	select {
	case s.refusing <- struct{}{}:
		ok := s.acc.Go(func() {
			defer func() { <-s.refusing }()
			refuse(c, why, s.cfg.HandshakeTimeout)
		})
		if ok {
			return why
		}
		<-s.refusing
	default:
	}
	c.Close() // maxRefusing handshakes under way (or closing): no reason given
	return why
}

// Refusals: without TLS the reason is one small write, made in the accept
// loop within refuseTimeout; over TLS it goes only after a handshake, so
// it is made aside, at most maxRefusing at once (past that, connections
// are closed without a reason: a peer flooding the receiver cannot hold
// more goroutines and descriptors than that beyond MaxConns).
const (
	refuseTimeout = 100 * time.Millisecond
	maxRefusing   = 32
)

// refuse tells a peer why it is not served, in place of the hello or,
// evicted in its handshake, of the answer to its proof (a sender prints
// it), and closes the connection.
func refuse(c net.Conn, why error, timeout time.Duration) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	_, _ = c.Write(wire.AppendFrame(nil, opHello.Code, wire.FlagError, 0, encodeErr(why), nil))
}

// tellEvicted tells the peer of a connection evicted in its handshake
// (wire.Gate) why, as a busy refusal in place of the answer to its proof
// (or of the hello): a sender dials again, as when the receiver is full.
// Over TLS that needs the TLS handshake done; one under way is cut.
func (s *Server) tellEvicted(nc net.Conn) {
	if tc, ok := nc.(*tls.Conn); ok && !tc.ConnectionState().HandshakeComplete {
		return
	}
	refuse(nc, fmt.Errorf("%w: %s", ErrBusy, wire.EvictionReason("receiver "+s.cfg.Name)), refuseTimeout)
}

// Close stops the listeners and drops the connections.
func (s *Server) Close() error {
	s.cancel()
	s.acc.Close()
	s.wg.Wait()
	return nil
}

type srvConn struct {
	s   *Server
	nc  net.Conn
	br  *bufio.Reader
	log *slog.Logger
}

func (c *srvConn) reply(op wire.OpInfo, msg wire.Encoder) error {
	return writeFrame(c.nc, op, wire.FlagResponse, msg)
}

func (c *srvConn) fail(op uint8, err error) error {
	c.log.Warn("medic: transfer failed", "err", err)
	_, werr := c.nc.Write(wire.AppendFrame(nil, op, wire.FlagResponse|wire.FlagError, 0, encodeErr(err), nil))
	return werr
}

// errClosed ends a connection after an error answer.
var errClosed = errors.New("connection closed after an error answer")

// failAndClose answers err and ends the connection. The sender may have
// frames in flight: closing with them unread would reset the connection,
// which can discard the answer on its way, so it half-closes and drains
// what still comes (for a bounded time) first.
func (c *srvConn) failAndClose(op uint8, err error) error {
	if werr := c.fail(op, err); werr != nil {
		return werr
	}
	if cw, ok := c.nc.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	_ = c.nc.SetReadDeadline(time.Now().Add(2 * time.Second))
	_, _ = io.Copy(io.Discard, c.br)
	return errClosed
}

func (c *srvConn) read(limit uint32) (wire.Frame, error) {
	_ = c.nc.SetReadDeadline(time.Now().Add(c.s.cfg.IdleTimeout))
	return readFrame(c.br, limit)
}

func (s *Server) handle(nc net.Conn, pass *wire.Pass) {
	defer nc.Close()
	c := &srvConn{s: s, nc: nc, br: bufio.NewReaderSize(nc, preAuthBuffer), log: s.cfg.Logger.With("peer", nc.RemoteAddr().String())}
	if err := c.handshake(pass); err != nil {
		if pass.Evicted() { // logged as the eviction
			s.tellEvicted(nc)
			return
		}
		s.warnHandshake.Warn(c.log, "medic: handshake failed", "err", err)
		return
	}
	// Authenticated: a buffer for data frames, over what the small one
	// already holds.
	c.br = bufio.NewReaderSize(c.br, connBuffer)
	for {
		f, err := c.read(wire.MaxArgLen + maxDataFrame)
		if err != nil {
			if corruptFrame(err) {
				_ = c.failAndClose(0, fmt.Errorf("%w: a frame failed its check (%w)", ErrTransit, err))
			} else if !errors.Is(err, io.EOF) {
				c.log.Debug("medic: connection ended", "err", err)
			}
			return
		}
		switch f.Op {
		case opPing.Code:
			err = c.reply(opPing.OpInfo, pingResponse{})
		case opRates.Code:
			err = c.reply(opRates.OpInfo, ratesResponse{Rates: Rates{Speed: s.speedNow(), Plugins: s.regens.snapshot()}})
		case opProbe.Code:
			err = c.probe(f)
		case opOffer.Code:
			err = c.transfer(f)
		default:
			err = fmt.Errorf("unexpected op 0x%02x", f.Op)
		}
		if err != nil {
			c.log.Debug("medic: connection ended", "err", err)
			return
		}
	}
}

func (c *srvConn) handshake(pass *wire.Pass) error {
	_ = c.nc.SetDeadline(time.Now().Add(c.s.cfg.HandshakeTimeout))
	defer c.nc.SetDeadline(time.Time{})
	sn := make([]byte, nonceLen)
	if _, err := rand.Read(sn); err != nil {
		return err
	}
	if err := writeFrame(c.nc, opHello.OpInfo, 0, helloRequest{Version: protoVersion, Name: c.s.cfg.Name, Nonce: sn}); err != nil {
		return err
	}
	f, err := readFrame(c.br, maxPreAuthFrame)
	if err != nil {
		return err
	}
	if f.Op != opAuth.Code {
		return fmt.Errorf("expected auth, got op 0x%02x", f.Op)
	}
	var a authRequest
	if err := a.Decode(wire.NewDec(f.Args)); err != nil {
		return err
	}
	if len(a.Nonce) != nonceLen || !hmac.Equal(a.Proof, authProof(c.s.cfg.Key, "client", sn, a.Nonce)) {
		// Answered without c.fail's log line: anyone can cause this, and
		// handle's rate-limited warning says it.
		_, _ = c.nc.Write(wire.AppendFrame(nil, opAuth.Code, wire.FlagResponse|wire.FlagError, 0, encodeErr(ErrAuth), nil))
		return ErrAuth
	}
	// Out of the unauthenticated pool before the sender hears it is in,
	// so that nothing evicts it after.
	if !pass.Authenticated() {
		return errors.New("evicted before it authenticated: too many connections were in their handshake")
	}
	return c.reply(opAuth.OpInfo, authResponse{Proof: authProof(c.s.cfg.Key, "server", sn, a.Nonce)})
}

func (c *srvConn) probe(first wire.Frame) error {
	n := int64(len(first.Data))
	for {
		f, err := c.read(wire.MaxArgLen + maxDataFrame)
		if err != nil {
			return err
		}
		switch f.Op {
		case opProbe.Code:
			n += int64(len(f.Data))
		case opProbeEnd.Code:
			return c.reply(opProbeEnd.OpInfo, probeEndResponse{Bytes: n})
		default:
			return fmt.Errorf("unexpected op 0x%02x in probe", f.Op)
		}
	}
}

// Result is what a receiver reports for a transfer that arrived.
type Result struct {
	Path   string        // where the output now is
	Size   int64         // its size
	Plugin string        // the plugin that regenerated it
	Verify time.Duration // checking the container
	Decode time.Duration // regenerating and checking the digest (g)
	Commit time.Duration // syncing and renaming into place
}

func (c *srvConn) transfer(f wire.Frame) error {
	var offer offerRequest
	if err := offer.Decode(wire.NewDec(f.Args)); err != nil {
		return c.fail(opOffer.Code, err)
	}
	id, size, name, window, every := offer.ID, offer.Size, offer.Name, int64(offer.Window), int64(offer.AckEvery)
	if len(id) != 32 || size <= 0 || window <= 0 {
		return c.fail(opOffer.Code, errors.New("malformed offer"))
	}
	if _, err := CleanName(name); err != nil {
		return c.fail(opOffer.Code, err)
	}
	// Before a byte is sent: storing would fail only after the
	// transfer and the regeneration.
	if err := c.s.cfg.Store.Check(c.s.ctx, name); err != nil {
		return c.fail(opOffer.Code, err)
	}
	idh := hex.EncodeToString(id)
	s := c.s
	// The connection that last carried this transfer may still be
	// finishing after its answer reached the sender, which may already be
	// re-sending (after a fixed resource, say): give it a moment to let go.
	for wait := 0; ; wait++ {
		s.mu.Lock()
		if !s.active[idh] {
			s.active[idh] = true
			s.mu.Unlock()
			break
		}
		s.mu.Unlock()
		if wait == 100 {
			return c.fail(opOffer.Code, fmt.Errorf("transfer %s is already in progress on another connection", idh[:16]))
		}
		time.Sleep(20 * time.Millisecond)
	}
	defer func() {
		s.mu.Lock()
		delete(s.active, idh)
		s.mu.Unlock()
	}()
	c.log = c.log.With("transfer", idh[:16], "name", name)

	st, err := openStaged(s.cfg.StagingDir, idh, size)
	if err != nil {
		return c.fail(opOffer.Code, err)
	}
	defer st.close()
	off := st.off
	if err := roomFor(s.cfg.StagingDir, size-off); err != nil {
		// Refused before a byte is sent that could not be kept; a part
		// already staged stays for when there is room.
		if off == 0 {
			st.remove()
		}
		return c.fail(opOffer.Code, err)
	}
	if off > 0 {
		c.log.Info("medic: resuming", "offset", off, "size", size)
	}
	if err := c.reply(opOffer.OpInfo, offerResponse{Offset: off}); err != nil {
		return err
	}
	// Acknowledgements every AckEvery bytes the sender asked for (from
	// MinAck to ProgressAck; ProgressAck if it asked for none), and at
	// least every quarter of the window: they pace the window and are
	// how a send --auto measures the link from its own bytes. The
	// checkpoint for a resumption stays at a quarter of the window (a
	// resumption starts from the checkpoint the offer reads, not from the
	// last acknowledgement).
	if every <= 0 {
		every = ProgressAck
	}
	ackEvery := max(min(window/4, min(max(every, MinAck), ProgressAck)), 1)
	checkEvery := max(window/4, 1)
	lastAck, lastCheck := off, off
	// stagingFailed answers a staging area that could not take the
	// container's bytes. One that is full cannot take the rest of this
	// container either, and what it holds of it kept the disk full for
	// every other transfer (a small send after it failed too): the part
	// is dropped, and the answer says so.
	stagingFailed := func(op uint8, err error) error {
		if diskFull(err) {
			n := st.off
			st.remove()
			return c.failAndClose(op, fmt.Errorf("staging area %s is full (%w): the %s staged of this container were dropped; free space there and send again",
				s.cfg.StagingDir, errnoOf(err), units.FormatBytes(n)))
		}
		_ = st.checkpoint()
		return c.failAndClose(op, fmt.Errorf("staging area %s: %w", s.cfg.StagingDir, err))
	}
	ack := func() error {
		if st.off-lastCheck >= checkEvery || st.off == size {
			if err := st.checkpoint(); err != nil {
				return stagingFailed(opData.Code, err)
			}
			lastCheck = st.off
		}
		lastAck = st.off
		return writeFrame(c.nc, opAck.OpInfo, wire.FlagResponse, ackRequest{Acked: st.off})
	}
	for {
		f, err := c.read(wire.MaxArgLen + maxDataFrame)
		if err != nil {
			// Keep what arrived for a resume, unless nothing did (a send
			// --auto that switched before its first byte) or the disk is
			// too full to: then the part would only keep it full.
			full := diskFull(st.checkpoint())
			if full || st.off == 0 {
				st.remove()
			}
			if full {
				c.log.Warn("medic: staging area full: a cut transfer's part was dropped", "dir", s.cfg.StagingDir, "bytes", st.off)
			}
			if corruptFrame(err) {
				kept := fmt.Sprintf("the receiver keeps the %d bytes before it: send again to resume", st.off)
				if full {
					kept = fmt.Sprintf("the receiver's staging area %s is full, so the %d bytes before it were dropped: free space there and send again", s.cfg.StagingDir, st.off)
				}
				return c.failAndClose(opData.Code, fmt.Errorf("%w: the frame after byte %d of %d failed its check (%w); %s", ErrTransit, st.off, size, err, kept))
			}
			return err
		}
		switch f.Op {
		case opData.Code:
			var r dataRequest
			if err := r.Decode(wire.NewDec(f.Args)); err != nil {
				return c.fail(opData.Code, err)
			}
			if r.Offset != st.off || st.off+int64(len(f.Data)) > size {
				_ = st.checkpoint()
				return c.failAndClose(opData.Code, fmt.Errorf("data at offset %d, expected %d (of %d)", r.Offset, st.off, size))
			}
			if err := st.write(f.Data); err != nil {
				return stagingFailed(opData.Code, err)
			}
			if st.off-lastAck >= ackEvery || st.off == size {
				if err := ack(); err != nil {
					return err
				}
			}
		case opDone.Code:
			if err := st.checkpoint(); err != nil {
				return stagingFailed(opDone.Code, err)
			}
			if st.off != size {
				return c.fail(opDone.Code, fmt.Errorf("done after %d of %d bytes", st.off, size))
			}
			if !hmac.Equal(st.received(), id) {
				// The frames passed their checks one by one, yet together
				// they are not what the sender offered. Nothing of it can
				// be trusted: start afresh.
				st.remove()
				if st.fromDisk {
					return c.fail(opDone.Code, fmt.Errorf("%w: the %d bytes staged do not match the transfer id, corrupted in transit or in staging "+
						"(part of them was staged by an older receiver, which kept no record of what arrived); the staged copy was dropped: send again", ErrIntegrity, size))
				}
				return c.fail(opDone.Code, fmt.Errorf("%w: the %d bytes that arrived do not match the container the sender offered "+
					"(transfer id %s): a frame was altered on the way; the staged copy was dropped: send again", ErrTransit, size, idh[:16]))
			}
			res, err := c.finish(st, id, name)
			if err != nil {
				return c.fail(opDone.Code, err)
			}
			// Noted before the answer, so that a sender that asks for the
			// rates next finds it; the speed it was regenerated at is
			// probed just after, beside the answer (a probe before it
			// would delay every answer).
			s.regens.note(res.Plugin, res.Size, res.Decode)
			err = c.reply(opDone.OpInfo, doneResponse{Result: res})
			speed := SpeedProbe(SpeedProbeTime)
			s.regens.noteSpeed(res.Plugin, speed)
			s.speed.set(speed)
			return err
		default:
			_ = st.checkpoint()
			return c.fail(f.Op, fmt.Errorf("unexpected op 0x%02x during a transfer", f.Op))
		}
	}
}

// finish checks the staged container, regenerates the output into a
// temporary file of the store, checks its digest and commits it. The
// staging file is removed unless the failure is something the operator
// can fix at the storage site (ErrMissing), so that a re-send needs no
// transfer.
func (c *srvConn) finish(st *staged, id []byte, name string) (res Result, err error) {
	keep := false
	defer func() {
		// A receiver shutting down keeps the container whatever failed
		// (a store whose calls take the context fails them): the next
		// one regenerates it.
		if err == nil || !(keep || c.s.ctx.Err() != nil) {
			st.remove()
		}
	}()
	pf := st.f
	t0 := time.Now()
	if _, err := pf.Seek(0, io.SeekStart); err != nil {
		return res, err
	}
	h := sha256.New()
	if _, err := io.Copy(h, pf); err != nil {
		return res, err
	}
	if !hmac.Equal(h.Sum(nil), id) {
		// What arrived matched (transfer checked): the file changed since.
		return res, fmt.Errorf("%w: the staged copy %s does not match its transfer id although the bytes that arrived did (corrupted in staging: "+
			"check the staging disk); it was dropped: send again", ErrIntegrity, st.part)
	}
	if _, err := pf.Seek(0, io.SeekStart); err != nil {
		return res, err
	}
	hdr, _, err := Verify(bufio.NewReaderSize(pf, 256<<10), c.s.cfg.Key)
	if err != nil {
		return res, err
	}
	res.Verify = time.Since(t0)
	res.Plugin = hdr.Plugin
	if _, err := pf.Seek(0, io.SeekStart); err != nil {
		return res, err
	}
	ctx := c.s.ctx
	// Regenerations take their turn (MaxRegens at once). A receiver
	// shutting down keeps the container for the next one.
	select {
	case c.s.regenSlots <- struct{}{}:
	case <-ctx.Done():
		return res, ctx.Err()
	}
	defer func() { <-c.s.regenSlots }()
	if err := ctx.Err(); err != nil {
		return res, err // a free slot and shutdown at once: select chose either
	}
	t1 := time.Now()
	// The work directory first, so that the temporary output is noted in
	// it before anything is written: whatever happens to this receiver,
	// the next one can remove both (workdir.go).
	wd, err := newWorkDir(c.s.cfg.StagingDir)
	if err != nil {
		return res, err
	}
	defer wd.remove()
	out, err := c.s.cfg.Store.Begin(ctx, name)
	if err != nil {
		return res, fmt.Errorf("destination %s: %w", c.s.cfg.Store, err)
	}
	if err := wd.noteTemp(out.Temp()); err != nil {
		out.Abort()
		return res, fmt.Errorf("work directory %s: %w", wd.path, err)
	}
	bw := bufio.NewWriterSize(out, 1<<20)
	env := Env{Resources: c.s.cfg.Resources, TempDir: wd.tempDir(), Logger: c.log}
	if _, err = Decode(ctx, bufio.NewReaderSize(pf, 256<<10), c.s.cfg.Key, env, bw); err == nil {
		err = bw.Flush()
	}
	if err != nil {
		out.Abort()
		// Keep the staged container when the site can be fixed (and on
		// shutdown, above).
		keep = errors.Is(err, ErrMissing)
		return res, err
	}
	res.Decode = time.Since(t1)
	t2 := time.Now()
	p, err := out.Commit(ctx)
	if err != nil {
		return res, err
	}
	res.Commit = time.Since(t2)
	res.Path, res.Size = p, hdr.Size
	c.log.Info("medic: stored", "path", p, "bytes", hdr.Size, "plugin", hdr.Plugin, "decode", res.Decode)
	return res, nil
}

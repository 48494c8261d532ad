package medic

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/pario/pario/medic/cost"
	"github.com/pario/pario/units"
)

// send --auto without a plan before the send (SendAuto): planning cost a
// first send 0.2-2.4 s of probes, encodes and round trips, more than the
// whole send of a small output over a fast link. SendAuto instead starts
// sending the likely winner at once over the connection it needs anyway
// (the receiver's rates come in the authentication's round trip), measures
// the link from the acknowledgements of its own first bytes, encodes a
// semantic plugin beside the send only where the plugin could win even
// encoded in no time into no bytes, and abandons the send for it only
// where equation 3, counting what is already sent, says it finishes
// sooner (cost.Switch).

// AutoOptions configure SendAuto.
type AutoOptions struct {
	// Plugins are the semantic candidates (raw and zstd are always
	// candidates). A candidate is priced by the receiver's record of it,
	// else by its stated rate (RegenRater); one with neither is skipped.
	Plugins []string
	// Encode are every candidate's encoding options (Plugin is set per
	// candidate; a semantic plugin's Params go to it only).
	Encode EncodeOptions
	// Send is the receiver and the connection's options; Progress, when
	// set, follows the send that completes.
	Send     SendOptions
	SpoolDir string
	// Link, with B > 0, is taken as given; otherwise the link remembered
	// for Send.Addr in Links is used, or none: the send measures it.
	Link  cost.Link
	Links LinkCache
	// Check, when set, is how often the choice is reconsidered while the
	// first send runs (default 10 ms).
	Check time.Duration
}

// AutoCandidate is one choice SendAuto considered.
type AutoCandidate struct {
	cost.Estimate
	// GFrom says where G came from (GReceiver, GDefault; "" for raw and
	// zstd without a record, priced at 0).
	GFrom string
	// Encoded says whether it was encoded (F and X measured); Skipped,
	// why not when it could not be priced or encoded.
	Encoded bool
	Skipped string
}

// AutoReport is what SendAuto did, phase by phase.
type AutoReport struct {
	Size int64
	// Connect is the connection, authentication and the receiver's
	// rates (one round trip for both).
	Connect  time.Duration
	Receiver *Rates
	RatesErr error
	// Link is the link the choice was made with at the end, and
	// LinkSource where its B came from: "given", "remembered", "measured
	// from the send" (acknowledged bytes over their time), or "bounded by
	// the send" (no acknowledgement yet: an upper bound).
	Link       cost.Link
	LinkSource string
	// First is the choice sent at once, and why.
	First    string
	FirstWhy string
	// Candidates are raw, zstd and the semantic plugins considered.
	Candidates []AutoCandidate
	// Abandoned is the first send when SendAuto switched, after
	// AbandonedAfter (from the start) with AbandonedAcked of its
	// container's bytes at the receiver; SwitchWhy gives the prediction.
	Abandoned      *FileReport
	AbandonedAfter time.Duration
	AbandonedAcked int64
	SwitchWhy      string
	// Chosen is the plugin that carried the output, and File its send.
	Chosen string
	File   *FileReport
	Total  time.Duration
}

// autoCand is a candidate's state during SendAuto.
type autoCand struct {
	AutoCandidate
	encoding bool
}

// SendAuto sends the output at path with the cheapest of raw, zstd and
// o.Plugins by the cost model, choosing while it sends (see the comment
// at the top of auto.go). The report says what was chosen, why, and each
// phase's time.
func SendAuto(ctx context.Context, path string, o AutoOptions) (*AutoReport, error) {
	t0 := time.Now()
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if o.SpoolDir == "" {
		return nil, errors.New("medic: SendAuto needs a spool directory")
	}
	if err := os.MkdirAll(o.SpoolDir, 0o700); err != nil {
		return nil, err
	}
	if o.Send.Name == "" {
		o.Send.Name = filepath.Base(path)
	}
	if o.Check <= 0 {
		o.Check = 10 * time.Millisecond
	}
	rep := &AutoReport{Size: st.Size()}
	defer func() { rep.Total = time.Since(t0) }()

	c, rates, ratesErr, err := dialRates(ctx, &o.Send)
	if err != nil {
		return rep, err
	}
	sess := &Session{c: c}
	defer sess.Close()
	rep.Connect, rep.Receiver, rep.RatesErr = time.Since(t0), rates, ratesErr

	link := o.Link
	if link.RoundTrip == 0 {
		link.RoundTrip = RoundTrips
	}
	if link.RTT == 0 {
		link.RTT = c.rtt.Seconds()
	}
	known := link.B > 0
	rep.LinkSource = "given"
	if !known {
		rep.LinkSource = "not measured (the send ended before it could be)"
		if l, ok := o.Links.Get(o.Send.Addr); ok && !l.Rough {
			link.B, known, rep.LinkSource = l.B, true, "remembered"
		}
	}
	rep.Link = link

	p := Plan{Size: rep.Size, Receiver: rates}
	g := func(n string) (float64, string) {
		if g, from, ok := p.priorG(n); ok {
			return g, from
		}
		return 0, "" // raw and zstd decode in milliseconds
	}
	var cands []*autoCand
	for _, n := range o.Plugins {
		n = strings.TrimSpace(n)
		if n == "" || n == "raw" || n == "zstd" {
			continue
		}
		ac := &autoCand{AutoCandidate: AutoCandidate{Estimate: cost.Estimate{Name: n}}}
		cands = append(cands, ac)
		if gv, from, ok := p.priorG(n); ok {
			ac.G, ac.GFrom = gv, from
		} else {
			ac.Skipped = "not priced: the plugin states no regeneration rate and the receiver has no record of it (medic plan regenerates it here)"
		}
	}

	first, firstWhy := "zstd", "the likely winner below tens of MB/s; the link is measured from its first bytes"
	if known {
		first, firstWhy, err = rawOrZstd(ctx, path, o.Encode, link, rep.Size)
		if err != nil {
			return rep, err
		}
	}
	rep.First, rep.FirstWhy = first, firstWhy
	curG, curFrom := g(first)

	// The first send, over the authentication's connection.
	var (
		mu      sync.Mutex
		acks    []autoAck
		sendRep *FileReport
		sendErr error
	)
	sendDone := make(chan struct{})
	sctx, cancelSend := context.WithCancel(ctx)
	defer cancelSend()
	so := o.Send
	so.Session = sess
	if known {
		so.Buffer = cost.SocketBuffer(link.B, link.RTT)
	}
	userProgress := o.Send.Progress
	so.Progress = func(done, total int64) {
		mu.Lock()
		acks = append(acks, autoAck{time.Now(), done, total})
		mu.Unlock()
		if userProgress != nil {
			userProgress(done, total)
		}
	}
	eo := o.Encode
	eo.Plugin, eo.Params = first, nil // a semantic plugin's parameters are not zstd's
	go func() {
		r, err := SendFile(sctx, path, SendFileOptions{Encode: eo, Send: so, SpoolDir: o.SpoolDir})
		mu.Lock()
		sendRep, sendErr = r, err
		mu.Unlock()
		close(sendDone)
	}()

	// Encodes of semantic candidates beside the send, one at a time.
	type encoded struct {
		c   *autoCand
		e   cost.Estimate
		err error
	}
	encDone := make(chan encoded, 1)
	ectx, cancelEnc := context.WithCancel(ctx)
	encodingNow := false
	var encWG sync.WaitGroup
	defer func() { cancelEnc(); encWG.Wait() }()
	startEncode := func(ac *autoCand) {
		ac.encoding, encodingNow = true, true
		encWG.Add(1)
		go func() {
			defer encWG.Done()
			e := o.Encode
			e.Plugin = ac.Name
			t := time.Now()
			spool, _, err := encodeToSpool(ectx, path, e, o.SpoolDir, o.Send.Name)
			var est cost.Estimate
			if err == nil {
				if st, serr := os.Stat(spool); serr == nil {
					est = cost.Estimate{Name: ac.Name, X: float64(st.Size()), F: time.Since(t).Seconds(), G: ac.G}
				} else {
					err = serr
				}
			}
			encDone <- encoded{ac, est, err}
		}()
	}

	tick := time.NewTicker(o.Check)
	defer tick.Stop()
	var switchTo *autoCand
loop:
	for {
		select {
		case <-sendDone:
			break loop
		case r := <-encDone:
			encodingNow = false
			if r.err != nil {
				r.c.Skipped = fmt.Sprintf("encode: %v", r.err)
			} else {
				r.c.Estimate, r.c.Encoded = r.e, true
			}
		case <-tick.C:
		case <-ctx.Done():
			<-sendDone
			return rep, ctx.Err()
		}
		mu.Lock()
		as := append([]autoAck(nil), acks...)
		mu.Unlock()
		if len(as) == 0 {
			continue // still encoding, or the offer's answer on its way
		}
		l, src, ok := linkFromAcks(as, link, known, rep.LinkSource, time.Now())
		if !ok {
			continue
		}
		rep.Link, rep.LinkSource = l, src
		last := as[len(as)-1]
		left := float64(last.size - last.done)
		cur := cost.Estimate{Name: first, G: curG}
		for _, ac := range cands {
			if ac.Skipped != "" {
				continue
			}
			if ac.Encoded {
				alt := ac.Estimate
				alt.F = 0 // encoded beside the send: spent
				if ok, curT, altT := cost.Switch(left, cur, alt, l); ok {
					rep.SwitchWhy = fmt.Sprintf("after %s of %s's %s had arrived, %s was predicted to finish in %.3f s (x/B %.3f s, g %.3f s, a new connection), %s in %.3f s (%s left at %s)",
						units.FormatBytes(last.done), first, units.FormatBytes(last.size), alt.Name, altT, alt.X/l.Effective(), alt.G,
						first, curT, units.FormatBytes(int64(left)), units.FormatRate(l.B))
					switchTo = ac
					break loop
				}
				continue
			}
			if !ac.encoding && !encodingNow && cost.WorthEncoding(left, cur, ac.G, l) {
				startEncode(ac)
			}
		}
	}
	cancelEnc()
	encWG.Wait()
	if switchTo == nil {
		<-sendDone
		mu.Lock()
		r, err := sendRep, sendErr
		mu.Unlock()
		rep.Chosen, rep.File = first, r
		rep.Candidates = candidates(first, curG, curFrom, r, cands)
		// Candidates encoded beside the send are not sent.
		for _, ac := range cands {
			if ac.Encoded {
				e := o.Encode
				e.Plugin = ac.Name
				removeSpooled(path, e, o.SpoolDir, o.Send.Name)
			}
		}
		if err == nil {
			rememberLink(o.Links, o.Send.Addr, r.Send, link)
		}
		return rep, err
	}

	// Abandon the first send: the receiver keeps the part it got (a
	// later send of the same container resumes it), the spool does not.
	cancelSend()
	<-sendDone
	mu.Lock()
	rep.Abandoned, rep.AbandonedAfter = sendRep, time.Since(t0)
	if len(acks) > 0 {
		rep.AbandonedAcked = acks[len(acks)-1].done
	}
	mu.Unlock()
	removeSpooled(path, eo, o.SpoolDir, o.Send.Name)
	ae := o.Encode
	ae.Plugin = switchTo.Name
	so2 := o.Send
	so2.Buffer = cost.SocketBuffer(rep.Link.B, rep.Link.RTT)
	r, err := SendFile(ctx, path, SendFileOptions{Encode: ae, Send: so2, SpoolDir: o.SpoolDir})
	rep.Chosen, rep.File = switchTo.Name, r
	rep.Candidates = candidates(first, curG, curFrom, rep.Abandoned, cands)
	return rep, err
}

// autoAck is an acknowledgement of the first send, as SendAuto saw it:
// the first is the offer's answer (the start of the data).
type autoAck struct {
	at         time.Time
	done, size int64
}

// linkFromAcks is the link to decide with at time now, from the
// acknowledgements of the send so far: their rate once two frames' worth
// arrived (the first byte arrives half a round trip after the offer's
// answer, each acknowledgement half a round trip after its byte); before
// that the known link (src) or, lower, an upper bound: the receiver has
// not acknowledged ProgressAck bytes more, so fewer than those arrived in
// the time since the data started, less a round trip. ok is false while
// there is nothing to tell.
func linkFromAcks(as []autoAck, link cost.Link, known bool, src string, now time.Time) (cost.Link, string, bool) {
	if len(as) == 0 {
		return link, src, false
	}
	a0, last := as[0], as[len(as)-1]
	rtt := time.Duration(link.RTT * float64(time.Second))
	got := last.done - a0.done
	if got >= 2*ProgressAck {
		el := last.at.Sub(a0.at)
		el = max(el-rtt, el/2)
		if el > 0 {
			link.B = float64(got) / el.Seconds()
			return link, "measured from the send", true
		}
	}
	el := now.Sub(a0.at) - rtt
	if el < 5*time.Millisecond {
		return link, src, known
	}
	bound := float64(got+ProgressAck) / el.Seconds()
	if known && link.B <= bound {
		return link, src, true
	}
	link.B = bound
	return link, "bounded by the send", true
}

// rawOrZstd chooses the first send over a known link: zstd unless raw is
// cheaper by the model, with both encodes' rates (and zstd's ratio)
// measured on the output's first block.
func rawOrZstd(ctx context.Context, path string, eo EncodeOptions, l cost.Link, D int64) (string, string, error) {
	const block = 128 << 10
	n := min(D, block)
	if n <= 0 {
		return "zstd", "an empty output", nil
	}
	f, err := os.Open(path)
	if err != nil {
		return "", "", err
	}
	defer f.Close()
	tmp, err := os.CreateTemp("", "medic-sample-*")
	if err != nil {
		return "", "", err
	}
	defer os.Remove(tmp.Name())
	_, err = io.Copy(tmp, io.LimitReader(f, n))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", "", fmt.Errorf("sample the output's first block: %w", err)
	}
	scale := float64(D) / float64(n)
	var es []cost.Estimate
	for _, name := range []string{"raw", "zstd"} {
		o := eo
		o.Plugin, o.Params = name, nil
		var cw countWriter
		t := time.Now()
		if _, err := Encode(ctx, tmp.Name(), o, &cw); err != nil {
			return "", "", fmt.Errorf("sample the output's first block with %s: %w", name, err)
		}
		es = append(es, cost.Estimate{Name: name, X: float64(cw) * scale, F: time.Since(t).Seconds() * scale})
	}
	d, _ := cost.Decide(cost.Plan(0, float64(D), es, l))
	return d.Best.Name, fmt.Sprintf("over the %s link, from a %s sample: %s", units.FormatRate(l.B), units.FormatBytes(n), d.Why()), nil
}

type countWriter int64

func (c *countWriter) Write(p []byte) (int, error) {
	*c += countWriter(len(p))
	return len(p), nil
}

func candidates(first string, g float64, from string, r *FileReport, cands []*autoCand) []AutoCandidate {
	c := AutoCandidate{Estimate: cost.Estimate{Name: first, G: g}, GFrom: from}
	if r != nil {
		c.Encoded, c.F, c.X = true, r.Encode.Seconds(), float64(r.MetaSize)
	}
	out := []AutoCandidate{c}
	for _, ac := range cands {
		out = append(out, ac.AutoCandidate)
	}
	return out
}

// rememberLink refreshes the link remembered for addr with the rate of a
// send's transfer, when it lasted long enough to measure the bandwidth.
func rememberLink(lc LinkCache, addr string, r *SendReport, l cost.Link) {
	if lc.Dir == "" || r == nil || r.Transfer < minObserved || r.Sent <= 0 {
		return
	}
	b := float64(r.Sent) / r.Transfer.Seconds()
	if err := lc.Put(RememberedLink{Addr: addr, B: b, RTT: time.Duration(l.RTT * float64(time.Second))}); err != nil {
		slog.Warn("medic: send --auto: link not remembered", "err", err)
	}
}

// encodeToSpool encodes the output at path with o into the spool file
// SendFile looks for (SpoolName), so that a SendFile with the same
// options sends it as it is.
func encodeToSpool(ctx context.Context, path string, o EncodeOptions, spoolDir, name string) (string, Header, error) {
	_, dg, err := FileDigest(path)
	if err != nil {
		return "", Header{}, err
	}
	spool := filepath.Join(spoolDir, SpoolName(dg, o, name))
	tmp, err := os.CreateTemp(spoolDir, ".encode-*")
	if err != nil {
		return "", Header{}, err
	}
	bw := bufio.NewWriterSize(tmp, 1<<20)
	h, err := Encode(ctx, path, o, bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = tmp.Close()
	} else {
		tmp.Close()
	}
	if err == nil {
		err = os.Rename(tmp.Name(), spool)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return "", Header{}, err
	}
	return spool, h, nil
}

func removeSpooled(path string, o EncodeOptions, spoolDir, name string) {
	if _, dg, err := FileDigest(path); err == nil {
		os.Remove(filepath.Join(spoolDir, SpoolName(dg, o, name)))
	}
}

// WriteText writes the report as `pario medic send --auto` prints it:
// the link and the receiver's rates, each candidate, what was sent first
// and why, a switch and why, and each phase's time.
func (r *AutoReport) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "auto: output %s; link %s (%s), RTT %.1f ms\n", units.FormatBytes(r.Size), units.FormatRate(r.Link.B), r.LinkSource, r.Link.RTT*1e3)
	if r.RatesErr != nil {
		fmt.Fprintf(&b, "  receiver: no rates (%v); plugins priced at their stated rates here\n", r.RatesErr)
	}
	for _, c := range r.Candidates {
		switch {
		case c.Skipped != "":
			fmt.Fprintf(&b, "  %-8s g %.3f s (%s): %s\n", c.Name, c.G, orDash(c.GFrom), c.Skipped)
		case c.Encoded:
			fmt.Fprintf(&b, "  %-8s g %.3f s (%s), f %.3f s, x %s\n", c.Name, c.G, orDash(c.GFrom), c.F, units.FormatBytes(int64(c.X)))
		default:
			fmt.Fprintf(&b, "  %-8s g %.3f s (%s): not encoded, it could not win even encoded in no time into no bytes\n", c.Name, c.G, orDash(c.GFrom))
		}
	}
	fmt.Fprintf(&b, "  sent %s first: %s\n", r.First, r.FirstWhy)
	if r.Abandoned != nil {
		fmt.Fprintf(&b, "  switched to %s after %.3f s: %s\n", r.Chosen, r.AbandonedAfter.Seconds(), r.SwitchWhy)
	}
	fmt.Fprintf(&b, "  phases: connect and rates %.3f s", r.Connect.Seconds())
	if a := r.Abandoned; a != nil {
		fmt.Fprintf(&b, ", %s (abandoned) encode %.3f s", r.First, a.Encode.Seconds())
		if a.Send != nil {
			fmt.Fprintf(&b, " + transfer %.3f s", a.Send.Transfer.Seconds())
		}
	}
	if f := r.File; f != nil {
		fmt.Fprintf(&b, ", %s encode %.3f s", r.Chosen, f.Encode.Seconds())
		if f.Reused {
			b.WriteString(" (beside the first send)")
		}
		if s := f.Send; s != nil {
			if r.Abandoned != nil {
				fmt.Fprintf(&b, ", connect %.3f s", s.Connect.Seconds())
			}
			fmt.Fprintf(&b, ", transfer %.3f s (%s), receiver %.3f s", s.Transfer.Seconds(), units.FormatBytes(s.Sent), s.Receiver.Seconds())
		}
	}
	fmt.Fprintf(&b, "; total %.3f s\n", r.Total.Seconds())
	_, err := io.WriteString(w, b.String())
	return err
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

package medic

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
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

// SwitchMargin is the fraction of what the send under way still needs
// that a switch must be predicted to save (cost.Switch): in the sweep, B
// from the first two acknowledgements was 25% low and blast's g from its
// record 13% low, and a switch predicted to save 9% lost 30%.
const SwitchMargin = 0.1

// EncodeAhead is how far (as a factor) the bound on B from the missing
// acknowledgements may still be above the rate below which a semantic
// plugin could win, when its encode beside the send starts
// (cost.EncodeEarly): in the sweep the switch came 0.1-0.2 s after the
// bound allowed the encode, the encode's time, on sends of 0.3-1.5 s.
const EncodeAhead = 2.0

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
	// Fallback names the plugin to send with when the receiver could not
	// regenerate the output with a semantic plugin (SendFileOptions).
	Fallback string
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
	// EncodeAt is when its encode beside the send started, from
	// SendAuto's start (0: not encoded beside a send).
	EncodeAt time.Duration
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
	First string
	// DataAt is when the first send's data started (its offer
	// answered), from SendAuto's start.
	DataAt   time.Duration
	FirstWhy string
	// Candidates are raw, zstd and the semantic plugins considered.
	Candidates []AutoCandidate
	// Abandoned are the sends SendAuto switched away from, in order.
	Abandoned []AbandonedSend
	// Chosen is the plugin that carried the output, and File its send.
	Chosen string
	File   *FileReport
	Total  time.Duration
}

// AbandonedSend is a send SendAuto switched away from.
type AbandonedSend struct {
	Plugin string
	File   *FileReport   // its encode and what it sent (Send is nil when cut before the answer)
	After  time.Duration // from SendAuto's start to the switch
	Acked  int64         // its container's bytes the receiver held then
	Why    string        // the switch's prediction
}

// autoCand is a candidate's state during SendAuto.
type autoCand struct {
	AutoCandidate
	encoding, sent bool
}

// SendAuto sends the output at path with the cheapest of raw, zstd and
// o.Plugins by the cost model, choosing while it sends (see the comment
// at the top of auto.go). The report says what was chosen, why, and each
// phase's time.
func SendAuto(ctx context.Context, path string, o AutoOptions) (*AutoReport, error) {
	t0 := time.Now()
	st, err := SourceFile(path)
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
		// Nothing chosen, nothing sent: no report (it printed a link of
		// "" and "sent  first:" above the error).
		return nil, err
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
	remembered, _ := o.Links.Get(o.Send.Addr)
	if !known {
		rep.LinkSource = "not measured: the send ended before it could be"
		if remembered.B > 0 && !remembered.Rough {
			link.B, known, rep.LinkSource = remembered.B, true, "remembered"
		}
	}
	// A bound on B from above that the last send's missing
	// acknowledgements gave is enough to encode a semantic plugin beside
	// the send and to switch to it at once (cost.WorthEncoding): a slower
	// link favours it further. It does not choose raw (a faster link
	// favours raw), nor size the socket buffers.
	bounded := false
	if !known && remembered.Max > 0 {
		link.B, bounded, rep.LinkSource = remembered.Max, true, "bounded by the last send"
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

	// zstd goes first unless the model prices raw cheaper over a known
	// link with zstd's rates from the last send: zstd was the best or
	// within a few percent of it at every point of the sweep (its encode
	// takes tens of milliseconds for a report of megabytes), and a first
	// choice that must be corrected costs a new connection. Where raw
	// goes first, zstd is encoded beside it and takes over where the link
	// turns out slow enough for that to pay.
	zg, zfrom := g("zstd")
	first, firstWhy := firstChoice(rep.Size, link, known, remembered, zg)
	rep.First, rep.FirstWhy = first, firstWhy
	curG, curFrom := g(first)
	if first == "raw" {
		// zstd is a candidate beside raw, tried before the semantic
		// plugins (its g is the smallest).
		cands = append([]*autoCand{{AutoCandidate: AutoCandidate{Estimate: cost.Estimate{Name: "zstd", G: zg}, GFrom: zfrom}}}, cands...)
	}

	// Encodes of the other candidates beside the sends, one at a time.
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
		ac.EncodeAt = time.Since(t0)
		encWG.Add(1)
		go func() {
			defer encWG.Done()
			e := plainOpts(o.Encode, ac.Name)
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

	// The first send goes over the authentication's connection; a send
	// switched to dials anew (closing the connection is what stops the
	// abandoned one's bytes in flight).
	so := o.Send
	so.Session = sess
	if known {
		so.Buffer = cost.SocketBuffer(link.B, link.RTT)
	}
	userProgress := o.Send.Progress
	cur := &autoCand{AutoCandidate: AutoCandidate{Estimate: cost.Estimate{Name: first, G: curG}, GFrom: curFrom}}
	all := append([]*autoCand{cur}, cands...)
	if known || bounded {
		// Over a link known before the send (given, or remembered from
		// a longer one), or no faster than a bound the last send gave
		// (a slower link favours the plugin further), a plugin that
		// could win is encoded from the start rather than from the
		// first acknowledgement: in the sweep's repeated sends at 50
		// kB/s its encode began 15-56 ms after zstd's data, time a
		// send of it alone does not lose.
		left := float64(rep.Size)
		if first == "zstd" && remembered.ZstdRatio > 0 {
			left /= remembered.ZstdRatio
		}
		for _, ac := range cands {
			if ac.Skipped == "" && !encodingNow && cost.WorthEncoding(left, cur.Estimate, ac.G, link) {
				startEncode(ac)
			}
		}
	}
	tick := time.NewTicker(o.Check)
	defer tick.Stop()
	ceiling := math.Inf(1) // the least bound on B the sends' missing acknowledgements gave
	if bounded {
		ceiling = link.B
	}
	for {
		var (
			mu      sync.Mutex
			acks    []autoAck
			sendRep *FileReport
			sendErr error
		)
		sendDone := make(chan struct{})
		sctx, cancelSend := context.WithCancel(ctx)
		so.Progress = func(done, total int64) {
			mu.Lock()
			acks = append(acks, autoAck{time.Now(), done, total})
			mu.Unlock()
			if userProgress != nil {
				userProgress(done, total)
			}
		}
		cur.sent = true
		eo := plainOpts(o.Encode, cur.Name)
		go func(so SendOptions) {
			r, err := SendFile(sctx, path, SendFileOptions{Encode: eo, Send: so, SpoolDir: o.SpoolDir, Fallback: o.Fallback})
			mu.Lock()
			sendRep, sendErr = r, err
			mu.Unlock()
			close(sendDone)
		}(so)

		var switchTo *autoCand
		var why string
	watch:
		for {
			select {
			case <-sendDone:
				break watch
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
				cancelSend()
				return rep, ctx.Err()
			}
			mu.Lock()
			as := append([]autoAck(nil), acks...)
			mu.Unlock()
			if len(as) > 0 && rep.DataAt == 0 {
				rep.DataAt = as[0].at.Sub(t0)
			}
			l, src, ok := linkFromAcks(as, link, known || bounded, rep.LinkSource, time.Now())
			if !ok {
				continue // still encoding, or the offer's answer on its way
			}
			last := as[len(as)-1]
			if last.done == last.size {
				continue // all of it at the receiver: it regenerates, nothing to measure or switch
			}
			left := unarrived(last, l.B, time.Now())
			rep.Link, rep.LinkSource = l, src
			if src == "bounded by the send" {
				ceiling = min(ceiling, l.B)
			}
			// The cheapest switch the model prices as faster, if any.
			bestT := math.Inf(1)
			for _, ac := range cands {
				if ac.Skipped != "" || ac.sent {
					continue
				}
				if ac.Encoded {
					alt := ac.Estimate
					alt.F = 0 // encoded beside the send: spent
					if ok, curT, altT := cost.Switch(left, cur.Estimate, alt, l, SwitchMargin); ok && altT < bestT {
						bestT, switchTo = altT, ac
						why = fmt.Sprintf("after %s of %s's %s had been acknowledged, %s was predicted to finish in %.3f s (x/B %.3f s, g %.3f s, a new connection), %s in %.3f s (%s left at %s)",
							units.FormatBytes(last.done), cur.Name, units.FormatBytes(last.size), alt.Name, altT, alt.X/l.Effective(), alt.G,
							cur.Name, curT, units.FormatBytes(int64(left)), units.FormatRate(l.B))
					}
					continue
				}
				k := 1.0
				if src == "bounded by the send" {
					k = EncodeAhead
				}
				if !ac.encoding && !encodingNow && cost.EncodeEarly(left, cur.Estimate, ac.G, l, k) {
					startEncode(ac)
				}
			}
			if switchTo != nil {
				break watch
			}
		}
		if switchTo == nil {
			<-sendDone
			cancelSend()
			cancelEnc()
			encWG.Wait()
			mu.Lock()
			r, err := sendRep, sendErr
			mu.Unlock()
			rep.Chosen, rep.File = cur.Name, r
			if r != nil && !cur.Encoded {
				cur.Encoded, cur.F, cur.X = true, r.Encode.Seconds(), float64(r.MetaSize)
			}
			// Candidates encoded beside the send and not sent are dropped.
			for _, ac := range cands {
				if ac.Encoded && !ac.sent {
					removeSpooled(path, plainOpts(o.Encode, ac.Name), o.SpoolDir, o.Send.Name)
				}
			}
			rep.Candidates = nil
			for _, ac := range all {
				rep.Candidates = append(rep.Candidates, ac.AutoCandidate)
			}
			if err == nil {
				rememberLink(o.Links, o.Send.Addr, r.Send, rep.Link, ceiling, remembered, rep.Size, all)
			}
			return rep, err
		}

		// Abandon the send under way: the receiver keeps the part it got
		// (a later send of the same container resumes it), the spool
		// does not.
		cancelSend()
		<-sendDone
		mu.Lock()
		ab := AbandonedSend{Plugin: cur.Name, File: sendRep, After: time.Since(t0), Why: why}
		if len(acks) > 0 {
			ab.Acked = acks[len(acks)-1].done
		}
		mu.Unlock()
		if ab.File != nil && !cur.Encoded {
			cur.Encoded, cur.F, cur.X = true, ab.File.Encode.Seconds(), float64(ab.File.MetaSize)
		}
		rep.Abandoned = append(rep.Abandoned, ab)
		removeSpooled(path, eo, o.SpoolDir, o.Send.Name)
		cur = switchTo
		so.Session = nil
		so.Buffer = cost.SocketBuffer(rep.Link.B, rep.Link.RTT)
	}
}

// plainOpts are o for plugin: raw and zstd do not take a semantic
// plugin's parameters.
func plainOpts(o EncodeOptions, plugin string) EncodeOptions {
	o.Plugin = plugin
	if plugin == "raw" || plugin == "zstd" {
		o.Params = nil
	}
	return o
}

// autoAck is an acknowledgement of the first send, as SendAuto saw it:
// the first is the offer's answer (the start of the data).
type autoAck struct {
	at         time.Time
	done, size int64
}

// linkFromAcks is the link to decide with at time now, from the
// acknowledgements of the send so far: their rate, between the first
// acknowledgement of data and the last, once two frames' worth and 16 KiB
// arrived; before that the known link (src) or, lower, an upper bound:
// the receiver has not acknowledged AckEvery bytes more (of the
// container, a0.size), so fewer than those arrived in the time since the
// data started, less a round trip (the first byte arrives half a round
// trip after the offer's answer, each acknowledgement half a round trip
// after its byte). ok is false while there is nothing to tell.
func linkFromAcks(as []autoAck, link cost.Link, known bool, src string, now time.Time) (cost.Link, string, bool) {
	if len(as) == 0 {
		return link, src, false
	}
	a0, last := as[0], as[len(as)-1]
	every := AckEvery(a0.size)
	rtt := secondsDuration(link.RTT)
	got := last.done - a0.done
	// Two acknowledgements, and at least 16 KiB: the rate of two 4 KiB
	// frames over a link that passes its bytes in pieces of 10 ms (as a
	// busy router, or the sweep's emulator) is off by up to a quarter;
	// until then the bound decides, which can only hold back a switch.
	if got >= max(2*every, 4*MinAck) {
		// The rate between the first acknowledgement of data and the
		// last: each came a round trip after its bytes left, so the
		// round trip drops out. (From the offer's answer, less the
		// authentication's round trip, floored at half the time, it
		// read 263 kB/s on a 2 MB/s link at RTT 200 ms.)
		a1 := last
		for _, a := range as[1:] {
			if a.done > a0.done {
				a1 = a
				break
			}
		}
		if span := last.at.Sub(a1.at); span > 0 {
			link.B = float64(last.done-a1.done) / span.Seconds()
			return link, "measured from the send", true
		}
	}
	el := now.Sub(a0.at) - rtt
	if el < 5*time.Millisecond {
		return link, src, known
	}
	bound := float64(got+every) / el.Seconds()
	if known && link.B <= bound {
		return link, src, true
	}
	link.B = bound
	return link, "bounded by the send", true
}

// unarrived is what the send under way still has to move at time now,
// over a link of rate b: the bytes not acknowledged yet (last is the
// latest acknowledgement) less those the link has carried since (b times
// the time since last, at most AckEvery: the receiver would have
// acknowledged that many). Pricing the rest as all still to go, with B
// the bound from the missing acknowledgements, counted the same bytes
// twice: as not arrived, and as the reason B is no higher; on a
// container of a few AckEvery that overpriced it by the time since the
// data started (0.16 s of a 0.28 s send at 200 kB/s), and a switch that
// lost was made.
func unarrived(last autoAck, b float64, now time.Time) float64 {
	left := float64(last.size - last.done)
	moved := 0.0
	if dt := now.Sub(last.at).Seconds(); dt > 0 && b > 0 && !math.IsInf(b, 1) {
		moved = min(b*dt, float64(AckEvery(last.size)))
	}
	return max(left-moved, 0)
}

// firstChoice is the choice sent at once: over a known link raw or zstd
// (rawOrZstd); over a link remembered only roughly (a short transfer's
// rate, or the rough probe's) raw where the model prices raw cheaper even
// at LinkSlack times less than the rough B, the least the link can be
// (raw gains on zstd as B grows, so raw is then the cheaper at every B
// the link can have); zstd otherwise.
func firstChoice(D int64, link cost.Link, known bool, r RememberedLink, zg float64) (string, string) {
	if known {
		return rawOrZstd(D, link, r, zg)
	}
	if r.Rough && r.B > 0 {
		l := link
		l.B = r.B / LinkSlack
		if c, why := rawOrZstd(D, l, r, zg); c == "raw" {
			return c, fmt.Sprintf("the link is remembered roughly (%s from a short transfer or a probe: at least %s), %s",
				units.FormatRate(r.B), units.FormatRate(l.B), why)
		}
	}
	return "zstd", "the link is not known yet: zstd, the likely winner below tens of MB/s, goes at once and measures it"
}

// rawOrZstd chooses the first send over a known link: raw or zstd,
// whichever the model prices cheaper with zstd's encode rate and ratio on
// the last output sent to this receiver (a sample of this output's first
// block was tried: the encoder's fixed costs made 64 KiB take as long as
// the whole output); zstd without them.
func rawOrZstd(D int64, l cost.Link, r RememberedLink, zg float64) (string, string) {
	if r.ZstdRate <= 0 || r.ZstdRatio <= 0 {
		return "zstd", fmt.Sprintf("the link is known (%s), zstd's rates are not: zstd, the likely winner below tens of MB/s, goes at once", units.FormatRate(l.B))
	}
	es := []cost.Estimate{{Name: "raw", X: float64(D)},
		{Name: "zstd", X: float64(D) / r.ZstdRatio, F: float64(D) / r.ZstdRate, G: zg}}
	d, _ := cost.Decide(cost.Plan(0, float64(D), es, l))
	return d.Best.Name, fmt.Sprintf("over the %s link, with zstd's rates on the last output (%s/s, ratio %.1f): %s",
		units.FormatRate(l.B), units.FormatBytes(int64(r.ZstdRate)), r.ZstdRatio, d.Why())
}

// rememberLink remembers for addr the rate of a send's transfer, with
// zstd's rates when a candidate was encoded with zstd (else the ones
// remembered before). The transfer's time holds a round trip besides the
// data's (half before the first byte arrives, half for the last one's
// acknowledgement), which is left out of the rate. A transfer whose data
// took less than minObserved is mostly round trips and TCP's slow start:
// its rate is remembered as Rough (the next
// send chooses raw by it only where raw wins even at a fraction of it,
// firstChoice), and does not replace a link measured by a longer one. A
// rough link is remembered with ceiling, the least upper bound on B the
// sends' missing acknowledgements gave (+Inf: none; never below the rough
// rate, where the transfer's data took at least as long as its round
// trip, so that the rate is one).
func rememberLink(lc LinkCache, addr string, r *SendReport, l cost.Link, ceiling float64, old RememberedLink, D int64, cands []*autoCand) {
	if lc.Dir == "" || r == nil || r.Transfer <= 0 || r.Sent <= 0 {
		return
	}
	// Over a long link the round trip is most of a short transfer (a
	// 47 KiB container at 2 MB/s and RTT 200 ms: 0.23 s, of which 0.2 s
	// the round trip; remembered as 211 kB/s before it was left out).
	rtt := secondsDuration(l.RTT)
	data := max(r.Transfer-rtt, r.Transfer/2)
	nl := RememberedLink{Addr: addr, B: float64(r.Sent) / data.Seconds(), RTT: rtt,
		Rough: r.Transfer-rtt < minObserved, ZstdRate: old.ZstdRate, ZstdRatio: old.ZstdRatio}
	if nl.Rough {
		// Where the round trip was half the transfer or more, the data's
		// own time is not known (floored at half above): its rate bounds
		// nothing.
		bounds := r.Transfer-rtt >= r.Transfer/2
		switch {
		case old.B > 0 && !old.Rough:
			nl.B, nl.Rough = old.B, false
		case math.IsInf(ceiling, 1):
		case bounds:
			nl.Max = max(ceiling, nl.B)
		default:
			nl.Max = ceiling
		}
	}
	for _, c := range cands {
		if c.Name == "zstd" && c.Encoded && c.F > 0 && c.X > 0 {
			nl.ZstdRate, nl.ZstdRatio = float64(D)/c.F, float64(D)/c.X
		}
	}
	if err := lc.Put(nl); err != nil {
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
	h, err := encodeFile(ctx, path, o, spoolDir, spool)
	if err != nil {
		return "", Header{}, err
	}
	return spool, h, nil
}

// encodeFile encodes the output at path with o into the file spool, in
// dir: whole or not at all (a temporary file renamed into place).
func encodeFile(ctx context.Context, path string, o EncodeOptions, dir, spool string) (Header, error) {
	tmp, err := os.CreateTemp(dir, ".encode-*")
	if err != nil {
		return Header{}, err
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
		return Header{}, err
	}
	return h, nil
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
	link := fmt.Sprintf("%s (%s)", units.FormatRate(r.Link.B), r.LinkSource)
	if r.Link.B <= 0 {
		// A send over a fast link can end before its acknowledgements
		// measure it: "link 0 B/s" would read as a dead link.
		link = r.LinkSource
	}
	fmt.Fprintf(&b, "auto: output %s; link %s, RTT %.1f ms\n", units.FormatBytes(r.Size), link, r.Link.RTT*1e3)
	if r.RatesErr != nil {
		fmt.Fprintf(&b, "  receiver: no rates (%v); plugins priced at their stated rates here\n", r.RatesErr)
	}
	for _, c := range r.Candidates {
		switch {
		case c.Skipped != "":
			fmt.Fprintf(&b, "  %-8s g %.3f s (%s): %s\n", c.Name, c.G, orDash(c.GFrom), c.Skipped)
		case c.Encoded && c.EncodeAt > 0:
			fmt.Fprintf(&b, "  %-8s g %.3f s (%s), f %.3f s from %.3f s, x %s\n", c.Name, c.G, orDash(c.GFrom), c.F, c.EncodeAt.Seconds(), units.FormatBytes(int64(c.X)))
		case c.Encoded:
			fmt.Fprintf(&b, "  %-8s g %.3f s (%s), f %.3f s, x %s\n", c.Name, c.G, orDash(c.GFrom), c.F, units.FormatBytes(int64(c.X)))
		case c.EncodeAt > 0:
			fmt.Fprintf(&b, "  %-8s g %.3f s (%s): encode from %.3f s stopped, the send ended first\n", c.Name, c.G, orDash(c.GFrom), c.EncodeAt.Seconds())
		default:
			fmt.Fprintf(&b, "  %-8s g %.3f s (%s): not encoded, it could not win even encoded in no time into no bytes\n", c.Name, c.G, orDash(c.GFrom))
		}
	}
	fmt.Fprintf(&b, "  sent %s first: %s\n", r.First, r.FirstWhy)
	if r.DataAt > 0 {
		fmt.Fprintf(&b, "  its data started at %.3f s\n", r.DataAt.Seconds())
	}
	for i, a := range r.Abandoned {
		next := r.Chosen
		if i+1 < len(r.Abandoned) {
			next = r.Abandoned[i+1].Plugin
		}
		fmt.Fprintf(&b, "  switched from %s to %s at %.3f s: %s\n", a.Plugin, next, a.After.Seconds(), a.Why)
	}
	fmt.Fprintf(&b, "  phases: connect and rates %.3f s", r.Connect.Seconds())
	for _, a := range r.Abandoned {
		fmt.Fprintf(&b, ", %s (abandoned after %s)", a.Plugin, units.FormatBytes(a.Acked))
		if a.File != nil {
			fmt.Fprintf(&b, " encode %.3f s", a.File.Encode.Seconds())
		}
	}
	if f := r.File; f != nil {
		fmt.Fprintf(&b, ", %s encode %.3f s", r.Chosen, f.Encode.Seconds())
		if f.Reused {
			b.WriteString(" (beside the first send)")
		}
		if s := f.Send; s != nil {
			if len(r.Abandoned) > 0 {
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

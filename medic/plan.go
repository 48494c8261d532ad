package medic

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pario/pario/medic/cost"
	"github.com/pario/pario/units"
)

// Planning a transfer, `pario medic plan` and `send --auto`: calibrate
// every candidate plugin on the output, take or measure the link, and rank
// the plugins (and raw) by the cost model. The command only parses its
// flags into a PlanRequest and prints the Plan.

// RoundTrips is what a medic transfer costs besides the data, in round
// trips: TCP connect, hello/auth, offer, and the result after the last ack.
const RoundTrips = 3.5

// ProbeTime is how long a plan probes the link's bandwidth (after a first
// round of 64 KiB, which bounds the probe's bytes to about this long).
const ProbeTime = 500 * time.Millisecond

// PlanRequest is a plan to make.
type PlanRequest struct {
	// Path is the output to move.
	Path string
	// Plugins are the candidates; raw is added when missing.
	Plugins []string
	// Encode are the options of every candidate's encoding (Plugin is set
	// per candidate).
	Encode EncodeOptions
	// Resources are this site's, to regenerate with while calibrating.
	Resources map[string]string
	// AppTime is the application's run time T (s), added to every
	// prediction.
	AppTime float64
	// Link is the link: with B > 0 it is taken as given; otherwise B (and
	// RTT, when zero) are measured against the receiver of Measure.
	Link    cost.Link
	Measure SendOptions
	// Spool, when set, is the SendFile spool directory of the send that
	// follows the plan: each candidate is encoded into its spool file
	// (named for Measure.Name, else the output's base name) and the
	// chosen one's is kept, so that the send reuses it (Plan.Container)
	// instead of encoding the output a second time.
	Spool string
	// Links, when its Dir is set, remembers the measured link per
	// receiver address: a plan within LinkTTL of a measurement to the
	// same Measure.Addr takes the remembered link and does not probe.
	Links LinkCache
	// KeepSession keeps the plan's connection to the receiver of Measure
	// open (Plan.Session) for the send that follows, which then pays no
	// connect, TLS or authentication round trips.
	KeepSession bool
}

// Skipped is a candidate that could not be calibrated here.
type Skipped struct {
	Plugin string
	Err    error
}

// Plan is the ranking of the candidates for one output and link.
type Plan struct {
	Size int64 // of the output, D
	Link cost.Link
	// LinkSource says where Link.B came from: "given", "measured" (", rough
	// probe" when the rough probe was enough) or "remembered" (Links).
	LinkSource string
	// Choices are the calibrated candidates and raw, fastest first.
	Choices []cost.Choice
	Skipped []Skipped
	// GFrom says where each choice's g came from, by plugin: GReceiver,
	// GScaled or GHere.
	GFrom map[string]string
	// Receiver is the receiver's answer to the rates op (nil when there
	// is no receiver, or it did not answer: RatesErr), and LocalSpeed
	// this site's SpeedProbe beside it.
	Receiver   *Rates
	RatesErr   error
	LocalSpeed float64
	// Container is the spooled container of the best choice (with
	// PlanRequest.Spool; "" otherwise): SendFile with the same spool,
	// encode options and name sends it as it is.
	Container string
	// Session is the plan's authenticated connection to the receiver,
	// with PlanRequest.KeepSession: give it to the send (SendOptions) or
	// Close it.
	Session *Session
}

// Where a plan's g came from.
const (
	// GReceiver: the receiver's record of its regenerations with the
	// plugin, scaled by its speed now against its speed then.
	GReceiver = "receiver"
	// GScaled: a regeneration here, scaled by the receiver's speed now
	// against this site's.
	GScaled = "here, scaled"
	// GHere: a regeneration here, as is (no receiver to ask, or one
	// that has not measured its speed yet).
	GHere = "here"
	// GDefault: the plugin's stated RegenRate (RegenRater), scaled by
	// the receiver's speed now (this site's without a receiver): a
	// receiver with no record of the plugin, which is not regenerated
	// here.
	GDefault = "plugin default"
)

// MakePlan calibrates the candidates of req on its output and ranks them.
// A candidate that fails to calibrate is Skipped, not an error.
func MakePlan(ctx context.Context, req PlanRequest) (Plan, error) {
	st, err := SourceFile(req.Path)
	if err != nil {
		return Plan{}, err
	}
	p := Plan{Size: st.Size(), Link: req.Link, LinkSource: "given"}
	var ests []cost.Estimate
	if p.Link.B <= 0 && req.Measure.Addr == "" {
		return p, fmt.Errorf("medic: plan: no bandwidth and no receiver to measure it against")
	}
	names := req.Plugins
	if !containsName(names, "raw") {
		names = append(names, "raw")
	}
	var sess *sclient
	if req.Measure.Addr != "" {
		// One session for the rates and the probes: each connection
		// costs round trips (connect, hello, auth).
		// The rates come in the authentication's round trip.
		c, r, ratesErr, err := dialRates(ctx, &req.Measure)
		if err != nil {
			return p, fmt.Errorf("measure the link to %s: %w", req.Measure.Addr, err)
		}
		stop := context.AfterFunc(ctx, func() { c.nc.Close() })
		defer stop()
		// The session is closed unless it is handed to the send.
		defer func() {
			if sess != nil && p.Session == nil {
				sess.nc.Close()
			}
		}()
		p.Receiver, p.RatesErr = r, ratesErr
		sess = c
	}
	p.GFrom = map[string]string{}
	env := Env{Resources: req.Resources}
	spooled := map[string]string{}
	defer func() {
		for _, f := range spooled {
			if f != p.Container {
				os.Remove(f)
			}
		}
	}()
	var dg [32]byte
	if req.Spool != "" {
		if err := os.MkdirAll(req.Spool, 0o700); err != nil {
			return p, fmt.Errorf("medic: plan: spool: %w", err)
		}
		if _, dg, err = FileDigest(req.Path); err != nil {
			return p, err
		}
	}
	dest := req.Measure.Name
	if dest == "" {
		dest = filepath.Base(req.Path)
	}
	calib := func(n string) {
		o := req.Encode
		o.Plugin = n
		keep := ""
		if req.Spool != "" {
			keep = filepath.Join(req.Spool, SpoolName(dg, o, dest))
		}
		e, from, err := p.calibrate(ctx, req.Path, o, env, keep)
		if err != nil {
			p.Skipped = append(p.Skipped, Skipped{Plugin: o.Plugin, Err: err})
			return
		}
		if keep != "" {
			spooled[o.Plugin] = keep
		}
		p.GFrom[o.Plugin] = from
		ests = append(ests, e)
	}
	// Raw first, then a rough measure of the link: with them a candidate
	// whose g alone loses is not encoded at all (cannotWin).
	calib("raw")
	measured := p.Link.B <= 0
	rough, probed := false, false
	if measured {
		if l, ok := req.Links.Get(req.Measure.Addr); ok {
			p.Link.B, p.LinkSource, rough = l.B, "remembered", l.Rough
			if p.Link.RTT == 0 {
				p.Link.RTT = l.RTT.Seconds()
			}
			// A remembered precise rate is used as it is; a remembered
			// rough one is measured precisely below only if it must be.
			measured = l.Rough
		} else {
			if err := p.measureLink(ctx, sess, req, nil); err != nil {
				return p, err
			}
			rough, probed = p.LinkSource == "measured, rough probe", true
		}
	}
	for _, n := range names {
		n = strings.TrimSpace(n)
		if n == "raw" {
			continue
		}
		if g, _, ok := p.priorG(n); ok {
			if why := p.cannotWin(req.AppTime, n, g, ests); why != "" {
				p.Skipped = append(p.Skipped, Skipped{Plugin: n, Err: errors.New(why)})
				continue
			}
		}
		calib(n)
	}
	// The rough rate is kept when the same candidate is the cheapest at
	// half and at twice it, else the link is measured precisely.
	if measured && !p.robust(req.AppTime, ests, p.Link.B, 0) {
		if err := p.measureLink(ctx, sess, req, ests); err != nil {
			return p, err
		}
		rough, probed = p.LinkSource == "measured, rough probe", true
	}
	// Only a probe refreshes the memory: a remembered link is not made
	// younger by being used.
	if probed {
		if err := req.Links.Put(RememberedLink{Addr: req.Measure.Addr, B: p.Link.B,
			RTT: secondsDuration(p.Link.RTT), Rough: rough}); err != nil {
			slog.Warn("medic: plan: link not remembered", "err", err)
		}
	}
	p.Choices = cost.Plan(req.AppTime, float64(p.Size), ests, p.Link)
	if d, ok := cost.Decide(p.Choices); ok {
		p.Container = spooled[d.Best.Name]
	}
	if req.KeepSession && sess != nil {
		p.Session = &Session{c: sess}
	}
	return p, nil
}

// robust says whether a rough rate b (and rtt, when the link's is not
// known) is enough to choose among ests: see cost.Robust.
func (p *Plan) robust(T float64, ests []cost.Estimate, b float64, rtt time.Duration) bool {
	l := p.Link
	l.B = b
	if l.RTT == 0 {
		l.RTT = rtt.Seconds()
	}
	return cost.Robust(T, float64(p.Size), ests, l, 2)
}

// measureLink measures B (and the RTT, unless given) against the
// receiver, only as precisely as the choice needs: rough probes (16 KiB,
// then 4 times more until one lasts 50 ms) give a rough rate; when the same candidate is the
// cheapest at half and at twice that rate, the rough rate is kept, else
// a probe of ProbeTime measures it.
func (p *Plan) measureLink(ctx context.Context, c *sclient, req PlanRequest, ests []cost.Estimate) error {
	enough := func(b float64, rtt time.Duration) bool { return p.robust(req.AppTime, ests, b, rtt) }
	b, rtt, rough, err := c.measure(enough, ProbeTime, 256<<20, req.Measure.stall())
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("measure the link to %s: %w", req.Measure.Addr, err)
	}
	if p.Link.RTT == 0 {
		p.Link.RTT = rtt.Seconds()
	}
	p.Link.B, p.LinkSource = b, "measured"
	if rough {
		p.LinkSource = "measured, rough probe"
	}
	return nil
}

// priorG prices the g of a plugin at the receiver without regenerating
// here: from the receiver's record of the plugin when it has one, else
// from the plugin's stated rate (RegenRater) scaled to the receiver's
// speed now (this site's without a receiver). ok is false for a plugin
// that states no rate and that the receiver has no record of.
func (p *Plan) priorG(plugin string) (g float64, from string, ok bool) {
	if p.Receiver != nil {
		if rec, ok := p.Receiver.Find(plugin); ok {
			// The record as it is, not scaled by the speed probes: the
			// regenerations themselves are the better measure of the
			// receiver's speed (the latest weighs half), and on a shared
			// machine two 50 ms probes differ by more than its load does.
			if g, ok := cost.GFromHistory(float64(p.Size), rec.Rate, 0, 0); ok {
				return g, GReceiver, true
			}
		}
	}
	pl, err := Lookup(plugin)
	if err != nil {
		return 0, "", false
	}
	if _, ok := pl.(RegenRater); !ok {
		return 0, "", false
	}
	speed := p.Receiver.speed()
	if p.Receiver == nil {
		speed = p.localSpeed()
	}
	g, ok = DefaultG(plugin, p.Size, speed)
	return g, GDefault, ok
}

// calibrate measures f and x of one plugin here and prices its g at the
// receiver: by priorG when it can (nothing is regenerated here), else by
// a regeneration here scaled by the receiver's speed now against this
// site's.
func (p *Plan) calibrate(ctx context.Context, path string, o EncodeOptions, env Env, keep string) (cost.Estimate, string, error) {
	if g, from, ok := p.priorG(o.Plugin); ok {
		e, err := calibrate(ctx, path, o, Env{}, false, keep)
		e.G = g
		return e, from, err
	}
	e, err := calibrate(ctx, path, o, env, true, keep)
	if err != nil {
		return e, "", err
	}
	// A receiver whose first speed probe has not finished says 0: its g
	// is then this site's as is, and labelled so, not "scaled".
	if p.Receiver != nil && p.Receiver.Speed > 0 {
		e.G = cost.ScaleG(e.G, p.localSpeed(), p.Receiver.Speed)
		return e, GScaled, nil
	}
	return e, GHere, nil
}

// localSpeed is this site's SpeedProbe, probed the first time a price
// needs it (50 ms of both CPUs that a plan of recorded or stated rates
// does without).
func (p *Plan) localSpeed() float64 {
	if p.LocalSpeed == 0 {
		p.LocalSpeed = SpeedProbe(SpeedProbeTime)
	}
	return p.LocalSpeed
}

// cannotWin says why a plugin whose g is already priced loses even in
// its best case (encoded in no time into no bytes) to the cheapest of
// ests at half the link's bandwidth (a rough probe is within 2x), so that
// the plan need not encode it: "" when it may win.
func (p *Plan) cannotWin(T float64, plugin string, g float64, ests []cost.Estimate) string {
	l := p.Link
	l.B /= 2
	d, ok := cost.Decide(cost.Plan(T, float64(p.Size), ests, l))
	if !ok {
		return ""
	}
	lb := cost.Time(T, cost.Estimate{Name: plugin, G: g}, l)
	if lb <= d.Best.A {
		return ""
	}
	return fmt.Sprintf("cannot win: with no metadata and no encoding it would take %.3f s (g %.3f s), more than %s's %.3f s at half the link's bandwidth",
		lb, g, d.Best.Name, d.Best.A)
}

// CalibrateAll measures f, g and x of every named plugin on the output at
// path (see Calibrate); those that fail are returned as Skipped.
func CalibrateAll(ctx context.Context, path string, names []string, eo EncodeOptions, env Env) ([]cost.Estimate, []Skipped) {
	var ests []cost.Estimate
	var skipped []Skipped
	for _, n := range names {
		o := eo
		o.Plugin = strings.TrimSpace(n)
		e, err := Calibrate(ctx, path, o, env)
		if err != nil {
			skipped = append(skipped, Skipped{Plugin: o.Plugin, Err: err})
			continue
		}
		ests = append(ests, e)
	}
	return ests, skipped
}

func containsName(xs []string, s string) bool {
	for _, x := range xs {
		if strings.TrimSpace(x) == s {
			return true
		}
	}
	return false
}

// WriteText writes the plan as `pario medic plan` prints it: the output
// and the link, a row per choice with the bandwidth below which it pays,
// the skipped plugins and the best choice.
func (p Plan) WriteText(w io.Writer) error {
	var b bytes.Buffer
	D, l := p.Size, p.Link
	fmt.Fprintf(&b, "output %s; link %s (%s)", units.FormatBytes(D), units.FormatRate(l.B), p.LinkSource)
	if l.RTT > 0 {
		fmt.Fprintf(&b, ", RTT %.1f ms", l.RTT*1e3)
	}
	if l.Window > 0 && l.Effective() < l.B {
		fmt.Fprintf(&b, ", one stream %s (window/RTT)", units.FormatRate(l.Effective()))
	}
	fmt.Fprintln(&b)
	switch {
	case p.Receiver != nil && p.Receiver.Speed <= 0:
		// Printed as "speed now 0.00x" before, with g labelled scaled.
		fmt.Fprintf(&b, "receiver: speed not measured yet (it probes itself after it starts); g from its record of earlier regenerations where it has one, else the plugin's stated rate or a regeneration here, not scaled\n")
	case p.Receiver != nil && p.LocalSpeed == 0:
		fmt.Fprintf(&b, "receiver: g from its record of earlier regenerations where it has one, else the plugin's stated rate scaled to its speed now\n")
	case p.Receiver != nil:
		fmt.Fprintf(&b, "receiver: speed now %.2fx this site's; g from its record of earlier regenerations where it has one, else the plugin's stated rate or a regeneration here, scaled to its speed\n",
			p.Receiver.Speed/math.Max(p.LocalSpeed, 1))
	case p.RatesErr != nil:
		fmt.Fprintf(&b, "receiver: did not say how fast it regenerates (%v); g measured here\n", p.RatesErr)
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "plugin\tx\tD/x\tf (s)\tg (s)\tg from\tpredicted A (s)\tvs raw\tpays below\tfigure 2\t")
	for _, c := range p.Choices {
		bs, q := "-", "-"
		if c.Name != "raw" {
			switch v := cost.Crossover(float64(D), c.Estimate); {
			case math.IsInf(v, 1):
				bs = "always"
			case v == 0:
				bs = "never"
			default:
				bs = units.FormatRate(v)
			}
			q = cost.Classify(float64(D), c.Estimate, l.Effective()).Short()
		}
		from := p.GFrom[c.Name]
		if from == "" {
			from = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%.1f\t%.3f\t%.3f\t%s\t%.3f\t%.2fx\t%s\t%s\t\n", c.Name, units.FormatBytes(int64(c.X)), float64(D)/math.Max(c.X, 1), c.F, c.G, from, c.A, c.Speedup, bs, q)
	}
	tw.Flush()
	for _, s := range p.Skipped {
		fmt.Fprintf(&b, "skipped %s: %v\n", s.Plugin, s.Err)
	}
	if d, ok := cost.Decide(p.Choices); ok {
		best := d.Best
		if best.Name == "raw" {
			fmt.Fprintf(&b, "best: raw (no plugin pays on this link)\n")
		} else {
			fmt.Fprintf(&b, "best: %s, %.2fx faster than raw (%.3f s saved), %v\n", best.Name, best.Speedup, best.A*best.Speedup-best.A,
				cost.Classify(float64(D), best.Estimate, l.Effective()))
		}
		fmt.Fprintf(&b, "why: %s\n", d.Why())
	}
	_, err := w.Write(b.Bytes())
	return err
}

package medic

import (
	"context"
	"crypto/sha256"
	"fmt"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pario/pario/medic/cost"
)

// Rates is how fast a receiver regenerates now, as it answers the rates
// op: the sender prices each plugin's g with it before choosing one
// (send --auto, plan --measure).
type Rates struct {
	// Speed is the receiver's SpeedProbe now: it falls as the machine is
	// loaded.
	Speed float64
	// Plugins are its records of earlier regenerations, one per plugin
	// it has regenerated with since it started.
	Plugins []PluginRate
}

// PluginRate is a receiver's record of its regenerations with a plugin.
type PluginRate struct {
	Plugin        string
	Regenerations int64
	// Rate is output bytes regenerated per second of g (digest check
	// included), weighted towards the latest regenerations.
	Rate float64
	// Speed is the receiver's SpeedProbe when it regenerated at Rate.
	Speed float64
}

// speed is r's Speed, 0 (unknown) for no answer.
func (r *Rates) speed() float64 {
	if r == nil {
		return 0
	}
	return r.Speed
}

// Find returns the record of plugin, if the receiver has one.
func (r Rates) Find(plugin string) (PluginRate, bool) {
	for _, p := range r.Plugins {
		if p.Plugin == plugin && p.Rate > 0 {
			return p, true
		}
	}
	return PluginRate{}, false
}

// RegenRater is a plugin that states a conservative regeneration rate,
// for a plan to price g with when the receiver has no record of the
// plugin: then nothing is regenerated at the sender (regenerating a BLAST
// report here to price it took as long as the send). The receiver records
// the real rate of every regeneration, so that the next plan uses that.
type RegenRater interface {
	// RegenRate is output bytes regenerated per second (digest check
	// included) on a machine whose SpeedProbe reads ReferenceSpeed.
	RegenRate() float64
}

// ReferenceSpeed is the SpeedProbe a RegenRate is stated at: this
// project's 2-core development machine under its usual load (its probe
// read 1.2e9-1.7e9). A receiver whose probe reads twice that is taken to
// regenerate twice as fast.
const ReferenceSpeed = 1.5e9

// DefaultG prices the regeneration of size output bytes with plugin from
// its stated RegenRate at a receiver whose SpeedProbe reads speed (0:
// unknown, taken as ReferenceSpeed). It returns false when the plugin
// states no rate.
func DefaultG(plugin string, size int64, speed float64) (float64, bool) {
	p, err := Lookup(plugin)
	if err != nil {
		return 0, false
	}
	r, ok := p.(RegenRater)
	if !ok {
		return 0, false
	}
	g, ok := cost.GFromHistory(float64(size), r.RegenRate(), ReferenceSpeed, speed)
	return g, ok
}

// SpeedProbeTime is how long a SpeedProbe runs.
const SpeedProbeTime = 50 * time.Millisecond

// SpeedProbe measures this machine's compute speed now: SHA-256 on every
// CPU for d, in bytes/s. It is only compared with another probe (here
// and at the receiver, now and at an earlier regeneration), so its unit
// does not matter; what matters is that it falls as other processes take
// the CPUs, as regeneration does. It is the median of five slices of d,
// so that a blip of another process does not count as load.
func SpeedProbe(d time.Duration) float64 {
	var v [5]float64
	for i := range v {
		v[i] = speedSlice(d / 5)
	}
	sort.Float64s(v[:])
	return v[2]
}

func speedSlice(d time.Duration) float64 {
	n := runtime.GOMAXPROCS(0)
	var total atomic.Int64
	var wg sync.WaitGroup
	t0 := time.Now()
	deadline := t0.Add(d)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 4<<10)
			var done int64
			for time.Now().Before(deadline) {
				sum := sha256.Sum256(buf)
				buf[0] = sum[0]
				done += int64(len(buf))
			}
			total.Add(done)
		}()
	}
	wg.Wait()
	return float64(total.Load()) / time.Since(t0).Seconds()
}

// AskRates asks a receiver how fast it regenerates now (the rates op).
// A receiver older than the op drops the connection: the error says so.
func AskRates(ctx context.Context, o SendOptions) (Rates, error) {
	c, err := dial(ctx, &o)
	if err != nil {
		return Rates{}, err
	}
	defer c.nc.Close()
	stop := context.AfterFunc(ctx, func() { c.nc.Close() })
	defer stop()
	r, err := c.rates()
	if err != nil && ctx.Err() != nil {
		return r, ctx.Err()
	}
	if err != nil {
		return r, fmt.Errorf("ask %s for its rates: %w", o.Addr, err)
	}
	return r, nil
}

func (c *sclient) rates() (Rates, error) {
	if err := writeFrame(c.nc, opRates.OpInfo, 0, ratesRequest{}); err != nil {
		return Rates{}, err
	}
	var r ratesResponse
	if err := c.answer(opRates.OpInfo, &r, nil); err != nil {
		return Rates{}, fmt.Errorf("%w (a receiver older than the rates op drops the connection)", err)
	}
	return r.Rates, nil
}

// regenLog is a receiver's record of its regenerations, by plugin.
type regenLog struct {
	mu sync.Mutex
	m  map[string]*PluginRate
}

// note adds a regeneration of size output bytes in g. The rate is
// weighted half to the latest regeneration, so that the record follows a
// receiver whose load or data changed.
func (l *regenLog) note(plugin string, size int64, g time.Duration) {
	if g <= 0 || size <= 0 {
		return
	}
	rate := float64(size) / g.Seconds()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[string]*PluginRate{}
	}
	p := l.m[plugin]
	if p == nil {
		l.m[plugin] = &PluginRate{Plugin: plugin, Regenerations: 1, Rate: rate}
		return
	}
	p.Regenerations++
	p.Rate = (p.Rate + rate) / 2
}

// noteSpeed adds the SpeedProbe taken just after a regeneration with
// plugin, weighted as its rate is: the speed the record was made at.
func (l *regenLog) noteSpeed(plugin string, speed float64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.m[plugin]
	switch {
	case p == nil:
	case p.Speed == 0:
		p.Speed = speed
	default:
		p.Speed = (p.Speed + speed) / 2
	}
}

func (l *regenLog) snapshot() []PluginRate {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]PluginRate, 0, len(l.m))
	for _, p := range l.m {
		out = append(out, *p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Plugin < out[j].Plugin })
	return out
}

// SpeedMaxAge is how long a receiver answers the rates op with a speed it
// probed earlier: a machine's load changes over minutes, and a probe per
// send cost every send --auto 50 ms of waiting.
const SpeedMaxAge = time.Minute

// speedCache is a receiver's latest SpeedProbe and when it was taken.
type speedCache struct {
	mu         sync.Mutex
	v          float64
	at         time.Time
	refreshing bool
}

func (c *speedCache) set(v float64) {
	c.mu.Lock()
	c.v, c.at = v, time.Now()
	c.mu.Unlock()
}

// speedNow is the receiver's speed for the rates op: the cached probe,
// refreshed in the background once older than SpeedMaxAge. The answer
// never waits for a probe: before the first one has finished it is 0
// (unknown: a stated rate is then taken at ReferenceSpeed).
func (s *Server) speedNow() float64 {
	c := &s.speed
	c.mu.Lock()
	defer c.mu.Unlock()
	if (c.v == 0 || time.Since(c.at) > SpeedMaxAge) && !c.refreshing {
		c.refreshing = true
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			v := SpeedProbe(SpeedProbeTime)
			c.mu.Lock()
			c.v, c.at, c.refreshing = v, time.Now(), false
			c.mu.Unlock()
		}()
	}
	return c.v
}

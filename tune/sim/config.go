package sim

import (
	"fmt"
	"math"
	"runtime"

	"github.com/pario/pario/tune/model"
)

// Init is the state of every queue at time 0.
type Init int

const (
	// Stationary draws each queue's unfinished work from the equilibrium
	// law, so the work found at time t has exactly the law the model uses.
	Stationary Init = iota
	// Empty starts every queue idle, as the paper's simulation does.
	Empty
)

func (i Init) String() string {
	switch i {
	case Stationary:
		return "stationary"
	case Empty:
		return "empty"
	}
	return fmt.Sprintf("Init(%d)", int(i))
}

// Config describes one simulated job and how to estimate its mean system
// time. The zero value of every optional field selects its default.
type Config struct {
	// Lambda and Gamma are the background arrival and service rates at
	// every target (1/s); rho = Lambda/Gamma must be below 1.
	Lambda, Gamma float64
	// V is the write speed of one target (GB/s).
	V float64
	// FileSize is the size of the job in GB (M); 0 measures the wait
	// alone. With Groups = m > 1 it is the whole job: m files of
	// FileSize/m each.
	FileSize float64
	// Stripes is n, the number of targets each file is striped over (>= 1).
	Stripes int
	// Groups is m, the number of files written at once (0 or 1: one file,
	// the paper's model; > 1: the multi-group case).
	Groups int
	// Targets is N, the number of targets to choose from. With Groups <= 1
	// it defaults to Stripes (the file uses n distinct targets; which ones
	// does not matter). With Groups > 1 it must be set, >= Stripes.
	Targets int
	// Time is t > 0, the arrival time of the job (s).
	Time float64
	// Init is the initial state of the queues (default Stationary).
	Init Init

	// Experiments, if > 0, fixes the number of experiments; 0 chooses it
	// from a pilot run so that the 99% confidence half-width is at most
	// RelHalfWidth times the mean.
	Experiments int
	// RelHalfWidth is the precision goal (default 0.01).
	RelHalfWidth float64
	// PilotExperiments is the size of the pilot run (default 4096).
	PilotExperiments int
	// MaxExperiments caps the automatic count (default 20,000,000).
	MaxExperiments int

	// Seed selects the random streams; equal Configs give equal Results.
	Seed uint64
	// Workers is the number of goroutines (default runtime.GOMAXPROCS(0)).
	// It does not change the Result.
	Workers int
}

// Defaults.
const (
	DefaultRelHalfWidth     = 0.01
	DefaultPilotExperiments = 4096
	DefaultMaxExperiments   = 20_000_000
	// MaxExperiments bounds a fixed Experiments (and MaxExperiments):
	// the run keeps a slot per 256 experiments.
	MaxExperiments = 1 << 30
	// MaxEventsPerExperiment bounds the background arrivals one experiment
	// simulates (about 10 s of one core).
	MaxEventsPerExperiment = 1e9
)

// Z99 is z_0.995, the two-sided 99% standard-normal quantile.
const Z99 = 2.5758293035489004

// ConfigError reports a bad Config field. It matches model.ErrInvalid, or
// model.ErrUnstable when rho >= 1, under errors.Is.
type ConfigError struct {
	Field string
	Value float64
	Why   string
	Kind  error
}

func (e *ConfigError) Error() string {
	if e.Kind == model.ErrUnstable {
		return fmt.Sprintf("sim: rho = Lambda/Gamma = %.6g >= 1: the queue is unstable", e.Value)
	}
	return fmt.Sprintf("sim: %s = %v %s", e.Field, e.Value, e.Why)
}

// Unwrap returns model.ErrInvalid or model.ErrUnstable.
func (e *ConfigError) Unwrap() error { return e.Kind }

func bad(field string, v float64, why string) error {
	return &ConfigError{Field: field, Value: v, Why: why, Kind: model.ErrInvalid}
}

func checkFloat(field string, v float64, allowZero bool) error {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return bad(field, v, "is not finite")
	case v < 0 || (v == 0 && !allowZero):
		if allowZero {
			return bad(field, v, "is negative")
		}
		return bad(field, v, "is not positive")
	}
	return nil
}

// normalize validates c and fills in the defaults.
func (c Config) normalize() (Config, error) {
	if err := checkFloat("Lambda", c.Lambda, false); err != nil {
		return c, err
	}
	if err := checkFloat("Gamma", c.Gamma, false); err != nil {
		return c, err
	}
	if rho := c.Lambda / c.Gamma; !(rho < 1) {
		return c, &ConfigError{Field: "rho", Value: rho, Kind: model.ErrUnstable}
	}
	if err := checkFloat("V", c.V, false); err != nil {
		return c, err
	}
	if err := checkFloat("FileSize", c.FileSize, true); err != nil {
		return c, err
	}
	if err := checkFloat("Time", c.Time, false); err != nil {
		return c, err
	}
	if c.Stripes < 1 {
		return c, bad("Stripes", float64(c.Stripes), "is not positive (must be >= 1)")
	}
	if c.Stripes > model.MaxStripeCount {
		return c, bad("Stripes", float64(c.Stripes), fmt.Sprintf("is too large (at most %d)", model.MaxStripeCount))
	}
	if c.Groups < 0 {
		return c, bad("Groups", float64(c.Groups), "is negative")
	}
	if c.Groups == 0 {
		c.Groups = 1
	}
	switch {
	case c.Targets < 0:
		return c, bad("Targets", float64(c.Targets), "is negative")
	case c.Targets == 0 && c.Groups > 1:
		return c, bad("Targets", 0, "must be set (>= Stripes) when Groups > 1")
	case c.Targets == 0:
		c.Targets = c.Stripes
	case c.Targets < c.Stripes:
		return c, bad("Targets", float64(c.Targets), fmt.Sprintf("is less than Stripes = %d", c.Stripes))
	case c.Targets > model.MaxStripeCount:
		// Every worker keeps three slices of Targets entries.
		return c, bad("Targets", float64(c.Targets), fmt.Sprintf("is too large (at most %d)", model.MaxStripeCount))
	}
	if c.Init != Stationary && c.Init != Empty {
		return c, bad("Init", float64(c.Init), "is not Stationary or Empty")
	}
	if c.Experiments < 0 {
		return c, bad("Experiments", float64(c.Experiments), "is negative")
	}
	if c.Experiments > MaxExperiments {
		return c, bad("Experiments", float64(c.Experiments), fmt.Sprintf("is too large (at most %d)", MaxExperiments))
	}
	// One experiment simulates every queue a block lands on over [0, Time]:
	// about Lambda*Time arrivals each. Bound it, so that an experiment ends
	// (and Ctrl-C, looked at between experiments, is heard) within seconds.
	if ev := float64(c.Groups) * float64(c.Stripes) * (1 + c.Lambda*c.Time); ev > MaxEventsPerExperiment {
		return c, bad("Time", c.Time, fmt.Sprintf("is too long: one experiment would simulate about %.3g arrivals (files x stripes x (1 + Lambda x Time)), more than %.0g", ev, float64(MaxEventsPerExperiment)))
	}
	if err := checkFloat("RelHalfWidth", c.RelHalfWidth, true); err != nil {
		return c, err
	}
	if c.RelHalfWidth == 0 {
		c.RelHalfWidth = DefaultRelHalfWidth
	}
	if c.PilotExperiments < 0 {
		return c, bad("PilotExperiments", float64(c.PilotExperiments), "is negative")
	}
	if c.PilotExperiments == 0 {
		c.PilotExperiments = DefaultPilotExperiments
	}
	if c.PilotExperiments < 2 {
		return c, bad("PilotExperiments", float64(c.PilotExperiments), "is too small (must be >= 2)")
	}
	if c.MaxExperiments < 0 {
		return c, bad("MaxExperiments", float64(c.MaxExperiments), "is negative")
	}
	if c.MaxExperiments == 0 {
		c.MaxExperiments = DefaultMaxExperiments
	}
	if c.MaxExperiments > MaxExperiments {
		return c, bad("MaxExperiments", float64(c.MaxExperiments), fmt.Sprintf("is too large (at most %d)", MaxExperiments))
	}
	if c.Workers < 0 {
		return c, bad("Workers", float64(c.Workers), "is negative")
	}
	if c.Workers == 0 {
		c.Workers = runtime.GOMAXPROCS(0)
	}
	return c, nil
}

func (c Config) params() model.Params {
	return model.Params{Lambda: c.Lambda, Gamma: c.Gamma, V: c.V}
}

// prediction returns the closed-form mean of T for a normalized Config,
// when there is one: model.SystemTime (or MeanMaxWait when FileSize = 0)
// for a stationary start; model.MeanWait(t) + FileSize/V for one target
// started empty; for Groups > 1 only the case Stripes = Targets, where
// every target holds m blocks and T is a one-file job on N targets.
func (c Config) prediction() (float64, bool) {
	p := c.params()
	n := c.Stripes
	if c.Groups > 1 {
		if c.Stripes != c.Targets {
			return math.NaN(), false
		}
	}
	svc := c.FileSize / (float64(n) * c.V)
	switch {
	case c.Init == Stationary:
		w, err := model.MeanMaxWait(p, n)
		if err != nil {
			return math.NaN(), false
		}
		return w + svc, true
	case n == 1:
		w, err := model.MeanWait(p, c.Time)
		if err != nil {
			return math.NaN(), false
		}
		return w + svc, true
	}
	return math.NaN(), false
}

// biasBound bounds the downward bias of an Empty start: k*B(t) for a job
// using at most k queues (see the package doc); 0 for Stationary.
func (c Config) biasBound() float64 {
	if c.Init == Stationary {
		return 0
	}
	p := c.params()
	eq, err1 := model.MeanWaitEquilibrium(p)
	w, err2 := model.MeanWait(p, c.Time)
	if err1 != nil || err2 != nil {
		return math.NaN()
	}
	k := min(c.Targets, c.Groups*c.Stripes)
	return float64(k) * math.Max(0, eq-w)
}

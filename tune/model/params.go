package model

import (
	"errors"
	"fmt"
	"math"
)

// Params are the parameters of the model, shared by every target.
type Params struct {
	// Lambda is the arrival rate of background requests at one target
	// (1/s; the mean inter-arrival time is 1/Lambda).
	Lambda float64
	// Gamma is the service rate of background requests (1/s; the mean
	// service time is 1/Gamma).
	Gamma float64
	// V is the write speed of one target (GB/s). It is needed only by the
	// system-time functions; the waiting-time functions ignore it.
	V float64
}

// Rho returns the utilisation Lambda/Gamma. It does not validate p.
func (p Params) Rho() float64 { return p.Lambda / p.Gamma }

// Describe renders p as every tune command's report states it:
// "lambda = 0.1/s, gamma = 0.125/s (rho = 0.8), V = 0.0625 GB/s".
func (p Params) Describe() string {
	return fmt.Sprintf("lambda = %g/s, gamma = %g/s (rho = %.4g), V = %g GB/s", p.Lambda, p.Gamma, p.Rho(), p.V)
}

// ErrInvalid is matched (errors.Is) by every error about a parameter that
// is not positive, not finite or out of range.
var ErrInvalid = errors.New("invalid parameter")

// ErrUnstable is matched (errors.Is) by the error returned when
// rho = Lambda/Gamma >= 1, where no equilibrium exists.
var ErrUnstable = errors.New("unstable queue")

// ParamError reports a bad parameter; Name is the parameter's name as it
// appears in the message ("lambda", "gamma", "V", "M", "n", "t", ...).
type ParamError struct {
	Name  string
	Value float64
	// Why completes the message, e.g. "is not positive".
	Why string
	// Kind is ErrInvalid or ErrUnstable.
	Kind error
}

func (e *ParamError) Error() string {
	if e.Kind == ErrUnstable {
		return fmt.Sprintf("model: rho = lambda/gamma = %.6g >= 1: the queue is unstable", e.Value)
	}
	return fmt.Sprintf("model: %s = %v %s", e.Name, e.Value, e.Why)
}

// Unwrap makes errors.Is(err, ErrInvalid) and errors.Is(err, ErrUnstable)
// work.
func (e *ParamError) Unwrap() error { return e.Kind }

func positive(name string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return &ParamError{Name: name, Value: v, Why: "is not finite", Kind: ErrInvalid}
	}
	if v <= 0 {
		return &ParamError{Name: name, Value: v, Why: "is not positive", Kind: ErrInvalid}
	}
	return nil
}

func nonNegative(name string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return &ParamError{Name: name, Value: v, Why: "is not finite", Kind: ErrInvalid}
	}
	if v < 0 {
		return &ParamError{Name: name, Value: v, Why: "is negative", Kind: ErrInvalid}
	}
	return nil
}

func atLeastOne(name string, v int) error {
	if v < 1 {
		return &ParamError{Name: name, Value: float64(v), Why: "is not positive (must be >= 1)", Kind: ErrInvalid}
	}
	return nil
}

// ValidateQueue checks Lambda and Gamma: both positive and finite, and
// rho = Lambda/Gamma < 1. V is not looked at.
func (p Params) ValidateQueue() error {
	if err := positive("lambda", p.Lambda); err != nil {
		return err
	}
	if err := positive("gamma", p.Gamma); err != nil {
		return err
	}
	if rho := p.Lambda / p.Gamma; !(rho < 1) {
		return &ParamError{Name: "rho", Value: rho, Kind: ErrUnstable}
	}
	return nil
}

// Validate checks every field: ValidateQueue and a positive, finite V.
func (p Params) Validate() error {
	if err := p.ValidateQueue(); err != nil {
		return err
	}
	return positive("V", p.V)
}

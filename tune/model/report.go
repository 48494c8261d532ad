package model

import (
	"bytes"
	"fmt"
	"io"
	"text/tabwriter"
)

// Optimum is the answer of `pario tune model`: the optimal stripe count of
// a file by one formula, beside the other formula's.
type Optimum struct {
	Params  Params
	Size    float64 // M, GB
	MaxN    int     // stripe counts considered: 1..MaxN
	Formula Formula
	N       int     // optimal stripe count by Formula
	T       float64 // its E(T), s
	// OtherN and OtherT are the other formula's optimum.
	OtherN int
	OtherT float64
}

// other is the formula f is compared with.
func (f Formula) other() Formula {
	if f == Paper {
		return Exact
	}
	return Paper
}

// FindOptimum finds the optimal stripe count in 1..maxN of a file of size
// GB by formula f and by the other formula.
func FindOptimum(p Params, size float64, maxN int, f Formula) (Optimum, error) {
	o := Optimum{Params: p, Size: size, MaxN: maxN, Formula: f}
	if err := checkMaxN(maxN); err != nil {
		return o, err
	}
	var err error
	if o.N, o.T, err = f.OptimalN(p, size, maxN); err != nil {
		return o, err
	}
	if o.OtherN, o.OtherT, err = f.other().OptimalN(p, size, maxN); err != nil {
		return o, err
	}
	return o, nil
}

// WriteText writes the optimum as `pario tune model` prints it, with
// E(T) by both formulas for the stripe counts around it.
func (o Optimum) WriteText(w io.Writer) error {
	var b bytes.Buffer
	f, other := o.Formula, o.Formula.other()
	fmt.Fprintf(&b, "model: %s\n", o.Params.Describe())
	fmt.Fprintf(&b, "file: %g GB, stripe counts 1..%d, formula: %s\n", o.Size, o.MaxN, f)
	fmt.Fprintf(&b, "optimum: N=%d  T=%.4f s  (%.1f MB/s)\n", o.N, o.T, o.Size*1000/o.T)
	fmt.Fprintf(&b, "%s formula: N=%d  T=%.4f s\n\n", other, o.OtherN, o.OtherT)
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "n\tE(T) %s (s)\tvs optimum\tE(T) %s (s)\t\n", f, other)
	for k := max(1, o.N-3); k <= min(o.MaxN, o.N+3); k++ {
		t, err := f.SystemTime(o.Params, o.Size, k)
		if err != nil {
			return err
		}
		ot, err := other.SystemTime(o.Params, o.Size, k)
		if err != nil {
			return err
		}
		mark := ""
		if k == o.N {
			mark = " *"
		}
		fmt.Fprintf(tw, "%d%s\t%.4f\t%+.3f%%\t%.4f\t\n", k, mark, t, 100*(t/o.T-1), ot)
	}
	tw.Flush()
	_, err := w.Write(b.Bytes())
	return err
}

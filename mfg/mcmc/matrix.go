package mcmc

import (
	"context"
	"fmt"
	"io"
	"strconv"
)

// Matrix writes a NEXUS input matrix of taxa random DNA sequences of
// nchar characters, as the thesis' gtaxa did (appendix A.3, A.5.1): the
// data per generation depends only on the number of taxa. mrbayes, when
// set, appends a mrbayes block that runs the analysis of p with MrBayes
// 3.2.7's own settings (mcmc nruns, nchains, ngen, samplefreq, swapfreq)
// and quits. It stops with ctx's error when ctx is done.
func Matrix(ctx context.Context, w io.Writer, taxa, nchar int, seed uint64, mrbayes *Params) error {
	if err := CheckMatrix(taxa, nchar, mrbayes); err != nil {
		return err
	}
	if _, err := fmt.Fprintf(w, "#NEXUS\n"+
		"[TITLE: Synthetic input matrix generated from gtaxa.]\n"+
		"begin data;\ndimensions ntax=%d nchar=%d;\nformat datatype=DNA missing=n gap=-;\nmatrix\n", taxa, nchar); err != nil {
		return fmt.Errorf("mcmc: matrix: %w", err)
	}
	g := rng{hash(seed, 0x6d6174)}
	line := make([]byte, 0, nchar+16)
	for i := range taxa {
		if err := ctx.Err(); err != nil {
			return err
		}
		line = append(line[:0], Name(i)...)
		line = append(line, ' ')
		for range nchar {
			line = append(line, "acgt"[g.intn(4)])
		}
		line = append(line, '\n')
		if _, err := w.Write(line); err != nil {
			return fmt.Errorf("mcmc: matrix: %w", err)
		}
	}
	end := ";\nend;\n"
	if p := mrbayes; p != nil {
		end += "begin mrbayes;\n" +
			"set autoclose=yes nowarn=yes seed=" + strconv.FormatUint(seed%1_000_000+1, 10) + ";\n" +
			fmt.Sprintf("mcmc nruns=%d nchains=%d ngen=%d samplefreq=%d swapfreq=%d printfreq=%d diagnfreq=%d;\n",
				p.Runs, p.Chains, p.Gens, p.SampleFreq, p.SwapFreq, p.Gens, p.Gens) +
			"quit;\nend;\n"
	}
	if _, err := io.WriteString(w, end); err != nil {
		return fmt.Errorf("mcmc: matrix: %w", err)
	}
	return nil
}

// MaxMatrix bounds a matrix's characters over all taxa (4 Gi, 4 GiB of
// output): 65536 taxa of 16 Mi characters each, which each bound
// allows, would be a terabyte on standard output, far beyond any input
// MrBayes could read.
const MaxMatrix = 1 << 32

// CheckMatrix says what is wrong with a matrix's size or its mrbayes
// block's settings (each at least 1, as mb wants them).
func CheckMatrix(taxa, nchar int, mrbayes *Params) error {
	switch {
	case taxa < MinTaxa || taxa > MaxTaxa:
		return invalid("matrix: taxa must be in [%d, %d], got %d", MinTaxa, MaxTaxa, taxa)
	case nchar < 1 || nchar > 1<<24:
		return invalid("matrix: characters must be in [1, %d], got %d", 1<<24, nchar)
	case int64(taxa)*int64(nchar) > MaxMatrix:
		return invalid("matrix: %d taxa x %d characters is %d characters, more than %d: fewer taxa or characters", taxa, nchar, int64(taxa)*int64(nchar), int64(MaxMatrix))
	}
	if p := mrbayes; p != nil {
		for _, v := range []struct {
			name string
			v    int64
		}{{"runs", int64(p.Runs)}, {"chains", int64(p.Chains)}, {"gens", p.Gens}, {"samplefreq", p.SampleFreq}, {"swapfreq", p.SwapFreq}} {
			if v.v < 1 {
				return invalid("matrix: --%s %d: the mrbayes block wants at least 1", v.name, v.v)
			}
		}
	}
	return nil
}

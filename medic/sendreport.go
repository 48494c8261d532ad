package medic

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/pario/pario/medic/cost"
	"github.com/pario/pario/units"
)

// SendSummary is what `pario medic send` reports once the receiver has
// stored the output: where it went and what each part (f, x/B, g) took,
// beside the cost model's prediction when the plugin was chosen by one.
type SendSummary struct {
	Path, Addr string
	Size       int64  // of the output, D
	Asked      string // the plugin asked for (Report.Plugin differs after a fallback)
	Cipher     Cipher
	Report     *FileReport
	Wall       time.Duration // the whole send, as the sender saw it
	// Predicted, when not nil, is the plan's choice over Link.
	Predicted *cost.Choice
	Link      cost.Link
	// Planning is the time the plan took before the send (--auto): the
	// calibration of every candidate, the receiver's rates, the link.
	Planning time.Duration
}

// WriteText writes the summary as `pario medic send` prints it.
func (s SendSummary) WriteText(w io.Writer) error {
	var b bytes.Buffer
	rep := s.Report
	sr := rep.Send
	fmt.Fprintf(&b, "stored %s at %s (%s) via %s, %v\n", s.Path, s.Addr, sr.Result.Path, rep.Plugin, s.Cipher)
	if rep.FellBack != nil {
		fmt.Fprintf(&b, "  fell back   to %s: %s could not regenerate it at the receiver (%v)\n", rep.Plugin, s.Asked, rep.FellBack)
		if f := rep.Failed; f != nil {
			fmt.Fprintf(&b, "  failed try  %s: %s\n", s.Asked, attemptCost(f))
		}
	}
	fmt.Fprintf(&b, "  output      %s, sha256 %x… verified by the receiver\n", units.FormatBytes(s.Size), rep.Header.Digest[:8])
	fmt.Fprintf(&b, "  metadata    %s (%.1fx smaller)\n", units.FormatBytes(rep.MetaSize), float64(s.Size)/math.Max(float64(rep.MetaSize), 1))
	// With --auto the plan encoded the container the send reused: its f
	// is in the planning's time.
	planned := rep.Reused && s.Planning > 0 && s.Predicted != nil && rep.FellBack == nil
	switch {
	case planned:
		fmt.Fprintf(&b, "  encode f    %.3f s, by the plan (in its time; the send reused the container)\n", s.Predicted.F)
	case rep.Reused:
		fmt.Fprintf(&b, "  encode f    (container from the spool of an earlier attempt)\n")
	default:
		fmt.Fprintf(&b, "  encode f    %.3f s\n", rep.Encode.Seconds())
	}
	if sr.Resumed > 0 {
		fmt.Fprintf(&b, "  resumed     at %s of %s already at the receiver\n", units.FormatBytes(sr.Resumed), units.FormatBytes(sr.Size))
	}
	fmt.Fprintf(&b, "  connect     %.3f s (connection, handshake, offer)\n", sr.Connect.Seconds())
	if sr.Sent > 0 {
		fmt.Fprintf(&b, "  transfer    %.3f s, %s sent, %s\n", sr.Transfer.Seconds(), units.FormatBytes(sr.Sent), units.FormatRate(float64(sr.Sent)/math.Max(sr.Transfer.Seconds(), 1e-9)))
	} else {
		fmt.Fprintf(&b, "  transfer    none: the receiver held the whole container already\n")
	}
	fmt.Fprintf(&b, "  regenerate g %.3f s at the receiver (verify %.3f s, commit %.3f s; answer %.3f s after the transfer)\n",
		sr.Result.Decode.Seconds(), sr.Result.Verify.Seconds(), sr.Result.Commit.Seconds(), sr.Receiver.Seconds())
	if s.Planning > 0 {
		fmt.Fprintf(&b, "  planning    %.3f s before the send (the candidates that may win encoded here, the receiver's rates, the link)\n", s.Planning.Seconds())
		fmt.Fprintf(&b, "  total       %.3f s, %.3f s with the planning\n", s.Wall.Seconds(), (s.Wall + s.Planning).Seconds())
	} else {
		fmt.Fprintf(&b, "  total       %.3f s\n", s.Wall.Seconds())
	}
	if p := s.Predicted; p != nil {
		raw := p.A * p.Speedup
		// The prediction includes f: so does the measure.
		m, plus := s.Wall.Seconds(), ""
		if planned {
			m += p.F
			plus = ", the plan's f included"
		}
		fmt.Fprintf(&b, "  predicted   %.3f s with %s over %s (raw: %.3f s); measured %.3f s (%+.0f%%%s)\n",
			p.A, p.Name, units.FormatRate(s.Link.Effective()), raw, m, 100*(m-p.A)/p.A, plus)
	}
	_, err := w.Write(b.Bytes())
	return err
}

// attemptCost says what a failed attempt took, phase by phase.
func attemptCost(f *FileReport) string {
	var b bytes.Buffer
	if f.Reused {
		fmt.Fprintf(&b, "container from the spool")
	} else {
		fmt.Fprintf(&b, "encode f %.3f s", f.Encode.Seconds())
	}
	fmt.Fprintf(&b, ", metadata %s", units.FormatBytes(f.MetaSize))
	if sr := f.Send; sr != nil {
		if sr.Sent > 0 {
			fmt.Fprintf(&b, ", transfer %.3f s (%s sent)", sr.Transfer.Seconds(), units.FormatBytes(sr.Sent))
		}
		fmt.Fprintf(&b, ", receiver %.3f s until it refused", sr.Receiver.Seconds())
	}
	fmt.Fprintf(&b, "; %.3f s in all", f.Wall.Seconds())
	return b.String()
}

package advise

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/pario/pario/units"
)

// Text renders the advice for a terminal.
func (ad *Advice) Text() string {
	var b strings.Builder
	_ = ad.WriteText(&b) // a strings.Builder does not fail
	return b.String()
}

// WriteText writes the advice: the access, the pattern now and advised,
// then one block per topic.
func (ad *Advice) WriteText(w io.Writer) error {
	a := ad.Access
	var b strings.Builder
	dims := FormatDims(a.Dims)
	if a.Unlimited {
		dims = "unlimited(" + dims + ")"
	}
	fmt.Fprintf(&b, "access:  %s dataset %s of %s (%s), %s, %s", a.API, dims, a.Type, units.FormatBytes(ad.Bytes), plural(a.Ranks, "rank", "ranks"), a.Pattern)
	if a.Pattern == Interleaved {
		fmt.Fprintf(&b, " in turns of %s", units.FormatSize(a.Block))
	}
	fmt.Fprintf(&b, ", %s transfers\n", units.FormatSize(a.Transfer))
	fmt.Fprintf(&b, "target:  strip %s over %s, %s\n", units.FormatSize(a.StripSize), plural(a.StripeCount, "datafile", "datafiles"), plural(a.Servers, "server", "servers"))
	analysed := ""
	if ad.IOR.Segments > maxAnalysedSegments {
		analysed = fmt.Sprintf(" (first %d of %d turns analysed)", maxAnalysedSegments, ad.IOR.Segments)
	}
	fmt.Fprintf(&b, "now:     data at byte %d: %s%s\n", ad.Now.Header, class(ad.Now.Actual), analysed)
	fmt.Fprintf(&b, "advised: data at byte %d, %s: %s\n\n", ad.Then.Header, ad.Layout, class(ad.Then.Actual))
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	for i, it := range ad.Items {
		mark := " "
		if it.Change {
			mark = "*"
		}
		fmt.Fprintf(tw, "%s %d. %s\tnow:\t%s\n", mark, i+1, it.Topic, it.Now)
		fmt.Fprintf(tw, "\tadvice:\t%s\n", it.Advice)
		fmt.Fprintf(tw, "\teffect:\t%s\n", it.Effect)
	}
	tw.Flush()
	fmt.Fprintf(&b, "\n* marks a change. pario layout: %s (pario advise ... --apply DIR sets it)\n", ad.Layout)
	_, err := io.WriteString(w, b.String())
	return err
}

package pattern

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/pario/pario/units"
)

// String renders the parameters in IOR's option letters, with the
// extensions spelled out, e.g. "-N 10 -b 1m -t 1m -s 20480 -C -Q 1".
func (p IOR) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "-N %d -b %s -t %s -s %d", p.Tasks, units.FormatSize(p.Block), units.FormatSize(p.Transfer), p.Segments)
	if p.FilePerProc {
		b.WriteString(" -F")
	}
	if p.Reorder {
		fmt.Fprintf(&b, " -C -Q %d", p.TaskOffset)
		if p.RankShift > 1 {
			fmt.Fprintf(&b, " (shift %d)", p.RankShift)
		}
	}
	if p.Random {
		fmt.Fprintf(&b, " -z --random-offset-seed=%d", p.Seed)
	}
	if p.Strided {
		b.WriteString(" strided")
	}
	if p.DataStart != 0 {
		fmt.Fprintf(&b, " data-start=%d", p.DataStart)
	}
	return b.String()
}

// rate renders bytes/s as MB/s (10^6, as link rates are quoted) and MiB/s.
func rate(v float64) string {
	return fmt.Sprintf("%.1f MB/s (%.1f MiB/s)", v/1e6, v/(1<<20))
}

// FormatSet renders ascending integers compactly: "0-3,7,9-10".
func FormatSet(xs []int) string {
	if len(xs) == 0 {
		return "-"
	}
	var b strings.Builder
	for i := 0; i < len(xs); {
		j := i
		for j+1 < len(xs) && xs[j+1] == xs[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(xs[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(xs[j]))
		}
		i = j + 1
	}
	return b.String()
}

func pct(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b) * 100
}

// Text renders the report; see WriteText.
func (r *Report) Text() string {
	var b strings.Builder
	_ = r.WriteText(&b)
	return b.String()
}

// WriteText renders the report as a summary followed by a table per rank,
// a table per server and, when rates were given, the bandwidth bound.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	p := r.IOR
	file := "shared file"
	if p.FilePerProc {
		file = "file per process"
	}
	fmt.Fprintf(&b, "Pattern:    %s (%s, %s phase)\n", p, file, r.Phase)
	fmt.Fprintf(&b, "Aggregate:  %s in %d transfers of %s\n", units.FormatBytes(r.Bytes), r.Transfers, units.FormatBytes(p.Transfer))
	fmt.Fprintf(&b, "Layout:     %s, %d servers\n", r.Layout, r.Servers)
	fmt.Fprintf(&b, "Class:      %s\n", r.Class())
	if r.Configured != "" && r.Configured != r.Class() {
		fmt.Fprintf(&b, "Configured: %s at data start 0; the %d-byte header shifts it to %s (align the data to the strip)\n",
			r.Configured, p.DataStart, r.Class())
	}
	fmt.Fprintf(&b, "Straddling: %d of %d transfers (%.1f%%) cross a datafile boundary; %d pieces, %.2f per transfer, at most %d\n",
		r.Straddling, r.Transfers, pct(r.Straddling, r.Transfers), r.Pieces, float64(r.Pieces)/float64(max(r.Transfers, 1)), r.MaxPieces)
	fmt.Fprintf(&b, "delta_iox:  %.1f%% mean, %.1f%% max (servers one transfer touches / %d available)\n", r.DeltaIOX, r.MaxDeltaIOX, r.Servers)
	fmt.Fprintf(&b, "delta_ioz:  %.2f mean, %d max (stripes one transfer spans)\n", r.DeltaIOZ, r.MaxDeltaIOZ)
	for _, warn := range p.Warnings() {
		fmt.Fprintf(&b, "Warning:    %s\n", warn)
	}

	b.WriteString("\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "rank\ttarget\t#servers\tservers\tbytes\ttransfers\tregions\tstraddling\tpieces\t")
	for _, rr := range r.Ranks {
		fmt.Fprintf(tw, "%d\t%d\t%d\t%s\t%s\t%d\t%d\t%d\t%d\t\n", rr.Rank, rr.Target, len(rr.Servers), FormatSet(rr.Servers),
			units.FormatBytes(rr.Bytes), rr.Transfers, rr.Regions, rr.Straddling, rr.Pieces)
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	b.WriteString("\n")
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "server\t#clients\tranks\tbytes\tshare\trequests\t")
	for _, s := range r.PerServer {
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%.1f%%\t%d\t\n", s.Server, len(s.Clients), FormatSet(s.Clients),
			units.FormatBytes(s.Bytes), pct(s.Bytes, r.Bytes), s.Pieces)
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	if bd := r.Bound; bd != nil {
		b.WriteString("\nTheoretical maximum (B / max(busiest client link, busiest server, network)):\n")
		tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		if bd.ClientLimit > 0 {
			fmt.Fprintf(tw, "  client links\t%d clients\t%s\n", bd.Clients, rate(bd.ClientLimit))
		}
		if bd.ServerLimit > 0 {
			fmt.Fprintf(tw, "  servers\t%d used, imbalance %.2f\t%s\n", bd.UsedServers, bd.Imbalance, rate(bd.ServerLimit))
		}
		if bd.NetworkLimit > 0 {
			fmt.Fprintf(tw, "  network\tcap\t%s\n", rate(bd.NetworkLimit))
		}
		fmt.Fprintf(tw, "  maximum\tlimited by %s\t%s\n", bd.Bottleneck, rate(bd.Max))
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

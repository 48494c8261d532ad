// Command medicexp reproduces the shapes of the ParaMEDIC paper's section 5
// on one machine: a medic receiver and sender in-process, joined through a
// toxiproxy proxy (in-process too: this kernel has no netem) that adds
// latency and limits bandwidth. It sends an output raw, with zstd and with
// a semantic plugin, with and without encryption, over
//
//   - a latency sweep at a fixed bandwidth (one stream, window W: a stream
//     moves at most W/RTT, as one TCP connection does), and
//   - a bandwidth sweep,
//
// and writes the measured end-to-end times (encode + transfer + regenerate
// and verify) beside the cost model's predictions (f, g and x measured by a
// calibration run of each plugin) to CSV, and renders them to PNG with the
// predicted crossovers marked.
//
// Any registered plugin can be named: --plugins raw,zstd,blast with
// --input REPORT --param ... --resource ... once the blast plugin is built
// in. Without --input it generates a synthetic report-like text and uses
// the "synth" stand-in semantic plugin (see synth.go).
//
//	go run ./tools/medicexp                      # default sweeps, ~2 minutes
//	go run ./tools/medicexp --quick              # a few seconds, smoke test
package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"

	"github.com/pario/pario/internal/benchutil"
	"github.com/pario/pario/medic"
	"github.com/pario/pario/medic/cost"
	_ "github.com/pario/pario/medic/plugin/blast"
	_ "github.com/pario/pario/medic/plugin/periodic"
	_ "github.com/pario/pario/medic/plugin/zstd"
	"github.com/pario/pario/units"
)

type kvFlag map[string]string

func (k kvFlag) String() string { return fmt.Sprint(map[string]string(k)) }
func (k kvFlag) Set(s string) error {
	a, b, ok := strings.Cut(s, "=")
	if !ok {
		return fmt.Errorf("want KEY=VALUE, got %q", s)
	}
	k[a] = b
	return nil
}

type config struct {
	plugins, ciphers []string
	input            string
	size             int64
	work             int
	params, res      kvFlag
	latBW            float64
	rtts             []time.Duration
	latWindow        int
	bws              []float64
	bwRTT            time.Duration
	out              string
	sweeps           []string
	reps             int
	label            string // auto sweep: the report's name in medic-auto.csv
	load             int    // auto sweep: CPU-loading processes beside it (noted only)
	queryBytes       int64  // auto sweep: the query's size, for the scenario plots
	autoName         string // auto sweep: base name of its CSV and PNG
	autoPlot         string // auto sweep: "bandwidth" or "query" (figures 9, 10)
	autoTitle        string // auto sweep: the query plot's title
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "medicexp:", err)
		os.Exit(1)
	}
}

func splitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

// intList parses a comma-separated list of positive integers.
func intList(s string) ([]int, error) {
	var out []int
	for _, x := range splitList(s) {
		n, err := strconv.Atoi(x)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive integer", x)
		}
		out = append(out, n)
	}
	return out, nil
}

func run() error {
	c := config{params: kvFlag{}, res: kvFlag{}}
	plugins := flag.String("plugins", "raw,zstd,synth", "plugins to compare (raw is the baseline)")
	ciphers := flag.String("ciphers", "none,xchacha20poly1305", "ciphers to run each plugin with")
	flag.StringVar(&c.input, "input", "", "output file to move (default: a generated synthetic report)")
	c.size = 4_000_000
	flag.Var(units.SizeFlag(&c.size), "size", "size of the synthetic report (binary suffixes: 4m = 4 MiB)")
	flag.IntVar(&c.work, "work", 250, "synthetic report: SHA-256 rounds per record (the regeneration cost)")
	flag.Var(c.params, "param", "plugin parameter KEY=VALUE (repeatable)")
	flag.Var(c.res, "resource", "storage-site resource KEY=VALUE (repeatable)")
	c.latBW = 32e6
	flag.Var(units.RateFlag(&c.latBW), "latency-bandwidth", "bandwidth of the latency sweep (decimal: 32m = 32MB/s)")
	rtts := flag.String("rtts", "0,25ms,50ms,100ms,150ms,200ms,300ms,400ms", "round-trip times of the latency sweep")
	flag.IntVar(&c.latWindow, "window", 0, "window of the latency sweep's stream (bytes); 0: window and socket buffers of the bandwidth-delay product, as the paper sized them")
	bws := flag.String("bandwidths", "0.5MB/s,1MB/s,2MB/s,4MB/s,8MB/s,16MB/s,32MB/s,64MB/s", "bandwidths of the bandwidth sweep")
	flag.DurationVar(&c.bwRTT, "bandwidth-rtt", 0, "round-trip time of the bandwidth sweep")
	flag.StringVar(&c.out, "out", "docs", "directory for medic-latency.{csv,png} and medic-bandwidth.{csv,png}")
	sweeps := flag.String("sweeps", "latency,bandwidth", "which sweeps to run")
	flag.IntVar(&c.reps, "reps", 1, "repetitions per point (the median is kept)")
	quick := flag.Bool("quick", false, "tiny sweeps (smoke test)")
	paper := flag.Bool("paper", false, "instead of the link sweeps: the seed's figures 5, 6, 7 and 11 with real BLAST (see paper.go)")
	pc := paperConfig{link: cost.Link{B: 12.5e6, RTT: 0.05, Window: 256 << 10}}
	flag.StringVar(&pc.data, "data", "/usr/share/doc/mmseqs2/example-data", "--paper: the mmseqs2-examples data (DB.fasta.gz, QUERY.fasta.gz)")
	pQueries := flag.String("paper-queries", "10,25,50,100,150", "--paper: query counts (figures 7a, 11)")
	pHits := flag.String("paper-hits", "10,50,100,250,500", "--paper: -max_target_seqs values (figure 7b)")
	flag.IntVar(&pc.base, "paper-base", 50, "--paper: queries of figures 5, 6 and 7b")
	pCompute := flag.String("paper-compute", "16,24,32,40,48,56,64,72,80", "--paper: compute processors of figure 6 (against --paper-post)")
	flag.IntVar(&pc.post, "paper-post", 4, "--paper: post-processing processors")
	flag.IntVar(&pc.procs, "paper-procs", 76, "--paper: compute processors of figures 5, 7 and 11")
	flag.Var(units.RateFlag(&pc.link.B), "paper-bandwidth", "--paper: link bandwidth (decimal: 12.5m = 100 Mbit/s)")
	pRTT := flag.Duration("paper-rtt", 100*time.Millisecond, "--paper: link round-trip time of figures 6, 7 and 11")
	flag.StringVar(&pc.runs, "paper-runs", "", "--paper: draw the figures from this medic-paper-runs.csv instead of running BLAST")
	pRTTs := flag.String("paper-rtts", "0,10ms,25ms,50ms,100ms,200ms", "--paper: round-trip times of figure 5")
	flag.StringVar(&c.label, "label", "report", "auto sweep: the report's name in medic-auto.csv (auto.go)")
	flag.IntVar(&c.load, "load", 0, "auto sweep: how many CPU-loading processes run beside it (recorded in the CSV)")
	flag.Int64Var(&c.queryBytes, "query-bytes", 0, "auto sweep: the query's size in bytes (recorded in the CSV)")
	flag.StringVar(&c.autoName, "auto-name", "medic-auto", "auto sweep: base name of its CSV (appended to) and PNG")
	flag.StringVar(&c.autoPlot, "auto-plot", "bandwidth", "auto sweep: plot time against bandwidth (a panel per report) or against query size (query)")
	flag.StringVar(&c.autoTitle, "auto-title", "", "auto sweep: title of the query-size plot")
	redraw := flag.Bool("auto-redraw", false, "auto sweep: only redraw its PNG from its CSV (--out, --auto-name)")
	flag.Parse()
	if *redraw {
		if c.autoPlot == "query" {
			return renderScenario(c.out, c.autoName, c.autoTitle)
		}
		return renderAuto(c.out, c.autoName)
	}
	if *paper {
		pc.out = c.out
		pc.link.RTT = pRTT.Seconds()
		pc.link.Window = float64(c.latWindow)
		var err error
		if pc.queries, err = intList(*pQueries); err != nil {
			return fmt.Errorf("--paper-queries: %w", err)
		}
		if pc.hits, err = intList(*pHits); err != nil {
			return fmt.Errorf("--paper-hits: %w", err)
		}
		if pc.compute, err = intList(*pCompute); err != nil {
			return fmt.Errorf("--paper-compute: %w", err)
		}
		for _, r := range splitList(*pRTTs) {
			if r == "0" {
				r = "0s"
			}
			d, err := time.ParseDuration(r)
			if err != nil {
				return fmt.Errorf("--paper-rtts: %w", err)
			}
			pc.rtts = append(pc.rtts, d.Seconds())
		}
		if pc.post < 1 || pc.procs < 1 || pc.base < 1 {
			return errors.New("--paper-post, --paper-procs and --paper-base must be positive")
		}
		if err := os.MkdirAll(c.out, 0o755); err != nil {
			return err
		}
		return paperExperiments(context.Background(), pc)
	}
	if *quick {
		c.size, *rtts, *bws, c.work = 256_000, "0,50ms", "1MB/s,16MB/s", 4
	}
	c.plugins, c.ciphers, c.sweeps = splitList(*plugins), splitList(*ciphers), splitList(*sweeps)
	for _, r := range splitList(*rtts) {
		if r == "0" {
			r = "0s"
		}
		d, err := time.ParseDuration(r)
		if err != nil {
			return fmt.Errorf("--rtts: %w", err)
		}
		c.rtts = append(c.rtts, d)
	}
	for _, b := range splitList(*bws) {
		v, err := units.ParseRate(b)
		if err != nil {
			return fmt.Errorf("--bandwidths: %w", err)
		}
		c.bws = append(c.bws, v)
	}
	if err := os.MkdirAll(c.out, 0o755); err != nil {
		return err
	}
	return experiment(c)
}

type lab struct {
	toxics    bool // the link's toxics are on the proxy (setLink)
	key       []byte
	input     string
	D         int64
	srv       *medic.Server
	proxy     *toxiproxy.Proxy
	dest, tmp string
	est       map[string]cost.Estimate // plugin/cipher -> calibration
}

func experiment(c config) error {
	ctx := context.Background()
	tmp, err := os.MkdirTemp("", "medicexp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	l := &lab{tmp: tmp, dest: filepath.Join(tmp, "dest"), est: map[string]cost.Estimate{}}
	l.key = bytes.Repeat([]byte{0x5a}, medic.KeySize)
	l.input = c.input
	if l.input == "" {
		l.input = filepath.Join(tmp, "report.txt")
		if err := makeSynth(l.input, c.size, c.work); err != nil {
			return err
		}
	}
	st, err := os.Stat(l.input)
	if err != nil {
		return err
	}
	l.D = st.Size()
	for _, p := range c.plugins {
		if _, err := medic.Lookup(p); err != nil {
			return err
		}
	}

	// Receiver, in-process.
	os.MkdirAll(l.dest, 0o755)
	l.srv, err = medic.NewServer(medic.ServerConfig{Key: l.key, Store: medic.DirStore(l.dest), StagingDir: filepath.Join(tmp, "staging"), Resources: c.res})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	go l.srv.Serve(ln)
	defer l.srv.Close()

	// The emulated wide-area link: a toxiproxy proxy, in-process.
	api := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	l.proxy = toxiproxy.NewProxy(api, "wan", "127.0.0.1:0", ln.Addr().String())
	if err := l.proxy.Start(); err != nil {
		return err
	}
	defer l.proxy.Stop()

	// Calibrate every plugin and cipher on the output: f, g, x.
	fmt.Printf("output %s: %d bytes\n", l.input, l.D)
	for _, p := range c.plugins {
		for _, ci := range c.ciphers {
			cp, err := medic.ParseCipher(ci)
			if err != nil {
				return err
			}
			// Twice; keep the second (warm caches, like every later run).
			var e cost.Estimate
			for i := 0; i < 2; i++ {
				e, err = medic.Calibrate(ctx, l.input, medic.EncodeOptions{Plugin: p, Params: c.params, Cipher: cp, Key: l.key}, medic.Env{Resources: c.res})
				if err != nil {
					return fmt.Errorf("calibrate %s: %w", p, err)
				}
			}
			l.est[p+"/"+ci] = e
			fmt.Printf("calibrated %-6s %-18s x=%-9.0f f=%.3fs g=%.3fs  B*=%s\n", p, ci, e.X, e.F, e.G, units.FormatRate(cost.Crossover(float64(l.D), e)))
		}
	}
	for _, s := range c.sweeps {
		switch s {
		case "latency":
			var pts []point
			for _, rtt := range c.rtts {
				w := float64(c.latWindow)
				if w == 0 {
					w = float64(max(medic.DefaultWindow, cost.SocketBuffer(c.latBW, rtt.Seconds())))
				}
				ps, err := l.point(ctx, c, "latency", cost.Link{B: c.latBW, RTT: rtt.Seconds(), Window: w, RoundTrip: 3.5})
				if err != nil {
					return err
				}
				pts = append(pts, ps...)
			}
			if err := l.save(c, "latency", pts); err != nil {
				return err
			}
		case "bandwidth":
			var pts []point
			for _, b := range c.bws {
				ps, err := l.point(ctx, c, "bandwidth", cost.Link{B: b, RTT: c.bwRTT.Seconds(), Window: medic.DefaultWindow, RoundTrip: 3.5})
				if err != nil {
					return err
				}
				pts = append(pts, ps...)
			}
			if err := l.save(c, "bandwidth", pts); err != nil {
				return err
			}
		case "auto": // auto.go
			if err := l.autoSweep(ctx, c); err != nil {
				return err
			}
		default:
			return fmt.Errorf("unknown sweep %q", s)
		}
	}
	return nil
}

type point struct {
	sweep, plugin, cipher string
	link                  cost.Link
	est                   cost.Estimate
	measured, predicted   float64
	transfer, decode      float64
}

// setLink sets the proxy's toxics: RTT/2 of latency each way, and the
// bandwidth limit on the data direction (upstream: sender to receiver).
func (l *lab) setLink(link cost.Link) error {
	// The toxics are added once, neutral, and then only updated: adding
	// a toxic while a connection lingers on the proxy (an abandoned
	// send's) panicked toxiproxy v2.5.0 (ToxicLink.AddToxic, index out of
	// range) once the chain was three long.
	if !l.toxics {
		l.proxy.Toxics.ResetToxics(context.Background())
		for _, js := range []string{
			`{"name":"lat_upstream","type":"latency","stream":"upstream","attributes":{"latency":0}}`,
			`{"name":"lat_downstream","type":"latency","stream":"downstream","attributes":{"latency":0}}`,
			`{"name":"slice","type":"slicer","stream":"upstream","attributes":{"average_size":1073741824,"size_variation":0,"delay":0}}`,
			`{"name":"bw","type":"bandwidth","stream":"upstream","attributes":{"rate":0}}`,
		} {
			if _, err := l.proxy.Toxics.AddToxicJson(strings.NewReader(js)); err != nil {
				return err
			}
		}
		l.toxics = true
	}
	set := func(name, attrs string) error {
		_, err := l.proxy.Toxics.UpdateToxicJson(name, strings.NewReader(`{"attributes":`+attrs+`}`))
		return err
	}
	half := int64(math.Round(link.RTT * 1e3 / 2))
	for _, dir := range []string{"upstream", "downstream"} {
		if err := set("lat_"+dir, fmt.Sprintf(`{"latency":%d}`, half)); err != nil {
			return err
		}
	}
	// toxiproxy reads 32 KiB at a time and its bandwidth toxic passes a
	// read on whole, or below 320 kB/s in pieces of 100 ms: the receiver
	// got bytes in bursts up to 100 ms late, which no bottleneck link
	// does (it spaces packets), and which made a send --auto's bound on B
	// from the missing acknowledgements up to 2x low at 200 kB/s. Sliced
	// first into pieces of 10 ms at the rate (1460 bytes at least), the
	// bytes arrive as they would.
	piece := int64(1 << 30)
	if link.B > 0 {
		piece = max(1460, int64(link.B/100))
	}
	if err := set("slice", fmt.Sprintf(`{"average_size":%d,"size_variation":0,"delay":0}`, piece)); err != nil {
		return err
	}
	// toxiproxy's rate is in KB/s (1000 bytes); 0 is no limit.
	return set("bw", fmt.Sprintf(`{"rate":%d}`, max(int64(link.B/1000), 0)))
}

func (l *lab) point(ctx context.Context, c config, sweep string, link cost.Link) ([]point, error) {
	if err := l.setLink(link); err != nil {
		return nil, err
	}
	var out []point
	for _, p := range c.plugins {
		for _, ci := range c.ciphers {
			cp, _ := medic.ParseCipher(ci)
			e := l.est[p+"/"+ci]
			var times, xfer, dec []float64
			for r := 0; r < c.reps; r++ {
				spool := filepath.Join(l.tmp, "spool")
				os.RemoveAll(spool)
				t0 := time.Now()
				rep, err := medic.SendFile(ctx, l.input, medic.SendFileOptions{
					Encode: medic.EncodeOptions{Plugin: p, Params: c.params, Cipher: cp, Key: l.key},
					Send: medic.SendOptions{Addr: l.proxy.Listen, Key: l.key, Name: "out", Window: int(link.Window),
						Buffer: cost.SocketBuffer(link.B, link.RTT)},
					SpoolDir: spool,
				})
				if err != nil {
					return nil, fmt.Errorf("%s %s at %s, RTT %v: %w", p, ci, units.FormatRate(link.B), link.RTT, err)
				}
				times = append(times, time.Since(t0).Seconds())
				xfer = append(xfer, rep.Send.Transfer.Seconds())
				dec = append(dec, rep.Send.Result.Decode.Seconds())
				os.Remove(filepath.Join(l.dest, "out"))
			}
			pt := point{sweep: sweep, plugin: p, cipher: ci, link: link, est: e,
				measured: benchutil.Median(times), predicted: cost.Time(0, e, link), transfer: benchutil.Median(xfer), decode: benchutil.Median(dec)}
			fmt.Printf("%-9s B=%-10s RTT=%5.0fms %-6s %-18s measured %7.3fs predicted %7.3fs\n",
				sweep, units.FormatRate(link.B), link.RTT*1e3, p, ci, pt.measured, pt.predicted)
			out = append(out, pt)
		}
	}
	return out, nil
}

func (l *lab) save(c config, sweep string, pts []point) error {
	f, err := os.Create(filepath.Join(c.out, "medic-"+sweep+".csv"))
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	w.Write([]string{"sweep", "plugin", "cipher", "bandwidth_Bps", "rtt_ms", "window", "D", "x", "f_s", "g_s", "measured_s", "predicted_s", "transfer_s", "regenerate_s"})
	ff := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	for _, p := range pts {
		w.Write([]string{p.sweep, p.plugin, p.cipher, ff(p.link.B), ff(p.link.RTT * 1e3), ff(p.link.Window), strconv.FormatInt(l.D, 10),
			ff(p.est.X), ff(p.est.F), ff(p.est.G), ff(p.measured), ff(p.predicted), ff(p.transfer), ff(p.decode)})
	}
	w.Flush()
	if err := errors.Join(w.Error(), f.Close()); err != nil {
		return err
	}
	return l.render(c, sweep, pts)
}

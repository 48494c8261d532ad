package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/pario/pario/medic"
	"github.com/pario/pario/medic/cost"
	"github.com/pario/pario/units"
)

// pario medic send and pario medic plan: their flags, the plan, and the send
// (named, planned first, or chosen while it sends with --auto).

// sendFlags are shared by send and plan.
type sendFlags struct {
	keyFile, plugins, cipher, as, tlsCA, tlsName, spool, measure, fallback string
	bwlimit, bandwidth                                                     float64 // bytes/s, 0: unset
	params, resources                                                      []string
	auto, all, useTLS, quiet, planFirst                                    bool
	window                                                                 int64
	rtt, stall                                                             time.Duration
	appTime                                                                float64
}

func (sf *sendFlags) tlsConfig(addr string) (*tls.Config, error) {
	if !sf.useTLS && sf.tlsCA == "" {
		return nil, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS13, ServerName: sf.tlsName}
	if tc.ServerName == "" {
		tc.ServerName, _, _ = net.SplitHostPort(addr)
	}
	if sf.tlsCA != "" {
		pem, err := os.ReadFile(sf.tlsCA)
		if err != nil {
			return nil, fmt.Errorf("--tls-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--tls-ca %s: no PEM certificates in it", sf.tlsCA)
		}
		tc.RootCAs = pool
	}
	return tc, nil
}

// Bounds of the cost model's flags: beyond them a prediction means
// nothing (a round trip of more than an hour is no network, a link under
// 1 B/s none either), and the arithmetic prints NaN, Inf or 300 digits.
const (
	maxRTT     = time.Hour
	maxAppTime = 1e9 // seconds, 30 years
	minRate    = 1   // B/s
)

// check refuses the cost model's flags out of their bounds.
func (sf *sendFlags) check() error {
	switch {
	case sf.rtt < 0 || sf.rtt > maxRTT:
		return usageError{fmt.Errorf("--rtt %v: want 0 to %v", sf.rtt, maxRTT)}
	case math.IsNaN(sf.appTime) || sf.appTime < 0 || sf.appTime > maxAppTime:
		return usageError{fmt.Errorf("--app-time %v: want 0 to %g seconds", sf.appTime, float64(maxAppTime))}
	case sf.bandwidth != 0 && sf.bandwidth < minRate:
		return usageError{fmt.Errorf("--bandwidth %g B/s: want at least %d B/s", sf.bandwidth, minRate)}
	}
	return nil
}

// candidates are the plugins to calibrate: --plugin a,b or --all; with
// --auto zstd is always one of them (raw is added by the plan).
func (sf *sendFlags) candidates() []string {
	if sf.all || sf.auto && sf.plugins == "" {
		return medic.Names()
	}
	names := strings.Split(sf.plugins, ",")
	if sf.auto && !slices.Contains(names, "zstd") {
		names = append(names, "zstd")
	}
	return names
}

// link is the link as the flags give it: --bandwidth, else B is left zero
// for medic.MakePlan to measure against addr.
func (sf *sendFlags) link(addr string) (cost.Link, error) {
	l := cost.Link{RTT: sf.rtt.Seconds(), Window: float64(sf.window), RoundTrip: medic.RoundTrips}
	if sf.bandwidth != 0 {
		l.B = sf.bandwidth
		return l, nil
	}
	if addr == "" {
		return l, usageError{errors.New("give --bandwidth RATE (e.g. 1MB/s) or --measure HOST:PORT (with --key)")}
	}
	return l, nil
}

func (sf *sendFlags) encodeOptions(key []byte) (medic.EncodeOptions, error) {
	c, err := medic.ParseCipher(sf.cipher)
	if err != nil {
		return medic.EncodeOptions{}, usageError{err}
	}
	params, err := parseKV("param", sf.params)
	if err != nil {
		return medic.EncodeOptions{}, err
	}
	wd, _ := os.Getwd()
	return medic.EncodeOptions{Cipher: c, Key: key, Params: params, Dir: wd}, nil
}

func runPlan(ctx context.Context, sf *sendFlags, path, addr string, key []byte, tc *tls.Config, spool string, w io.Writer) (medic.Plan, error) {
	if _, err := sourceFile(path); err != nil {
		return medic.Plan{}, err
	}
	eo, err := sf.encodeOptions(key)
	if err != nil {
		return medic.Plan{}, err
	}
	res, err := parseKV("resource", sf.resources)
	if err != nil {
		return medic.Plan{}, err
	}
	l, err := sf.link(addr)
	if err != nil {
		return medic.Plan{}, err
	}
	plan, err := medic.MakePlan(ctx, medic.PlanRequest{Path: path, Plugins: sf.candidates(), Encode: eo, Resources: res,
		AppTime: sf.appTime, Link: l, Measure: medic.SendOptions{Addr: addr, Key: key, TLS: tc, Name: sf.as}, Spool: spool,
		Links: linkCache(spool), KeepSession: spool != ""})
	if err != nil {
		return plan, err
	}
	return plan, plan.WriteText(w)
}

// linkCache is where plans remember measured links: beside the spool
// (the sender's medic state), only when there is one.
func linkCache(spool string) medic.LinkCache {
	if spool == "" {
		return medic.LinkCache{}
	}
	return medic.LinkCache{Dir: filepath.Join(spool, "links")}
}

func newMedicPlanCommand() *cobra.Command {
	sf := &sendFlags{}
	cmd := &cobra.Command{
		Use:   "plan FILE (--plugin A,B | --all) (--bandwidth RATE | --measure HOST:PORT --key FILE)",
		Short: "Say which plugin (or raw transfer) moves FILE fastest, and by how much",
		Long: `Measure each plugin on FILE (f: encode, x: metadata size, g: regenerate,
here) and predict, with the cost model A = T + f + x/B + g against raw
A' = T + D/B, how long each takes over the link. The link's bandwidth is
given (--bandwidth 1MB/s, 1m or 1e6, 8Mbit/s, 512KiB/s: decimal unless spelt
KiB) or measured against a running
receiver (--measure HOST:PORT --key FILE, which also measures the RTT).
"pays below" is the crossover B* = (D - x)/(f + g). "figure 2" is the quadrant
of the ParaMEDIC paper's figure 2 the plugin is in on this link: Q1 (metadata at
most half the output, f + g under half the raw transfer: always pays), Q2 (large
reduction, much post-processing: depends), Q3 (never pays), Q4 (depends).
With --measure, g is the receiver's: its record of earlier regenerations with
the plugin, else the plugin's stated conservative rate (blast: 18 kB/s of
report) or g measured here, scaled by the receiver's speed now ("g from").

Plugins that cannot run here (missing --param or --resource) are listed as
skipped with the reason. Encryption is included in f and g (--cipher).`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if sf.plugins == "" && !sf.all {
				return usageError{errors.New("give --plugin NAME[,NAME...] or --all")}
			}
			if err := sf.check(); err != nil {
				return err
			}
			var key []byte
			var tc *tls.Config
			if sf.measure != "" || sf.keyFile != "" {
				var err error
				if key, err = loadKeyFlag(sf.keyFile); err != nil {
					return err
				}
				if tc, err = sf.tlsConfig(sf.measure); err != nil {
					return err
				}
			}
			c, _ := medic.ParseCipher(sf.cipher)
			if key == nil && c != medic.CipherNone {
				sf.cipher = "none"
				fmt.Fprintln(os.Stderr, "note: no --key, so f and g are measured without encryption")
			}
			_, err := runPlan(cmd.Context(), sf, args[0], sf.measure, key, tc, "", os.Stdout)
			return err
		},
	}
	addSendFlags(cmd, sf, true)
	return cmd
}

func addSendFlags(cmd *cobra.Command, sf *sendFlags, plan bool) {
	f := cmd.Flags()
	f.StringVar(&sf.keyFile, "key", "", "shared key `FILE` (make one with: pario medic keygen FILE)")
	f.StringVar(&sf.plugins, "plugin", "", "plugin(s): "+strings.Join(medic.Names(), ", ")+" (send: default zstd; plan: comma-separated)")
	f.StringArrayVar(&sf.params, "param", nil, "plugin parameter KEY=VALUE (repeatable)")
	f.StringArrayVar(&sf.resources, "resource", nil, "local resource for calibrating plugins, KEY=VALUE (repeatable)")
	f.StringVar(&sf.cipher, "cipher", "xchacha20poly1305", "seal the metadata with xchacha20poly1305, aes-256-gcm, or none (checksums only)")
	f.Var(units.RateFlag(&sf.bandwidth), "bandwidth", "link bandwidth for the cost model, bytes/s, decimal: 1m = 1MB/s = 1e6; or 8Mbit/s, 512KiB/s (default: measured)")
	f.DurationVar(&sf.rtt, "rtt", 0, "round-trip time for the cost model (default: measured when measuring)")
	sf.window = medic.DefaultWindow
	f.Var(units.SizeFlag(&sf.window), "window", "bytes in flight beyond the receiver's acknowledgement (e.g. 4m)")
	f.Float64Var(&sf.appTime, "app-time", 0, "the application's run time T in seconds (adds to every prediction)")
	f.BoolVar(&sf.useTLS, "tls", false, "connect with TLS (system roots, or --tls-ca)")
	f.StringVar(&sf.tlsCA, "tls-ca", "", "CA certificate (PEM) to trust for the receiver; implies --tls")
	f.StringVar(&sf.tlsName, "tls-server-name", "", "name to verify in the receiver's certificate (default: the host)")
	if plan {
		f.BoolVar(&sf.all, "all", false, "calibrate every plugin")
		f.StringVar(&sf.measure, "measure", "", "measure bandwidth and RTT to this receiver (HOST:PORT)")
		return
	}
	f.BoolVar(&sf.auto, "auto", false, "send with the fastest of raw, zstd and the plugins (--plugin list, else all) by the cost model, choosing while it sends")
	f.BoolVar(&sf.planFirst, "plan-first", false, "with --auto: price every candidate first, as 'medic plan' does, then send the cheapest")
	f.StringVar(&sf.as, "as", "", "destination name at the receiver (default: the file's base name)")
	f.Var(units.RateFlag(&sf.bwlimit), "bwlimit", "cap the sending rate, bytes/s, decimal: 10m = 10MB/s = 10e6; or 80Mbit/s")
	f.StringVar(&sf.spool, "spool", "", "keep encoded containers here until stored (default $XDG_CACHE_HOME/pario/medic)")
	f.StringVar(&sf.fallback, "fallback", "zstd", "plugin to send with when the receiver cannot regenerate the output (none: fail instead)")
	f.DurationVar(&sf.stall, "stall-timeout", medic.DefaultStallTimeout, "give up (resumably) when the receiver acknowledges nothing for this long with bytes on their way, or answers no probe while measuring the link")
	f.BoolVarP(&sf.quiet, "quiet", "q", false, "no progress bar")
}

func newMedicSendCommand() *cobra.Command {
	sf := &sendFlags{}
	cmd := &cobra.Command{
		Use:   "send FILE HOST:PORT --key FILE [--plugin NAME | --auto] [--param K=V]",
		Short: "Encode FILE with a plugin, seal and send it to a receiver, report what it took",
		Long: `Encode FILE at this (compute) site with a plugin, seal the metadata (encrypted
with --cipher, default XChaCha20-Poly1305), send it to a 'pario medic serve'
receiver and wait until the receiver has regenerated the output, checked it
against FILE's SHA-256 and stored it. Then print where it went and how long
encoding (f), the transfer (x/B) and regeneration (g) took.

--auto sends with the fastest of raw, zstd and every plugin that accepts FILE
(or those of --plugin a,b) by the cost model, and plans nothing before it
sends: zstd goes at once (raw, over a link remembered as fast enough that
zstd's encode would not pay), the link is measured from its first bytes, the
receiver says how fast it regenerates in the answer to the authentication,
and a plugin is encoded beside the send only where it could win even with no
metadata; the send is abandoned for it only where the model, counting what
is already sent, says it finishes sooner. It prints what it sent, why, and
each phase's time.

--auto --plan-first makes the whole plan first, as 'medic plan' does, and
sends the cheapest. It prices raw, zstd and every plugin that accepts FILE (or those of
--plugin a,b, with raw and zstd) with the rates measured now: the link's
bandwidth and RTT (or --bandwidth, --rtt), f and x by encoding FILE here, and
g as the receiver says it regenerates now (its record of earlier
regenerations with that plugin; else the plugin's stated conservative rate,
blast's 18 kB/s of report, scaled to the receiver's speed; else a
regeneration here scaled to the receiver's speed). The chosen plugin's
container is the one the plan encoded. It sends with the cheapest by the cost
model, A = f + x/B + g, prints the prices it compared and why it chose, and
the prediction beside what happened. The measured link is remembered for 10
minutes per receiver address (in --spool/links): a second send to the same
receiver plans with no probe (link "remembered"), and a send whose rate is
more than 2x from it forgets it.

Socket buffers are sized to the bandwidth-delay product of the measured or
given link (--bandwidth and --rtt), between 256 KiB and 64 MiB.

If the receiver cannot regenerate the output exactly (its regenerated bytes
do not match FILE's SHA-256: another BLAST+ version, a replica whose
sequences differ), the output is sent again with --fallback (zstd), and the
report says why. A receiver that lacks a resource or a hit sequence fails
the send instead, naming what is missing.

A send that fails half way (lost connection, receiver crashed) keeps its
container in --spool; running the same command again resumes from what the
receiver has staged. A progress bar shows on a terminal.

Plugin parameters go in --param, e.g. for blast:
  --param query=q.fa --param db=/data/nr --param program=blastp`,
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if sf.stall <= 0 {
				return usageError{fmt.Errorf("--stall-timeout %v: want a positive duration", sf.stall)}
			}
			if err := sf.check(); err != nil {
				return err
			}
			return runSend(cmd.Context(), sf, args[0], args[1])
		},
	}
	addSendFlags(cmd, sf, false)
	return cmd
}

func runSend(ctx context.Context, sf *sendFlags, path, addr string) error {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return usageError{fmt.Errorf("receiver %q: want HOST:PORT", addr)}
	}
	if _, err := medic.ParseCipher(sf.cipher); err != nil {
		return usageError{err}
	}
	key, err := loadKeyFlag(sf.keyFile)
	if err != nil {
		return err
	}
	tc, err := sf.tlsConfig(addr)
	if err != nil {
		return err
	}
	st, err := sourceFile(path)
	if err != nil {
		return err
	}
	eo, err := sf.encodeOptions(key)
	if err != nil {
		return err
	}
	spool := sf.spool
	if spool == "" {
		d, err := os.UserCacheDir()
		if err != nil {
			d = os.TempDir()
		}
		spool = filepath.Join(d, "pario", "medic")
	}
	if sf.auto && !sf.planFirst {
		return runSendAuto(ctx, sf, path, addr, key, tc, eo, spool)
	}
	var predicted *cost.Choice
	var link cost.Link
	var planning time.Duration
	var session *medic.Session
	if sf.auto {
		tp := time.Now()
		// The plan encodes into the spool, so that the send reuses the
		// chosen plugin's container.
		plan, err := runPlan(ctx, sf, path, addr, key, tc, spool, os.Stdout)
		// The send goes over the plan's connection.
		session = plan.Session
		defer session.Close()
		if err != nil {
			return err
		}
		d, ok := cost.Decide(plan.Choices)
		if !ok {
			return errors.New("no plugin could be calibrated")
		}
		predicted, link = &d.Best, plan.Link
		eo.Plugin = d.Best.Name
		planning = time.Since(tp)
		fmt.Printf("sending with %s\n", eo.Plugin)
	} else {
		eo.Plugin = sf.plugins
		if eo.Plugin == "" {
			eo.Plugin = "zstd"
		}
		if strings.Contains(eo.Plugin, ",") {
			return usageError{errors.New("--plugin takes one name without --auto")}
		}
		if _, err := medic.Lookup(eo.Plugin); err != nil {
			return usageError{err}
		}
	}
	rate := sf.bwlimit
	var bar *progressbar.ProgressBar
	// Socket buffers of the bandwidth-delay product, from the plan's
	// measured link or the given --bandwidth and --rtt.
	if link.B == 0 {
		link = cost.Link{B: sf.bandwidth, RTT: sf.rtt.Seconds()}
	}
	so := medic.SendOptions{Addr: addr, Key: key, TLS: tc, Name: sf.as, Window: int(sf.window), RateLimit: rate,
		Buffer: cost.SocketBuffer(link.B, link.RTT), Session: session, StallTimeout: sf.stall}
	if !sf.quiet && term.IsTerminal(int(os.Stderr.Fd())) {
		so.Progress = func(done, total int64) {
			if bar == nil {
				bar = progressbar.NewOptions64(total, progressbar.OptionSetWriter(os.Stderr), progressbar.OptionShowBytes(true),
					progressbar.OptionSetDescription("sending "+eo.Plugin), progressbar.OptionClearOnFinish(), progressbar.OptionThrottle(100*time.Millisecond))
			}
			_ = bar.Set64(done)
		}
	}
	fallback, err := sf.fallbackPlugin()
	if err != nil {
		return err
	}
	t0 := time.Now()
	rep, err := medic.SendFile(ctx, path, medic.SendFileOptions{Encode: eo, Send: so, SpoolDir: spool, Fallback: fallback})
	if bar != nil {
		_ = bar.Finish()
	}
	if err != nil {
		return sendFailed(ctx, path, err)
	}
	if rate == 0 && rep.Failed == nil {
		// A send far from the remembered link's rate makes the next
		// plan measure again.
		linkCache(spool).ObserveSend(addr, rep.Send)
	}
	sum := medic.SendSummary{Path: path, Addr: addr, Size: st.Size(), Asked: eo.Plugin, Cipher: eo.Cipher, Report: rep,
		Wall: time.Since(t0), Predicted: predicted, Link: link, Planning: planning}
	return sum.WriteText(os.Stdout)
}

// fallbackPlugin is --fallback's plugin, "" for none.
func (sf *sendFlags) fallbackPlugin() (string, error) {
	if sf.fallback == "none" {
		return "", nil
	}
	if _, err := medic.Lookup(sf.fallback); err != nil {
		return "", usageError{fmt.Errorf("--fallback: %w", err)}
	}
	return sf.fallback, nil
}

// runSendAuto is send --auto: medic.SendAuto chooses while it sends, and
// its report says what it sent, why, and each phase's time.
func runSendAuto(ctx context.Context, sf *sendFlags, path, addr string, key []byte, tc *tls.Config, eo medic.EncodeOptions, spool string) error {
	if sf.bwlimit != 0 {
		return usageError{errors.New("--bwlimit does not go with --auto (it measures the link from the send): use --auto --plan-first")}
	}
	fallback, err := sf.fallbackPlugin()
	if err != nil {
		return err
	}
	rep, err := medic.SendAuto(ctx, path, medic.AutoOptions{
		Plugins: sf.candidates(), Encode: eo,
		Send:     medic.SendOptions{Addr: addr, Key: key, TLS: tc, Name: sf.as, Window: int(sf.window), StallTimeout: sf.stall},
		SpoolDir: spool, Links: linkCache(spool), Fallback: fallback,
		Link: cost.Link{B: sf.bandwidth, RTT: sf.rtt.Seconds(), RoundTrip: medic.RoundTrips},
	})
	if rep != nil {
		if werr := rep.WriteText(os.Stdout); werr != nil && err == nil {
			err = werr
		}
	}
	if err != nil {
		return sendFailed(ctx, path, err)
	}
	return nil
}

// sendFailed is a send's error; interrupted (Ctrl-C, SIGTERM), exit
// status 130, as farm and mcmc.
func sendFailed(ctx context.Context, path string, err error) error {
	if ctx.Err() != nil {
		return exitStatus{code: 130, msg: fmt.Sprintf("send %s: %v", path, err)}
	}
	return fmt.Errorf("send %s: %w", path, err)
}

// sourceFile is medic.SourceFile with anything but a regular file a usage
// error: a directory, a pipe or a device named as the output.
func sourceFile(path string) (os.FileInfo, error) {
	st, err := medic.SourceFile(path)
	if errors.Is(err, medic.ErrNotRegular) {
		return nil, usageError{err}
	}
	return st, err
}

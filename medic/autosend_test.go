package medic_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"

	"github.com/pario/pario/medic"
	"github.com/pario/pario/medic/cost"
	"github.com/pario/pario/medic/medictest"
)

// seedTextPlugin stands for BLAST: tiny metadata (a seed and a count), a
// slow regeneration at the storage site (the site's resource
// seedtext-test.delay), and an output that compresses well, as a report
// does.
type seedTextPlugin struct{}

func (seedTextPlugin) Name() string { return "seedtext-test" }

func (seedTextPlugin) Encode(_ context.Context, src medic.Source, meta io.Writer) error {
	f, err := os.Open(src.Path)
	if err != nil {
		return err
	}
	defer f.Close()
	var seed, n int
	if _, err := fmt.Fscanf(f, "seedtext %d %d\n", &seed, &n); err != nil {
		return fmt.Errorf("seedtext-test: %s: %w", src.Path, err)
	}
	_, err = fmt.Fprintf(meta, "%d %d\n", seed, n)
	return err
}

func (seedTextPlugin) Decode(ctx context.Context, meta io.Reader, out io.Writer, env medic.Env) error {
	var seed, n int
	if _, err := fmt.Fscanf(meta, "%d %d\n", &seed, &n); err != nil {
		return fmt.Errorf("seedtext-test metadata: %w", err)
	}
	if d, ok := env.Resources["seedtext-test.delay"]; ok {
		dt, err := time.ParseDuration(d)
		if err != nil {
			return err
		}
		select {
		case <-time.After(dt):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	_, err := out.Write(seedText(seed, n))
	return err
}

// seedText is what seedtext-test regenerates: report-like lines (zstd
// makes them 5-10x smaller).
func seedText(seed, n int) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "seedtext %d %d\n", seed, n)
	for i := range n {
		fmt.Fprintf(&b, "q%d\tXP_%06d\t%.1f\t%d\t1e-%d\n", i%50, (i*7919+seed)%100000, 50+float64(i%500)/10, 100+i%300, i%180)
	}
	return []byte(b.String())
}

func init() { medic.Register(seedTextPlugin{}) }

// send --auto over an emulated link (toxiproxy): a large output that zstd
// makes 5-10x smaller and a semantic plugin whose metadata is a few bytes
// but whose regeneration takes the receiver 2 s (its record, from a first
// send, so that no speed probe enters the price). Over a mid link zstd
// goes (the plugin's 2 s is more than zstd's whole transfer); over a very
// slow one the plugin goes (zstd's transfer alone is longer than its 2 s).
func TestSendAutoOverAnEmulatedLink(t *testing.T) {
	s := &site{key: medictest.Key(t)}
	startServer(t, s, map[string]string{"seedtext-test.delay": "2s"}, nil)
	data := seedText(1, 60000) // 2.2 MB
	path := writeFile(t, "report.txt", data)
	// The receiver's record of the plugin: one send with it, at full speed.
	recordPlugin(t, s, path)

	proxy := startProxy(t, "wan", s.addr)
	for _, tc := range []struct {
		name string
		rate int // KB/s (toxiproxy's unit: 1000 bytes)
		want string
	}{
		{"mid link: zstd", 1000, "zstd"},
		{"very slow link: the semantic plugin", 25, "seedtext-test"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proxy.Toxics.ResetToxics(context.Background())
			if _, err := proxy.Toxics.AddToxicJson(strings.NewReader(fmt.Sprintf(
				`{"name":"bw","type":"bandwidth","stream":"upstream","attributes":{"rate":%d}}`, tc.rate))); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			rep, err := medic.SendAuto(ctx, path, seedtextAuto(t, s, proxy.Listen))
			text := logAutoReport(t, "", rep, err)
			if rep.Chosen != tc.want {
				t.Errorf("sent with %s, want %s", rep.Chosen, tc.want)
			}
			got, err := os.ReadFile(filepath.Join(s.dest, "out.txt"))
			if err != nil || string(got) != string(data) {
				t.Errorf("the receiver stored %d bytes (%v), want the %d of the output", len(got), err, len(data))
			}
			os.Remove(filepath.Join(s.dest, "out.txt"))
			for _, w := range []string{"sent zstd first", "phases: connect and rates", "total"} {
				if !strings.Contains(text, w) {
					t.Errorf("the report lacks %q", w)
				}
			}
		})
	}
}

// send --auto twice over a fast emulated link (toxiproxy at 100 MB/s) with
// an output zstd cannot make smaller (random bytes, 512 KiB: a transfer of
// a few ms, too short to measure B by): the first send, over a link it
// does not know, sends zstd; it remembers the link as rough, with zstd's
// rates, and the second sends raw at once (raw beats zstd at any rate when
// zstd saves nothing).
func TestSendAutoRemembersAShortTransfer(t *testing.T) {
	s := &site{key: medictest.Key(t)}
	startServer(t, s, nil, nil)
	data := make([]byte, 512<<10)
	cc := rand.NewChaCha8([32]byte{3, 4})
	cc.Read(data)
	path := writeFile(t, "random.bin", data)

	proxy := startProxy(t, "lan", s.addr)
	if _, err := proxy.Toxics.AddToxicJson(strings.NewReader(
		`{"name":"bw","type":"bandwidth","stream":"upstream","attributes":{"rate":100000}}`)); err != nil {
		t.Fatal(err)
	}
	links := medic.LinkCache{Dir: t.TempDir()}
	for i, want := range []string{"zstd", "raw"} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		rep, err := medic.SendAuto(ctx, path, medic.AutoOptions{
			Encode:   medic.EncodeOptions{Cipher: medic.CipherXChaCha20Poly1305, Key: s.key},
			Send:     medic.SendOptions{Addr: proxy.Listen, Key: s.key, Name: "out.bin"},
			SpoolDir: t.TempDir(),
			Links:    links,
		})
		cancel()
		logAutoReport(t, fmt.Sprintf("send %d: ", i+1), rep, err)
		if rep.First != want || rep.Chosen != want {
			t.Errorf("send %d: sent %s first and %s in the end, want %s", i+1, rep.First, rep.Chosen, want)
		}
		if i == 0 {
			// A loaded machine (-race) can stretch the transfer past
			// 200 ms: then B is measured, not rough.
			tr := rep.File.Send.Transfer
			l, ok := links.Get(proxy.Listen)
			if !ok || l.Rough != (tr < 200*time.Millisecond) || l.ZstdRatio <= 0 || l.ZstdRatio > 1.01 {
				t.Fatalf("after a transfer of %.3f s the link remembered is %+v (%v), want one rough if under 0.2 s, with zstd's ratio (about 1)",
					tr.Seconds(), l, ok)
			}
		}
		got, err := os.ReadFile(filepath.Join(s.dest, "out.bin"))
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("send %d: the receiver stored %d bytes (%v), want the %d of the output", i+1, len(got), err, len(data))
		}
		os.Remove(filepath.Join(s.dest, "out.bin"))
	}
}

// send --auto twice over a slow emulated link (toxiproxy at 25 kB/s) to a
// receiver whose record prices the semantic plugin at 2 s: the first send
// switches from zstd to the plugin once the missing acknowledgements bound
// B low enough (about 0.3 s in); it remembers that bound, and the second
// encodes the plugin from its start, before zstd's data (the switch itself
// waits, as the first's did, for a bound that clears SwitchMargin).
func TestSendAutoRepeatedSwitchesAtOnce(t *testing.T) {
	s, path, proxy := slowLinkReport(t, "2s")
	links := medic.LinkCache{Dir: t.TempDir()}
	var encodeAfterData [2]time.Duration
	for i := range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		o := seedtextAuto(t, s, proxy.Listen)
		o.Links = links
		// The emulated link's RTT, given: the authentication's round
		// trip, which measures it otherwise, took 0.57 s once on a
		// loaded machine, and a new connection's 3.5 of those then kept
		// the plugin from being worth encoding.
		o.Link = cost.Link{RTT: 0.001}
		rep, err := medic.SendAuto(ctx, path, o)
		cancel()
		logAutoReport(t, fmt.Sprintf("send %d: ", i+1), rep, err)
		if rep.Chosen != "seedtext-test" || len(rep.Abandoned) != 1 {
			t.Fatalf("send %d: sent with %s after %d switches, want seedtext-test after one", i+1, rep.Chosen, len(rep.Abandoned))
		}
		for _, c := range rep.Candidates {
			if c.Name == "seedtext-test" {
				encodeAfterData[i] = c.EncodeAt - rep.DataAt
			}
		}
		if i == 0 {
			if l, ok := links.Get(proxy.Listen); !ok || l.Max <= 0 || l.Max > 200e3 {
				t.Fatalf("after the first send the link remembered is %+v (%v), want a bound on B below 200 kB/s", l, ok)
			}
		}
		os.Remove(filepath.Join(s.dest, "out.txt"))
	}
	// The first send starts the encode once the bound is within
	// EncodeAhead of 2 s worth of zstd's 218 KiB (acknowledged every
	// 13.6 KiB: at least 67 ms after its data started); the repeated one
	// before its data starts.
	if encodeAfterData[1] >= 0 {
		t.Errorf("the repeated send's encode of the plugin started %.3f s after zstd's data, want before it", encodeAfterData[1].Seconds())
	}
	if encodeAfterData[1] >= encodeAfterData[0] {
		t.Errorf("the plugin's encode started %.3f s after zstd's data in the first send, %.3f s in the repeated one; want it sooner in the repeated one",
			encodeAfterData[0].Seconds(), encodeAfterData[1].Seconds())
	}
}

// send --auto over a link it is given (as one remembered from a longer
// send is known): a plugin that could win is encoded from the start, not
// from zstd's first acknowledgement (the sweep's repeated sends at 50 kB/s
// began it 15-56 ms after zstd's data, and missed the plugin's own time
// by more than 10%).
func TestSendAutoKnownLinkEncodesFromTheStart(t *testing.T) {
	s, path, proxy := slowLinkReport(t, "1s")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	o := seedtextAuto(t, s, proxy.Listen)
	o.Links = medic.LinkCache{Dir: t.TempDir()}
	o.Link = cost.Link{B: 25e3, RTT: 0.001}
	rep, err := medic.SendAuto(ctx, path, o)
	logAutoReport(t, "", rep, err)
	if rep.Chosen != "seedtext-test" {
		t.Fatalf("sent with %s, want seedtext-test", rep.Chosen)
	}
	for _, c := range rep.Candidates {
		if c.Name != "seedtext-test" {
			continue
		}
		if c.EncodeAt <= 0 || c.EncodeAt >= rep.DataAt {
			t.Fatalf("the plugin's encode started at %v, zstd's data at %v: want the encode first", c.EncodeAt, rep.DataAt)
		}
		return
	}
	t.Fatal("the plugin is not among the candidates")
}

// logAutoReport logs what SendAuto reported, after prefix, fails the
// test if it failed, and returns the report's text.
func logAutoReport(t *testing.T, prefix string, rep *medic.AutoReport, err error) string {
	t.Helper()
	var b strings.Builder
	if rep != nil {
		_ = rep.WriteText(&b)
	}
	t.Logf("%s%s", prefix, b.String())
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// seedtextAuto is send --auto of out.txt to addr, with the semantic
// plugin of these tests as the only one besides raw and zstd.
func seedtextAuto(t *testing.T, s *site, addr string) medic.AutoOptions {
	return medic.AutoOptions{
		Plugins:  []string{"seedtext-test"},
		Encode:   medic.EncodeOptions{Cipher: medic.CipherXChaCha20Poly1305, Key: s.key},
		Send:     medic.SendOptions{Addr: addr, Key: s.key, Name: "out.txt"},
		SpoolDir: t.TempDir(),
	}
}

// slowLinkReport starts a receiver whose record prices the semantic
// plugin at delay, writes a 2.2 MB report, and puts a link of 25 kB/s
// (toxiproxy) in front of the receiver.
func slowLinkReport(t *testing.T, delay string) (*site, string, *toxiproxy.Proxy) {
	t.Helper()
	s := &site{key: medictest.Key(t)}
	startServer(t, s, map[string]string{"seedtext-test.delay": delay}, nil)
	path := writeFile(t, "report.txt", seedText(1, 60000))
	recordPlugin(t, s, path)
	proxy := startProxy(t, "wan", s.addr)
	if _, err := proxy.Toxics.AddToxicJson(strings.NewReader(
		`{"name":"bw","type":"bandwidth","stream":"upstream","attributes":{"rate":25}}`)); err != nil {
		t.Fatal(err)
	}
	return s, path, proxy
}

// send --auto of a small output (0.18 MB; zstd's container about 30 KiB,
// less than one acknowledgement of protocol version 1) over an emulated
// link that spaces its bytes as a bottleneck does (toxiproxy's slicer in
// pieces of 10 ms at the rate, as the sweep's link), to a receiver whose
// record prices the semantic plugin at 0.3 s: over 2 MB/s zstd goes; over
// 25 kB/s, where zstd's transfer would take over a second, zstd goes first
// and gives way to the plugin, its container acknowledged every 4 KiB
// (AckEvery), so that the bound on B comes within the first 4 KiB.
func TestSendAutoSmallOutputOverAnEmulatedLink(t *testing.T) {
	s := &site{key: medictest.Key(t)}
	startServer(t, s, map[string]string{"seedtext-test.delay": "300ms"}, nil)
	data := seedText(2, 5000)
	path := writeFile(t, "small.txt", data)
	recordPlugin(t, s, path)

	proxy := startProxy(t, "wan", s.addr)
	for _, tc := range []struct {
		name string
		rate int // KB/s
		want string
	}{
		{"2 MB/s: zstd", 2000, "zstd"},
		{"25 kB/s: the semantic plugin", 25, "seedtext-test"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proxy.Toxics.ResetToxics(context.Background())
			for _, js := range []string{
				fmt.Sprintf(`{"name":"slice","type":"slicer","stream":"upstream","attributes":{"average_size":%d,"size_variation":0,"delay":0}}`, max(1460, tc.rate*10)),
				fmt.Sprintf(`{"name":"bw","type":"bandwidth","stream":"upstream","attributes":{"rate":%d}}`, tc.rate),
			} {
				if _, err := proxy.Toxics.AddToxicJson(strings.NewReader(js)); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var first []int64 // the first send's acknowledgements
			var firstSize int64
			rep, err := medic.SendAuto(ctx, path, medic.AutoOptions{
				Plugins: []string{"seedtext-test"},
				Encode:  medic.EncodeOptions{Cipher: medic.CipherXChaCha20Poly1305, Key: s.key},
				Send: medic.SendOptions{Addr: proxy.Listen, Key: s.key, Name: "small-out.txt", Progress: func(done, size int64) {
					if firstSize == 0 {
						firstSize = size
					}
					if size == firstSize {
						first = append(first, done)
					}
				}},
				SpoolDir: t.TempDir(),
			})
			logAutoReport(t, "", rep, err)
			if rep.First != "zstd" || rep.Chosen != tc.want {
				t.Errorf("sent %s first and %s in the end, want zstd first and %s in the end", rep.First, rep.Chosen, tc.want)
			}
			if firstSize >= 2*medic.ProgressAck {
				t.Fatalf("zstd's container is %d bytes: the test wants one smaller than two acknowledgements of protocol version 1", firstSize)
			}
			for i := 1; i < len(first); i++ {
				if d := first[i] - first[i-1]; d > medic.AckEvery(firstSize) {
					t.Errorf("zstd's container of %d bytes was acknowledged %d bytes at a time, want at most %d", firstSize, d, medic.AckEvery(firstSize))
				}
			}
			got, err := os.ReadFile(filepath.Join(s.dest, "small-out.txt"))
			if err != nil || !bytes.Equal(got, data) {
				t.Errorf("the receiver stored %d bytes (%v), want the %d of the output", len(got), err, len(data))
			}
			os.Remove(filepath.Join(s.dest, "small-out.txt"))
		})
	}
}

// startProxy starts an in-process toxiproxy named name in front of addr,
// stopped when the test ends; the test adds the toxics.
func startProxy(t *testing.T, name, addr string) *toxiproxy.Proxy {
	t.Helper()
	api := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	proxy := toxiproxy.NewProxy(api, name, "127.0.0.1:0", addr)
	if err := proxy.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Stop)
	return proxy
}

// recordPlugin sends path once with seedtext-test at full speed, so that
// the receiver has a record of the plugin's regeneration time (no speed
// probe enters the price of later sends), and removes what it wrote.
func recordPlugin(t *testing.T, s *site, path string) {
	t.Helper()
	if _, err := sendFile(t, s, path, "seedtext-test", medic.SendOptions{}); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(s.dest, filepath.Base(path)))
}

package mfg

import (
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/pario/pario/dist"
)

// drawDesc draws a small description: small enough to lay out byte by
// byte.
func drawDesc(t *rapid.T, runs int) Desc {
	d := Desc{
		FileHeader: rapid.Int64Range(0, 20).Draw(t, "fileHeader"),
		Runs:       runs,
		Gens:       rapid.Int64Range(0, 40).Draw(t, "gens"),
		SampleFreq: rapid.Int64Range(1, 5).Draw(t, "sampleFreq"),
		Gen0:       rapid.Bool().Draw(t, "gen0"),
	}
	if d.Gens < d.SampleFreq && !d.Gen0 {
		d.Gens = d.SampleFreq // at least one sample
	}
	for i := range rapid.IntRange(1, 3).Draw(t, "sections") {
		d.Sections = append(d.Sections, Section{
			Name:    fmt.Sprint("s", i),
			Header:  rapid.Int64Range(0, 30).Draw(t, "header"),
			Record:  rapid.Int64Range(1, 40).Draw(t, "record"),
			Trailer: rapid.Int64Range(0, 5).Draw(t, "trailer"),
		})
	}
	return d
}

// bruteForce lays the file out the way a serial writer would write it:
// the header, then every run's sections one after the other, each record
// appended in generation order.
func bruteForce(d Desc) []Piece {
	var out []Piece
	var off int64
	put := func(p Piece, n int64) {
		p.Off, p.Len = off, n
		off += n
		if n > 0 {
			out = append(out, p)
		}
	}
	put(Piece{Kind: FileHeader, Run: -1, Section: -1}, d.FileHeader)
	for r := 0; r < d.Runs; r++ {
		for s, sec := range d.Sections {
			put(Piece{Kind: Header, Run: r, Section: s}, sec.Header)
			for g := int64(0); g <= d.Gens; g++ {
				if g%d.SampleFreq != 0 || g == 0 && !d.Gen0 {
					continue
				}
				// The sample index: how many records are already there.
				var i int64
				for _, p := range out {
					if p.Kind == Records && p.Run == r && p.Section == s {
						i++
					}
				}
				put(Piece{Kind: Records, Run: r, Section: s, First: i, Count: 1}, sec.Record)
			}
			put(Piece{Kind: Trailer, Run: r, Section: s}, sec.Trailer)
		}
	}
	return out
}

// The map agrees with the brute-force layout.
func TestMapMatchesBruteForce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		d := drawDesc(t, rapid.IntRange(1, 6).Draw(t, "runs"))
		m, err := New(d)
		if err != nil {
			t.Fatal(err)
		}
		want := bruteForce(d)
		var got []Piece
		for p := range m.All() {
			got = append(got, p)
		}
		if len(got) != len(want) {
			t.Fatalf("map has %d pieces, brute force %d", len(got), len(want))
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("piece %d: map %v (%+v), brute force %v (%+v)", i, got[i], got[i], want[i], want[i])
			}
			if p := got[i]; p.Kind == Records {
				e, err := m.Record(p.Run, p.Section, p.First)
				if err != nil || e != p.Extent {
					t.Fatalf("Record(%d, %d, %d) = %v, %v; want %v", p.Run, p.Section, p.First, e, err, p.Extent)
				}
				if j, ok := m.Sample(m.Gen(p.First)); !ok || j != p.First {
					t.Fatalf("Sample(Gen(%d)) = %d, %v", p.First, j, ok)
				}
			}
		}
		last := want[len(want)-1]
		if m.Size() != last.End() {
			t.Fatalf("Size = %d, brute force %d", m.Size(), last.End())
		}
	})
}

// drawHolders draws a semi-random walk of assignments: every sample, each
// run's cold chain may move to another rank holding one of its chains.
func drawHolders(t *rapid.T, c Config, samples int64) []Assignment {
	out := make([]Assignment, samples)
	a := c.Initial()
	for i := range out {
		if i > 0 {
			a = append(Assignment(nil), a...)
			for r := range a {
				ranks := c.RanksOfRun(r)
				if len(ranks) > 1 && rapid.Bool().Draw(t, "swap") {
					a[r] = rapid.SampledFrom(ranks).Draw(t, "to")
				}
			}
		}
		out[i] = a
	}
	return out
}

func drawConfig(t *rapid.T) Config {
	c := Config{
		Runs:   rapid.IntRange(1, 6).Draw(t, "runs"),
		Chains: rapid.IntRange(1, 5).Draw(t, "chains"),
	}
	c.Procs = rapid.IntRange(1, c.Runs*c.Chains).Draw(t, "procs")
	return c
}

// The views of all processes over all batches tile the file exactly once,
// whatever the writers do and whatever lambda is.
func TestViewsTileTheFile(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := drawConfig(t)
		m, err := New(drawDesc(t, c.Runs))
		if err != nil {
			t.Fatal(err)
		}
		holders := drawHolders(t, c, m.Samples())
		for _, a := range holders {
			if _, err := c.Classify(a); err != nil {
				t.Fatal(err)
			}
		}
		lambda := rapid.Int64Range(1, m.Samples()+1).Draw(t, "lambda")
		covered := make([]int, m.Size())
		nb, err := m.Batches(lambda)
		if err != nil {
			t.Fatal(err)
		}
		for w := range nb {
			first, n, err := m.Batch(lambda, w)
			if err != nil {
				t.Fatal(err)
			}
			for k := range c.Procs {
				v, err := m.View(k, first, holders[first:first+n])
				if err != nil {
					t.Fatal(err)
				}
				lo, hi := c.RunsOf(k)
				mine, err := m.ViewRuns(k, lo, hi, first, holders[first:first+n])
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(v, mine) {
					t.Fatalf("rank %d: View %v, ViewRuns(%d, %d) %v", k, v, lo, hi, mine)
				}
				for i, p := range v {
					if i > 0 && p.Off < v[i-1].End() {
						t.Fatalf("rank %d write %d: piece %v before the end of %v", k, w, p, v[i-1])
					}
					if p.Kind == Records && (p.First < first || p.First+p.Count > first+n) {
						t.Fatalf("rank %d write %d: %v outside samples [%d,%d)", k, w, p, first, first+n)
					}
					for b := p.Off; b < p.End(); b++ {
						covered[b]++
					}
				}
				if got, want := Bytes(v), extentBytes(Extents(v)); got != want {
					t.Fatalf("Extents lose bytes: %d != %d", want, got)
				}
			}
		}
		for b, n := range covered {
			if n != 1 {
				t.Fatalf("byte %d of %d written %d times (config %s, lambda %d)", b, m.Size(), n, c, lambda)
			}
		}
	})
}

func extentBytes(es []Extent) int64 {
	var n int64
	for i, e := range es {
		if i > 0 && es[i-1].End() >= e.Off {
			return -1 // not merged, or overlapping
		}
		n += e.Len
	}
	return n
}

// With Strips, dist's varstrip keeps every byte a rank writes on the
// rank's own server over 100 generations (pi_1), or every byte of a run on
// the server of its first writer (fewer runs than processes, figure 7.5).
func TestVarstripKeepsRanksOnTheirServers(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var c Config
		if rapid.Bool().Draw(t, "pi1") {
			procs := rapid.IntRange(1, 8).Draw(t, "procs")
			c = Config{Runs: procs * rapid.IntRange(1, 4).Draw(t, "runsPerProc"), Chains: rapid.IntRange(1, 4).Draw(t, "chains"), Procs: procs}
			if c.Runs < 2 {
				c.Runs = 2 * procs
			}
		} else {
			runs := rapid.IntRange(1, 4).Draw(t, "runs")
			per := rapid.IntRange(1, 3).Draw(t, "procsPerRun")
			c = Config{Runs: runs, Chains: per * rapid.IntRange(1, 3).Draw(t, "chainsPerProc"), Procs: runs * per}
		}
		servers := rapid.IntRange(1, c.Procs).Draw(t, "servers")
		serverOf := RoundRobin(c.Procs, servers)
		d := drawDesc(t, c.Runs)
		d.Gens, d.SampleFreq = 100, 1
		m, err := New(d)
		if err != nil {
			t.Fatal(err)
		}
		s, placement, err := Strips(m, c, serverOf)
		if err != nil {
			t.Fatalf("Strips(%s): %v", c, err)
		}
		v, err := dist.New(dist.Varstrip, "strips="+s, len(placement))
		if err != nil {
			t.Fatal(err)
		}
		holders := drawHolders(t, c, m.Samples())
		first := c.Initial()
		lambda := rapid.Int64Range(1, 20).Draw(t, "lambda")
		nb, _ := m.Batches(lambda)
		perServer := make([][]int64, c.Procs) // bytes per rank per server
		for k := range perServer {
			perServer[k] = make([]int64, servers)
		}
		for w := range nb {
			f, n, _ := m.Batch(lambda, w)
			for k := range c.Procs {
				view, err := m.View(k, f, holders[f:f+n])
				if err != nil {
					t.Fatal(err)
				}
				for _, p := range view {
					run := p.Run
					if run < 0 {
						run = 0
					}
					want := serverOf[first[run]]
					for _, piece := range dist.Split(v, p.Off, p.Len) {
						if got := placement[piece.Datafile]; got != want {
							t.Fatalf("%s strips %s: rank %d's %v lands on server %d, want %d", c, s, k, p, got, want)
						}
						perServer[k][placement[piece.Datafile]] += piece.Length
					}
				}
			}
		}
		var total int64
		for k := range perServer {
			for _, n := range perServer[k] {
				total += n
			}
		}
		if total != m.Size() {
			t.Fatalf("the ranks wrote %d bytes of a %d-byte file", total, m.Size())
		}
		if c.Pi1() {
			for k := range perServer {
				for sv, n := range perServer[k] {
					if sv != serverOf[k] && n != 0 {
						t.Fatalf("rank %d wrote %d bytes to server %d, its own is %d", k, n, sv, serverOf[k])
					}
				}
			}
		}
	})
}

// A strip of one generation's lines (eq. 7.5's chunk, the thesis' default)
// would deal a rank's later generations to every server in this layout:
// the reason Strips uses the whole area.
func TestOneGenerationStripsScatter(t *testing.T) {
	m := mustMap(t, taxa16(8, 100))
	v, err := dist.New(dist.Varstrip, "strips=0:701;1:701;2:701;3:701;4:701;5:701;6:701;7:701", 8)
	if err != nil {
		t.Fatal(err)
	}
	c := Config{8, 4, 8}
	servers := map[int]bool{}
	for i := range m.Samples() {
		view, err := m.View(0, i, []Assignment{c.Initial()})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range view {
			for _, piece := range dist.Split(v, p.Off, p.Len) {
				servers[piece.Datafile] = true
			}
		}
	}
	if len(servers) != 8 {
		t.Errorf("rank 0's 100 generations reach %d servers with 701-byte strips; want all 8", len(servers))
	}
}

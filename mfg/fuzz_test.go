package mfg

import (
	"errors"
	"testing"
)

// New never panics, refuses what it cannot map with ErrInvalid, and a map
// it accepts is consistent: its pieces tile the file and the first
// generation's views of every rank add up to what that generation writes.
func FuzzNew(f *testing.F) {
	f.Add(int64(0), int64(248), int64(346), int64(0), int64(52), int64(55), int64(0), 9, int64(1), int64(1), false, 3, 8)
	f.Add(int64(100), int64(10), int64(5), int64(5), int64(0), int64(1), int64(0), 3, int64(100), int64(10), true, 5, 4)
	f.Fuzz(func(t *testing.T, fileHeader, h1, r1, t1, h2, r2, t2 int64, runs int, gens, sf int64, gen0 bool, chains, procs int) {
		d := Desc{
			FileHeader: fileHeader,
			Sections:   []Section{{Name: "t", Header: h1, Record: r1, Trailer: t1}, {Name: "p", Header: h2, Record: r2, Trailer: t2}},
			Runs:       runs, Gens: gens, SampleFreq: sf, Gen0: gen0,
		}
		m, err := New(d)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("New: %v does not wrap ErrInvalid", err)
			}
			return
		}
		if m.Size() != d.FileHeader+int64(d.Runs)*m.RunSize() || m.Size() > MaxSize {
			t.Fatalf("Size %d, file header %d + %d runs x %d", m.Size(), d.FileHeader, d.Runs, m.RunSize())
		}
		if m.Samples() <= 1<<12 && int64(d.Runs)*m.Samples() <= 1<<12 {
			var end int64
			for p := range m.All() {
				if p.Off != end || p.Len <= 0 {
					t.Fatalf("piece %v after offset %d", p, end)
				}
				end = p.End()
			}
			if end != m.Size() {
				t.Fatalf("pieces end at %d, size %d", end, m.Size())
			}
		}
		c := Config{Runs: runs, Chains: chains, Procs: procs}
		if c.Runs <= 1<<12 {
			// Whatever the config, no method panics.
			c.ChainRange(0)
			c.RankOf(0)
			c.RanksOfRun(0)
			c.IOSwaps()
			c.Patterns()
			c.Assignments()
			c.Pi1()
			c.RunGroups()
			c.Initial()
		}
		if c.Validate() != nil || c.Procs > 1<<10 {
			return
		}
		a := c.Initial()
		if _, err := c.Classify(a); err != nil {
			t.Fatalf("Classify(Initial()) of %s: %v", c, err)
		}
		var sum int64
		for k := range c.Procs {
			v, err := m.View(k, 0, []Assignment{a})
			if err != nil {
				t.Fatal(err)
			}
			sum += Bytes(v)
		}
		want := d.FileHeader + int64(d.Runs)*(h1+h2+r1+r2)
		if m.Samples() == 1 {
			want += int64(d.Runs) * (t1 + t2)
		}
		if sum != want {
			t.Fatalf("the first generation's views hold %d bytes, want %d", sum, want)
		}
	})
}

package pattern

// glibcRandom reproduces glibc's random()/rand() after srandom(seed) with
// the default 128-byte state (TYPE_3: an additive feedback generator
// r[i] = r[i-3] + r[i-31] over uint32, whose output is r[i] >> 1; r[0..30]
// come from the Park-Miller "minimal standard" generator, r[31..33] repeat
// r[0..2], and r[34..343] are discarded). IOR draws its -z offsets from rand(), so matching it
// makes pario's random order identical to IOR's for the same seed.
type glibcRandom struct {
	r    [34]uint32 // the last 34 values, a ring
	next int        // index of the next slot to fill
}

const (
	glibcDeg  = 31
	glibcSep  = 3
	glibcRing = 34
)

func newGlibcRandom(seed uint32) *glibcRandom {
	g := &glibcRandom{}
	if seed == 0 {
		seed = 1
	}
	var s [glibcDeg]int32
	s[0] = int32(seed)
	for i := 1; i < glibcDeg; i++ {
		// Schrage's method for 16807 * s[i-1] mod (2^31 - 1), with C's
		// truncating division, as glibc's srandom_r computes it.
		hi := int64(s[i-1]) / 127773
		lo := int64(s[i-1]) % 127773
		w := 16807*lo - 2836*hi
		if w < 0 {
			w += 2147483647
		}
		s[i] = int32(w)
	}
	for i := range glibcDeg {
		g.r[i] = uint32(s[i])
	}
	// r[31..33] = r[0..2]: the feedback starts with state[3] += state[0].
	for i := glibcDeg; i < glibcRing; i++ {
		g.r[i] = g.r[i-glibcDeg]
	}
	g.next = 0
	for range 10 * glibcDeg {
		g.step()
	}
	return g
}

func (g *glibcRandom) at(back int) uint32 {
	return g.r[(g.next-back+glibcRing)%glibcRing]
}

func (g *glibcRandom) step() uint32 {
	v := g.at(glibcDeg) + g.at(glibcSep)
	g.r[g.next] = v
	g.next = (g.next + 1) % glibcRing
	return v
}

// rand returns the next value in [0, 2^31), as glibc's rand() and random().
func (g *glibcRandom) rand() int32 { return int32(g.step() >> 1) }

func (g *glibcRandom) clone() *glibcRandom {
	c := *g
	return &c
}

package pattern

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

// offsets lists rank's (offset, length) pairs in issue order.
func offsets(t *testing.T, p IOR, rank int, ph Phase) []Extent {
	t.Helper()
	if err := p.Validate(); err != nil {
		t.Fatalf("Validate(%v): %v", p, err)
	}
	var out []Extent
	for tr := range p.Transfers(rank, ph) {
		out = append(out, tr.Pieces()...)
	}
	return out
}

func starts(ex []Extent) []int64 {
	out := make([]int64, len(ex))
	for i, e := range ex {
		out[i] = e.Offset
	}
	return out
}

func TestSharedFileOffsets(t *testing.T) {
	// N=3, b=16, t=8, s=2: off = i*48 + r*16 + j*8.
	p := IOR{Block: 16, Transfer: 8, Segments: 2, Tasks: 3}
	want := [][]int64{
		{0, 8, 48, 56},
		{16, 24, 64, 72},
		{32, 40, 80, 88},
	}
	for r, w := range want {
		got := offsets(t, p, r, Write)
		if !slices.Equal(starts(got), w) {
			t.Errorf("rank %d: offsets %v, want %v", r, starts(got), w)
		}
		for _, e := range got {
			if e.Length != 8 {
				t.Errorf("rank %d: length %d, want 8", r, e.Length)
			}
		}
		if n := p.Count(r, Write); n != 4 {
			t.Errorf("Count(%d) = %d, want 4", r, n)
		}
	}
	if got := p.AggregateSize(); got != 96 {
		t.Errorf("AggregateSize = %d, want 96", got)
	}
	if got := p.FileSize(); got != 96 {
		t.Errorf("FileSize = %d, want 96", got)
	}
}

func TestSharedFileOffsetsThreeSegments(t *testing.T) {
	// N=2, b=24, t=8, s=3: off = i*48 + r*24 + j*8.
	p := IOR{Block: 24, Transfer: 8, Segments: 3, Tasks: 2}
	want := [][]int64{
		{0, 8, 16, 48, 56, 64, 96, 104, 112},
		{24, 32, 40, 72, 80, 88, 120, 128, 136},
	}
	for r, w := range want {
		if got := starts(offsets(t, p, r, Write)); !slices.Equal(got, w) {
			t.Errorf("rank %d: %v, want %v", r, got, w)
		}
	}
}

func TestFilePerProcOffsets(t *testing.T) {
	// b=16, t=8, s=3: off = i*16 + j*8 in every rank's own file.
	p := IOR{Block: 16, Transfer: 8, Segments: 3, Tasks: 4, FilePerProc: true}
	want := []int64{0, 8, 16, 24, 32, 40}
	for r := range 4 {
		var got []int64
		for tr := range p.Transfers(r, Write) {
			got = append(got, tr.Offset)
			if tr.File != r || tr.Rank != r {
				t.Errorf("rank %d: file %d owner %d", r, tr.File, tr.Rank)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("rank %d: %v, want %v", r, got, want)
		}
	}
	if p.Files() != 4 || p.FileSize() != 48 || p.AggregateSize() != 192 {
		t.Errorf("Files %d FileSize %d Aggregate %d", p.Files(), p.FileSize(), p.AggregateSize())
	}
}

func TestSegmentAndSeqFields(t *testing.T) {
	p := IOR{Block: 16, Transfer: 8, Segments: 2, Tasks: 2}
	var segs, seqs []int64
	for tr := range p.Transfers(1, Write) {
		segs = append(segs, tr.Segment)
		seqs = append(seqs, tr.Seq)
		if tr.File != 0 || !tr.Contiguous() {
			t.Errorf("transfer %+v", tr)
		}
	}
	if !slices.Equal(segs, []int64{0, 0, 1, 1}) || !slices.Equal(seqs, []int64{0, 1, 2, 3}) {
		t.Errorf("segments %v seqs %v", segs, seqs)
	}
}

func TestDataStart(t *testing.T) {
	p := IOR{Block: 16, Transfer: 8, Segments: 2, Tasks: 2, DataStart: 4096 + 3}
	want := []int64{4099 + 16, 4099 + 24, 4099 + 48, 4099 + 56}
	if got := starts(offsets(t, p, 1, Write)); !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if p.FileSize() != 4099+64 {
		t.Errorf("FileSize = %d", p.FileSize())
	}
	p.FilePerProc = true
	if got := starts(offsets(t, p, 1, Write)); !slices.Equal(got, []int64{4099, 4107, 4115, 4123}) {
		t.Errorf("fpp: got %v", got)
	}
}

func TestReorder(t *testing.T) {
	cases := []struct {
		name  string
		p     IOR
		read  []int
		check []int
	}{
		{"Q=1", IOR{Tasks: 4, Reorder: true, TaskOffset: 1}, []int{1, 2, 3, 0}, []int{2, 3, 0, 1}},
		{"Q=N-1", IOR{Tasks: 4, Reorder: true, TaskOffset: 3}, []int{3, 0, 1, 2}, []int{2, 3, 0, 1}},
		{"Q=0", IOR{Tasks: 4, Reorder: true, TaskOffset: 0}, []int{0, 1, 2, 3}, []int{2, 3, 0, 1}},
		{"shift 2 (block placement, 2 per node)", IOR{Tasks: 6, Reorder: true, TaskOffset: 1, RankShift: 2},
			[]int{2, 3, 4, 5, 0, 1}, []int{4, 5, 0, 1, 2, 3}},
		{"Q=2 shift 2 wraps", IOR{Tasks: 6, Reorder: true, TaskOffset: 2, RankShift: 2},
			[]int{4, 5, 0, 1, 2, 3}, []int{4, 5, 0, 1, 2, 3}},
		{"one node: shift N", IOR{Tasks: 3, Reorder: true, TaskOffset: 1, RankShift: 3}, []int{0, 1, 2}, []int{0, 1, 2}},
		{"no -C", IOR{Tasks: 3, TaskOffset: 1}, []int{0, 1, 2}, []int{0, 1, 2}},
		{"N=1", IOR{Tasks: 1, Reorder: true}, []int{0}, []int{0}},
		{"N=1, Q=1 (IOR's default)", IOR{Tasks: 1, Reorder: true, TaskOffset: 1}, []int{0}, []int{0}},
		{"Q=N+1 wraps like Q=1", IOR{Tasks: 4, Reorder: true, TaskOffset: 5}, []int{1, 2, 3, 0}, []int{2, 3, 0, 1}},
		{"huge Q: no overflow", IOR{Tasks: 10, Reorder: true, TaskOffset: math.MaxInt, RankShift: 9},
			// (2^63-1) * 9 mod 10 = 7*9 mod 10 = 3; write check: 2*9 mod 10 = 8.
			[]int{3, 4, 5, 6, 7, 8, 9, 0, 1, 2}, []int{8, 9, 0, 1, 2, 3, 4, 5, 6, 7}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.p.Block, c.p.Transfer, c.p.Segments = 16, 8, 1
			if err := c.p.Validate(); err != nil {
				t.Fatal(err)
			}
			for r := range c.p.Tasks {
				if got := c.p.TargetRank(r, Write); got != r {
					t.Errorf("write: rank %d -> %d", r, got)
				}
				if got := c.p.TargetRank(r, Read); got != c.read[r] {
					t.Errorf("read: rank %d -> %d, want %d", r, got, c.read[r])
				}
				if got := c.p.TargetRank(r, WriteCheck); got != c.check[r] {
					t.Errorf("writecheck: rank %d -> %d, want %d", r, got, c.check[r])
				}
			}
		})
	}
}

func TestReorderOffsets(t *testing.T) {
	// -C -Q 1, N=3: in the read phase rank 0 reads rank 1's blocks.
	p := IOR{Block: 16, Transfer: 8, Segments: 2, Tasks: 3, Reorder: true, TaskOffset: 1}
	if got := starts(offsets(t, p, 0, Read)); !slices.Equal(got, []int64{16, 24, 64, 72}) {
		t.Errorf("read rank 0: %v", got)
	}
	if got := starts(offsets(t, p, 0, Write)); !slices.Equal(got, []int64{0, 8, 48, 56}) {
		t.Errorf("write rank 0: %v", got)
	}
	p.TaskOffset = 2 // N-1: rank 0 reads rank 2's data
	if got := starts(offsets(t, p, 0, Read)); !slices.Equal(got, []int64{32, 40, 80, 88}) {
		t.Errorf("read rank 0, Q=2: %v", got)
	}
	for tr := range p.Transfers(0, Read) {
		if tr.Rank != 2 {
			t.Errorf("owner %d, want 2", tr.Rank)
		}
	}
	// File per process: rank 2 reads rank 0's file (Q=1, N=3).
	p = IOR{Block: 16, Transfer: 8, Segments: 1, Tasks: 3, FilePerProc: true, Reorder: true, TaskOffset: 1}
	for tr := range p.Transfers(2, Read) {
		if tr.File != 0 || tr.Rank != 0 {
			t.Errorf("fpp read rank 2: %+v", tr)
		}
	}
}

func TestWarnings(t *testing.T) {
	p := IOR{Block: 8, Transfer: 8, Segments: 1, Tasks: 4, Reorder: true, TaskOffset: 1, RankShift: 4}
	if w := p.Warnings(); len(w) != 1 || !strings.Contains(w[0], "no effect") {
		t.Errorf("Warnings = %q", w)
	}
	p.RankShift = 1
	if w := p.Warnings(); len(w) != 0 {
		t.Errorf("Warnings = %q", w)
	}
}

func TestGlibcRandom(t *testing.T) {
	// From glibc: srandom(seed); rand() five times.
	want := map[uint32][]int32{
		0:          {1804289383, 846930886, 1681692777, 1714636915, 1957747793},
		1:          {1804289383, 846930886, 1681692777, 1714636915, 1957747793},
		42:         {71876166, 708592740, 1483128881, 907283241, 442951012},
		12345:      {383100999, 858300821, 357768173, 455528251, 133005921},
		2147483647: {1065668062, 2142264300, 1066566375, 1064012770, 2141034222},
		2147483648: {1336741213, 1210407648, 1447044896, 337392383, 82502902},
		4294967295: {254925627, 1205188300, 366127624, 1401405153, 76053476},
		3000000000: {2058147116, 854483408, 922419988, 286396165, 2068523933},
	}
	for seed, w := range want {
		g := newGlibcRandom(seed)
		for i, v := range w {
			if got := g.rand(); got != v {
				t.Errorf("seed %d: rand #%d = %d, want %d", seed, i, got, v)
			}
		}
	}
}

// The vectors below come from a C program doing what IOR 4's
// GetOffsetArrayRandom does, linked against glibc.
func TestRandomFilePerProcMatchesIOR(t *testing.T) {
	p := IOR{Block: 64, Transfer: 8, Segments: 2, Tasks: 4, FilePerProc: true, Random: true, Seed: 42}
	want := map[int][]int64{
		0: {48, 24, 32, 16, 56, 40, 0, 8},
		1: {0, 8, 24, 56, 32, 48, 40, 16},
		3: {16, 48, 8, 40, 56, 0, 32, 24},
	}
	for r, w := range want {
		got := starts(offsets(t, p, r, Write))
		// Segment 1 repeats the order, shifted by one block.
		full := slices.Clone(w)
		for _, x := range w {
			full = append(full, x+64)
		}
		if !slices.Equal(got, full) {
			t.Errorf("rank %d: %v, want %v", r, got, full)
		}
	}
}

func TestRandomSharedMatchesIOR(t *testing.T) {
	p := IOR{Block: 32, Transfer: 8, Segments: 2, Tasks: 3, Random: true, Seed: 7}
	want := [][]int64{{0, 8, 40, 64}, {24, 56, 72, 88}, {16, 32, 48, 80}}
	for r, w := range want {
		full := slices.Clone(w)
		for _, x := range w {
			full = append(full, x+96)
		}
		if got := starts(offsets(t, p, r, Write)); !slices.Equal(got, full) {
			t.Errorf("rank %d: %v, want %v", r, got, full)
		}
		if p.Count(r, Write) != int64(len(full)) {
			t.Errorf("Count(%d) = %d", r, p.Count(r, Write))
		}
	}
	p = IOR{Block: 1 << 20, Transfer: 1 << 16, Segments: 1, Tasks: 4, Random: true, Seed: 12345}
	want = [][]int64{
		{3932160, 1245184, 2752512, 4063232, 3866624, 3735552, 2686976, 327680, 589824, 2621440, 1441792, 1114112, 524288, 2424832, 2031616},
		{2097152, 4128768, 2883584, 720896, 1835008, 1179648, 1310720, 983040, 393216, 1966080, 2490368, 2818048, 851968, 65536, 262144, 131072, 3538944, 786432, 3997696, 3604480},
		{1048576, 3407872, 2293760, 1769472, 458752, 2949120, 1507328, 3014656, 917504, 3145728},
		{2228224, 2162688, 1572864, 1703936, 2555904, 3080192, 3211264, 1638400, 3276800, 2359296, 3670016, 1900544, 3342336, 3801088, 655360, 196608, 1376256, 3473408, 0},
	}
	for r, w := range want {
		if got := starts(offsets(t, p, r, Write)); !slices.Equal(got, w) {
			t.Errorf("rank %d: %v, want %v", r, got, w)
		}
	}
}

func TestRandomCoversEachTransferOnce(t *testing.T) {
	for _, fpp := range []bool{false, true} {
		p := IOR{Block: 1 << 12, Transfer: 64, Segments: 3, Tasks: 5, FilePerProc: fpp, Random: true, Seed: 99, DataStart: 12}
		seen := map[[2]int64]int{}
		for r := range p.Tasks {
			got := offsets(t, p, r, Write)
			again := offsets(t, p, r, Write)
			if !slices.Equal(got, again) {
				t.Fatalf("fpp=%v rank %d: not deterministic", fpp, r)
			}
			for tr := range p.Transfers(r, Write) {
				seen[[2]int64{int64(tr.File), tr.Offset}]++
			}
		}
		files := int64(p.Files())
		if int64(len(seen)) != p.AggregateSize()/p.Transfer || files*p.FileSize() != p.AggregateSize()+files*12 {
			t.Errorf("fpp=%v: %d distinct transfers, want %d", fpp, len(seen), p.AggregateSize()/p.Transfer)
		}
		for k, n := range seen {
			if n != 1 || (k[1]-12)%64 != 0 || k[1] < 12 || k[1] >= p.FileSize() {
				t.Errorf("fpp=%v: transfer %v hit %d times", fpp, k, n)
			}
		}
		// A different seed gives a different order.
		q := p
		q.Seed = 100
		if slices.Equal(offsets(t, p, 0, Write), offsets(t, q, 0, Write)) {
			t.Errorf("fpp=%v: seeds 99 and 100 give the same order", fpp)
		}
	}
}

func TestRandomIsShuffled(t *testing.T) {
	p := IOR{Block: 1 << 16, Transfer: 8, Segments: 1, Tasks: 1, FilePerProc: true, Random: true, Seed: 1}
	got := starts(offsets(t, p, 0, Write))
	if slices.IsSorted(got) {
		t.Error("random order is sorted")
	}
}

func TestStrided(t *testing.T) {
	// N=2, b=16, t=32, s=4: rank 0's blocks are at 0, 32, 64, 96.
	p := IOR{Block: 16, Transfer: 32, Segments: 4, Tasks: 2, Strided: true}
	var got [][]Extent
	for tr := range p.Transfers(0, Write) {
		if tr.Contiguous() || tr.Length != 32 || tr.Offset != tr.Extents[0].Offset {
			t.Errorf("transfer %+v", tr)
		}
		got = append(got, tr.Pieces())
	}
	want := [][]Extent{{{0, 16}, {32, 16}}, {{64, 16}, {96, 16}}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("rank 0: %v, want %v", got, want)
	}
	// Transfer not a multiple of the block: 24 over 16-byte blocks of rank 1.
	p = IOR{Block: 16, Transfer: 24, Segments: 3, Tasks: 2, Strided: true}
	got = nil
	var segs []int64
	for tr := range p.Transfers(1, Write) {
		got = append(got, tr.Pieces())
		segs = append(segs, tr.Segment)
	}
	want = [][]Extent{{{16, 16}, {48, 8}}, {{56, 8}, {80, 16}}}
	if !slices.EqualFunc(got, want, slices.Equal) || !slices.Equal(segs, []int64{0, 1}) {
		t.Errorf("rank 1: %v segs %v, want %v", got, segs, want)
	}
	// File per process: the view is contiguous, so are the calls.
	p = IOR{Block: 16, Transfer: 32, Segments: 4, Tasks: 2, Strided: true, FilePerProc: true, DataStart: 5}
	var offs []int64
	for tr := range p.Transfers(1, Write) {
		if !tr.Contiguous() {
			t.Errorf("fpp strided transfer not contiguous: %+v", tr)
		}
		offs = append(offs, tr.Offset)
	}
	if !slices.Equal(offs, []int64{5, 37}) {
		t.Errorf("fpp strided offsets %v", offs)
	}
	// The thesis' benchmark: 512 MiB calls over 1 MiB blocks, 10 ranks.
	p = IOR{Block: 1 << 20, Transfer: 512 << 20, Segments: 20480, Tasks: 10, Strided: true}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	if n := p.Count(3, Write); n != 40 {
		t.Errorf("Count = %d, want 40", n)
	}
	for tr := range p.Transfers(3, Write) {
		if len(tr.Extents) != 512 || tr.Extents[1].Offset-tr.Extents[0].Offset != 10<<20 {
			t.Errorf("thesis call: %d extents", len(tr.Extents))
		}
		break
	}
}

func TestStridedEqualsIORWhenTransferDividesBlock(t *testing.T) {
	for _, fpp := range []bool{false, true} {
		p := IOR{Block: 32, Transfer: 8, Segments: 3, Tasks: 3, FilePerProc: fpp, DataStart: 7, Reorder: true, TaskOffset: 2}
		q := p
		q.Strided = true
		for r := range p.Tasks {
			a := p.AppendTransfers(nil, r, Read)
			b := q.AppendTransfers(nil, r, Read)
			if !slices.EqualFunc(a, b, func(x, y Transfer) bool {
				return x.Seq == y.Seq && x.Rank == y.Rank && x.File == y.File && x.Segment == y.Segment &&
					x.Offset == y.Offset && x.Length == y.Length && x.Extents == nil && y.Extents == nil
			}) {
				t.Errorf("fpp=%v rank %d:\n%v\n%v", fpp, r, a, b)
			}
		}
	}
}

func TestTransfersEarlyStop(t *testing.T) {
	for _, p := range []IOR{
		{Block: 64, Transfer: 8, Segments: 2, Tasks: 2},
		{Block: 64, Transfer: 8, Segments: 2, Tasks: 2, Random: true},
		{Block: 64, Transfer: 16, Segments: 2, Tasks: 2, Random: true, FilePerProc: true},
		{Block: 8, Transfer: 16, Segments: 4, Tasks: 2, Strided: true},
	} {
		n := 0
		for range p.Transfers(1, Write) {
			n++
			if n == 2 {
				break
			}
		}
		if n != 2 {
			t.Errorf("%v: %d", p, n)
		}
	}
}

func TestValidate(t *testing.T) {
	ok := IOR{Block: 1 << 20, Transfer: 256 << 10, Segments: 1, Tasks: 4, TaskOffset: 1}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := Default(4).Validate(); err != nil {
		t.Fatal(err)
	}
	if Default(4) != ok {
		t.Errorf("Default(4) = %+v", Default(4))
	}
	cases := []struct {
		name string
		edit func(*IOR)
		msg  string
	}{
		{"t does not divide b", func(p *IOR) { p.Transfer = 384 << 10 }, "block size must be a multiple of transfer size"},
		{"t > b", func(p *IOR) { p.Transfer = 2 << 20 }, "block size must be a multiple of transfer size"},
		{"zero transfer", func(p *IOR) { p.Transfer = 0 }, "transfer size must be positive"},
		{"negative transfer", func(p *IOR) { p.Transfer = -8 }, "transfer size must be positive"},
		{"zero block", func(p *IOR) { p.Block = 0 }, "block size must be positive"},
		{"negative block", func(p *IOR) { p.Block = -1 << 20 }, "block size must be positive"},
		{"block not multiple of 8", func(p *IOR) { p.Block = 1001 }, "multiple of access size"},
		{"transfer not multiple of 8", func(p *IOR) { p.Transfer = 12 }, "multiple of access size"},
		{"zero segments", func(p *IOR) { p.Segments = 0 }, "segment count must be positive"},
		{"zero tasks", func(p *IOR) { p.Tasks = 0 }, "too few tasks"},
		{"negative tasks", func(p *IOR) { p.Tasks = -3 }, "too few tasks"},
		{"overflow", func(p *IOR) { p.Segments = math.MaxInt64 / (1 << 20) }, "overflows int64"},
		{"overflow in b*s", func(p *IOR) { p.Block = 1 << 40; p.Segments = 1 << 30 }, "overflows int64"},
		{"overflow with data start", func(p *IOR) {
			p.Block, p.Transfer, p.Segments, p.Tasks = 1<<30, 1<<30, 1<<30, 8
			p.DataStart = 1
		}, "overflows int64"},
		{"negative data start", func(p *IOR) { p.DataStart = -1 }, "data start"},
		{"reorder offset negative", func(p *IOR) { p.Reorder = true; p.TaskOffset = -1 }, "reorder task offset"},
		{"reorder offset very negative", func(p *IOR) { p.Reorder = true; p.TaskOffset = math.MinInt }, "reorder task offset"},
		{"rank shift > N", func(p *IOR) { p.RankShift = 5 }, "rank shift"},
		{"random b == t", func(p *IOR) { p.Random = true; p.Transfer = p.Block }, "choose blocksize > transferSize"},
		{"random + reorder shared", func(p *IOR) { p.Random = true; p.Reorder = true; p.TaskOffset = 1 }, "random offset and constant reorder tasks"},
		{"random + strided", func(p *IOR) { p.Random = true; p.Strided = true }, "strided mode cannot be combined"},
		{"strided indivisible", func(p *IOR) { p.Strided = true; p.Transfer = 3 << 20 }, "must divide blockSize*segmentCount"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := ok
			c.edit(&p)
			err := p.Validate()
			if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.msg) {
				t.Errorf("Validate(%+v) = %v, want %q", p, err, c.msg)
			}
		})
	}
	// Valid corner cases.
	for _, p := range []IOR{
		{Block: 8, Transfer: 8, Segments: 1, Tasks: 1},
		{Block: 1 << 20, Transfer: 1 << 20, Segments: 1 << 20, Tasks: 1 << 20}, // 2^60 bytes
		{Block: 1 << 20, Transfer: 512 << 20, Segments: 20480, Tasks: 10, Strided: true},
		{Block: 16, Transfer: 8, Segments: 1, Tasks: 2, Random: true, Reorder: true, TaskOffset: 1, FilePerProc: true},
		{Block: 16, Transfer: 8, Segments: 1, Tasks: 2, TaskOffset: -5}, // -Q ignored without -C
	} {
		if err := p.Validate(); err != nil {
			t.Errorf("Validate(%+v) = %v", p, err)
		}
	}
}

func TestPanics(t *testing.T) {
	mustPanic := func(name string, f func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s did not panic", name)
			}
		}()
		f()
	}
	p := IOR{Block: 16, Transfer: 8, Segments: 1, Tasks: 2}
	mustPanic("rank out of range", func() { p.TargetRank(2, Write) })
	mustPanic("negative rank", func() { p.Transfers(-1, Write) })
	bad := p
	bad.Transfer = 24
	mustPanic("invalid pattern", func() { bad.Transfers(0, Write) })
	mustPanic("invalid Count", func() { bad.Count(0, Write) })
}

func TestStringAndFormat(t *testing.T) {
	p := IOR{Block: 1 << 20, Transfer: 256 << 10, Segments: 20, Tasks: 10, FilePerProc: true, Reorder: true, TaskOffset: 1,
		Random: true, Seed: 5, DataStart: 4096}
	want := "-N 10 -b 1m -t 256k -s 20 -F -C -Q 1 -z --random-offset-seed=5 data-start=4096"
	if got := p.String(); got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
	if got := FormatSet([]int{0, 1, 2, 3, 7, 9, 10}); got != "0-3,7,9-10" {
		t.Errorf("FormatSet = %q", got)
	}
	if got := FormatSet(nil); got != "-" {
		t.Errorf("FormatSet(nil) = %q", got)
	}
	for ph, w := range map[Phase]string{Write: "write", Read: "read", WriteCheck: "writecheck", 9: "Phase(9)"} {
		if ph.String() != w {
			t.Errorf("%d: %q", int(ph), ph.String())
		}
	}
}

// Word replaces IOR's 8-byte access size: a program moving bytes or
// shorts (pario advise's datasets) has blocks and transfers of any
// multiple of its element, which IOR's rule refused.
func TestValidateWord(t *testing.T) {
	for _, p := range []IOR{
		{Block: 1 << 20, Transfer: 4, Segments: 1, Tasks: 1, Word: 1},
		{Block: 20, Transfer: 20, Segments: 1, Tasks: 1, Word: 2},
		{Block: 6, Transfer: 2, Segments: 3, Tasks: 5, Word: 2},
	} {
		if err := p.Validate(); err != nil {
			t.Errorf("Validate(%+v) = %v", p, err)
			continue
		}
		if _, err := Analyze(p, Config{Dist: mustDist(t, "simple_stripe:strip_size=65536", 4)}); err != nil {
			t.Errorf("Analyze(%+v) = %v", p, err)
		}
	}
	for _, c := range []struct {
		p   IOR
		msg string
	}{
		{IOR{Block: 20, Transfer: 20, Segments: 1, Tasks: 1}, "block size must be a multiple of access size (8 bytes), got 20"},
		{IOR{Block: 1 << 20, Transfer: 4, Segments: 1, Tasks: 1}, "transfer size must be a multiple of access size (8 bytes), got 4"},
		{IOR{Block: 20, Transfer: 3, Segments: 1, Tasks: 1, Word: 2}, "transfer size must be a multiple of access size (2 bytes), got 3"},
		{IOR{Block: 21, Transfer: 3, Segments: 1, Tasks: 1, Word: 2}, "block size must be a multiple of access size (2 bytes), got 21"},
		{IOR{Block: 8, Transfer: 8, Segments: 1, Tasks: 1, Word: -1}, "access size must not be negative"},
	} {
		if err := c.p.Validate(); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("Validate(%+v) = %v, want %q", c.p, err, c.msg)
		}
	}
}

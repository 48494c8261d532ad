package pattern

import (
	"errors"
	"fmt"
	"iter"
	"math"
	"math/bits"
)

// ErrInvalid is matched (with errors.Is) by every error Validate and
// Analyze return.
var ErrInvalid = errors.New("pattern: invalid parameters")

type invalidError struct{ msg string }

func (e *invalidError) Error() string        { return e.msg }
func (e *invalidError) Is(target error) bool { return target == ErrInvalid }

func errorf(format string, args ...any) error {
	return &invalidError{msg: fmt.Sprintf(format, args...)}
}

// AccessSize is IOR's IOR_size_t: block and transfer sizes must be
// multiples of it (IOR verifies data in 8-byte words).
const AccessSize = 8

// IOR defaults (ior.c init_IOR_Param_t).
const (
	DefaultBlock      = 1 << 20   // -b 1m
	DefaultTransfer   = 256 << 10 // -t 256k
	DefaultSegments   = 1         // -s 1
	DefaultTaskOffset = 1         // -Q 1
)

// IOR is one IOR test's access pattern: the parameters that decide which
// byte ranges each rank moves and in which order. All sizes are bytes in
// int64; nothing is ever computed in 32 bits.
//
// The zero value is not valid; start from Default or fill in Block,
// Transfer, Segments and Tasks, then call Validate. The generating methods
// (Transfers, Count, ...) panic on a pattern that does not validate or a
// rank out of range: those are programming errors.
type IOR struct {
	Block    int64 // -b blockSize: bytes per rank per segment
	Transfer int64 // -t transferSize: bytes per I/O call
	Segments int64 // -s segmentCount
	Tasks    int   // -N numTasks: the number of ranks

	FilePerProc bool // -F: one file per rank instead of one shared file

	// Reorder is -C (reorderTasks): in the read phase rank r moves the
	// data written by rank (r + TaskOffset*RankShift) mod Tasks, so that
	// a node does not read back its own page cache. See TargetRank.
	Reorder bool
	// TaskOffset is -Q (taskPerNodeOffset), IOR's default is 1. It counts
	// nodes, each RankShift ranks wide, and wraps modulo Tasks as in IOR.
	// Only used with Reorder; then it must not be negative.
	TaskOffset int
	// RankShift is the number of ranks one -Q step moves. IOR 4 uses 1
	// when ranks are dealt to nodes round-robin and the number of tasks on
	// node 0 when they are placed in blocks (it checks whether rank 1 runs
	// on rank 0's host). 0 means 1. Note that with every rank on one node
	// IOR's shift is Tasks, so -C has no effect there (Warnings says so).
	RankShift int

	// Random is -z (randomOffset): each rank issues its transfers in a
	// random order, exactly as IOR 4's GetOffsetArrayRandom does with
	// glibc's random(); see Transfers.
	Random bool
	// Seed is IOR's --random-offset-seed. With FilePerProc the generator
	// is seeded with uint32(Seed + owner rank), in a shared file with
	// uint32(Seed) on every rank. (IOR draws time(NULL) when no seed is
	// given; a caller emulating that picks the seed and, for a shared file,
	// broadcasts it.)
	Seed int64

	// Word is the access size Block and Transfer must be multiples of:
	// 0 is IOR's AccessSize (8 bytes, the word it verifies data in). A
	// program that is not IOR moves whole elements of its own size (pario
	// advise gives a dataset's element size: 1 for bytes, 2 for shorts).
	Word int64

	// DataStart is added to every offset: the bytes of a container header
	// before the data, as NetCDF-4 writes without alignment (seed 002,
	// section 5.1). It is not an IOR parameter; 0 gives IOR's offsets.
	DataStart int64

	// Strided lets one call cover many blocks (not an IOR mode; IOR
	// forbids t > b, so seed 002 wrote its own benchmark for 512 MiB
	// transfers over 1 MiB blocks with a file view). A rank's data is the
	// concatenation of its Segments blocks in segment order - its view of
	// the file - and call k moves bytes [k*t, (k+1)*t) of that view: one
	// non-contiguous access made of the pieces of every block it covers
	// (Transfer.Extents). Transfer must divide Block*Segments; it may be
	// smaller than, larger than, or unrelated to Block. When Transfer
	// divides Block the offsets are exactly IOR's.
	Strided bool
}

// word is the access size: Word, or IOR's AccessSize.
func (p IOR) word() int64 {
	if p.Word == 0 {
		return AccessSize
	}
	return p.Word
}

// Default returns IOR's defaults for the given number of tasks: -b 1m
// -t 256k -s 1 -Q 1.
func Default(tasks int) IOR {
	return IOR{
		Block:      DefaultBlock,
		Transfer:   DefaultTransfer,
		Segments:   DefaultSegments,
		Tasks:      tasks,
		TaskOffset: DefaultTaskOffset,
	}
}

// Validate checks the parameters with IOR's rules (ValidateTests) and
// messages where IOR has them, plus int64 overflow checks. Every error
// matches ErrInvalid.
func (p IOR) Validate() error {
	switch {
	case p.Tasks <= 0:
		return errorf("too few tasks for testing (numTasks %d)", p.Tasks)
	case p.Segments <= 0:
		return errorf("segment count must be positive value (segmentCount %d)", p.Segments)
	case p.Block <= 0:
		return errorf("block size must be positive (blockSize %d)", p.Block)
	case p.Word < 0:
		return errorf("access size must not be negative, got %d", p.Word)
	case p.Block%p.word() != 0:
		return errorf("block size must be a multiple of access size (%d bytes), got %d", p.word(), p.Block)
	case p.Transfer <= 0:
		return errorf("transfer size must be positive (transferSize %d): test will not complete", p.Transfer)
	case p.Transfer%p.word() != 0:
		return errorf("transfer size must be a multiple of access size (%d bytes), got %d", p.word(), p.Transfer)
	case p.DataStart < 0:
		return errorf("data start offset must be non-negative, got %d", p.DataStart)
	case p.RankShift < 0 || p.RankShift > p.Tasks:
		return errorf("rank shift must be in [0, numTasks=%d], got %d", p.Tasks, p.RankShift)
	}
	// Overflow: the last byte of the (largest) file must fit in an int64.
	agg, ok := mul3(p.Block, p.Segments, int64(p.Tasks))
	if !ok || agg > math.MaxInt64-p.DataStart {
		return errorf("aggregate size blockSize*segmentCount*numTasks (+ data start) overflows int64: %d*%d*%d + %d",
			p.Block, p.Segments, p.Tasks, p.DataStart)
	}
	if p.Strided {
		if (p.Block*p.Segments)%p.Transfer != 0 {
			return errorf("strided mode: transfer size %d must divide blockSize*segmentCount = %d", p.Transfer, p.Block*p.Segments)
		}
	} else {
		if p.Block%p.Transfer != 0 {
			return errorf("block size must be a multiple of transfer size (blockSize %d, transferSize %d)", p.Block, p.Transfer)
		}
	}
	if p.Reorder && p.TaskOffset < 0 {
		return errorf("reorder task offset (-Q) must be non-negative, got %d", p.TaskOffset)
	}
	if p.Random {
		if p.Strided {
			return errorf("strided mode cannot be combined with random offsets")
		}
		if p.Block == p.Transfer {
			return errorf("IOR will randomize access within a block and repeats the same pattern for all segments, therefore choose blocksize > transferSize")
		}
		if p.Reorder && !p.FilePerProc {
			return errorf("random offset and constant reorder tasks specified with single-shared-file. Choose one and resubmit")
		}
	}
	return nil
}

// Warnings lists settings that are valid but probably not what the user
// meant, one sentence each.
func (p IOR) Warnings() []string {
	var w []string
	if p.Reorder && p.Tasks > 1 && p.readShift() == 0 {
		w = append(w, fmt.Sprintf("-C has no effect: task offset %d * rank shift %d is a multiple of %d tasks, every rank reads its own data",
			p.TaskOffset, p.shift(), p.Tasks))
	}
	if p.Reorder && p.Tasks == 1 {
		w = append(w, "-C has no effect with a single task")
	}
	return w
}

func mul3(a, b, c int64) (int64, bool) {
	if a != 0 && b > math.MaxInt64/a {
		return 0, false
	}
	ab := a * b
	if ab != 0 && c > math.MaxInt64/ab {
		return 0, false
	}
	return ab * c, true
}

func (p IOR) mustValid() {
	if err := p.Validate(); err != nil {
		panic("pattern: " + err.Error())
	}
}

func (p IOR) checkRank(rank int) {
	if rank < 0 || rank >= p.Tasks {
		panic(fmt.Sprintf("pattern: rank %d out of range [0, %d)", rank, p.Tasks))
	}
}

// AggregateSize is the number of bytes all ranks move together in one
// phase: Block*Segments*Tasks (DataStart excluded).
func (p IOR) AggregateSize() int64 { return p.Block * p.Segments * int64(p.Tasks) }

// RankSize is the number of bytes each rank's data has: Block*Segments.
// (With Random in a shared file the bytes a rank moves differ, see Count.)
func (p IOR) RankSize() int64 { return p.Block * p.Segments }

// Files is the number of files the test uses: Tasks with FilePerProc,
// else 1.
func (p IOR) Files() int {
	if p.FilePerProc {
		return p.Tasks
	}
	return 1
}

// FileSize is the size every file has after a complete write phase:
// DataStart plus Block*Segments (file per process) or the aggregate size
// (shared file).
func (p IOR) FileSize() int64 {
	if p.FilePerProc {
		return p.DataStart + p.RankSize()
	}
	return p.DataStart + p.AggregateSize()
}

// Phase is the part of an IOR test a rank is in; it decides, with -C,
// whose data the rank moves.
type Phase int

const (
	// Write is the timed write phase (-w): every rank writes its own data.
	Write Phase = iota
	// WriteCheck is the untimed read-back after writing (-W checkWrite).
	// With -C IOR 4.0 shifts it by 2*RankShift ranks (IOR 4.1-dev: by
	// (TaskOffset+1)*RankShift; the two agree for the default -Q 1).
	WriteCheck
	// Read is the read phase (-r, and -R checkRead, which compares while
	// reading). With -C it is shifted by TaskOffset*RankShift ranks.
	Read
)

func (ph Phase) String() string {
	switch ph {
	case Write:
		return "write"
	case WriteCheck:
		return "writecheck"
	case Read:
		return "read"
	}
	return fmt.Sprintf("Phase(%d)", int(ph))
}

func (p IOR) shift() int { return max(p.RankShift, 1) }

// readShift is (TaskOffset*shift) mod Tasks, without overflow.
func (p IOR) readShift() int {
	hi, lo := bits.Mul64(uint64(p.TaskOffset), uint64(p.shift()))
	return int(bits.Rem64(hi, lo, uint64(p.Tasks)))
}

// TargetRank is IOR's pretendRank: the rank whose data rank moves in the
// phase. Without Reorder it is rank itself; with Reorder (-C) it is
//
//	Read:       (rank + (TaskOffset*RankShift) mod Tasks) mod Tasks
//	WriteCheck: (rank + (2*RankShift) mod Tasks) mod Tasks
//	Write:      rank
//
// The target rank decides the offsets (its block), the file (with
// FilePerProc, rank reads the target's file), the random seed (Seed +
// target with FilePerProc) and IOR's data signature.
func (p IOR) TargetRank(rank int, ph Phase) int {
	p.checkRank(rank)
	if !p.Reorder {
		return rank
	}
	var off int64
	switch ph {
	case Read:
		off = int64(p.readShift())
	case WriteCheck:
		off = (2 * int64(p.shift())) % int64(p.Tasks)
	}
	return int((int64(rank) + off) % int64(p.Tasks))
}

// Extent is a byte range of a file.
type Extent struct {
	Offset int64
	Length int64
}

// End is one past the last byte.
func (e Extent) End() int64 { return e.Offset + e.Length }

// Transfer is one I/O call of a rank.
type Transfer struct {
	Seq     int64 // 0-based position in the rank's issue order
	Rank    int   // the data owner, IOR's pretendRank (TargetRank)
	File    int   // which file: Rank with FilePerProc, else 0
	Segment int64 // the segment of the first byte
	Offset  int64 // file offset of the first byte, DataStart included
	Length  int64 // bytes moved: always the transfer size
	// Extents is set only for a Strided call that is not contiguous in the
	// file: its file ranges in order (Extents[0].Offset == Offset, lengths
	// summing to Length, adjacent ranges merged). Nil means the call is
	// the single range [Offset, Offset+Length).
	Extents []Extent
}

// Contiguous reports whether the call is one range of the file.
func (t Transfer) Contiguous() bool { return t.Extents == nil }

// Pieces returns the call's file ranges: Extents, or the single range.
func (t Transfer) Pieces() []Extent {
	if t.Extents != nil {
		return t.Extents
	}
	return []Extent{{t.Offset, t.Length}}
}

// Count is the number of transfers rank issues in the phase. It is
// Block*Segments/Transfer except with Random in a shared file, where IOR
// deals the transfers of a segment to ranks at random, so counts differ
// between ranks (they still sum to AggregateSize/Transfer).
func (p IOR) Count(rank int, ph Phase) int64 {
	p.mustValid()
	owner := p.TargetRank(rank, ph)
	if p.Random && !p.FilePerProc {
		return int64(len(p.randomShared(owner))) * p.Segments
	}
	return p.RankSize() / p.Transfer
}

// Transfers yields rank's calls in the order IOR issues them in the phase.
//
// Sequential (IOR's default): for each segment i, the target's block in
// transfer order j = 0, 1, ..., Block/Transfer-1 (offsets in the package
// comment).
//
// Random (-z), as IOR 4's GetOffsetArrayRandom, computed once and reused
// for every segment; glibc's random() seeded with srandom(seed):
//
//   - FilePerProc: the list 0, t, 2t, ..., b-t, shuffled; call j of
//     segment i is at list[j] + i*b. The seed is Seed + target rank, so
//     each rank has its own order and every transfer of its file is hit
//     exactly once per segment.
//   - Shared file: every rank seeds with Seed and walks the N*b/t
//     transfers x = 0, t, 2t, ... of one segment; rand() % N names the rank
//     that gets x (all ranks draw the same sequence, so each transfer goes
//     to exactly one rank - not necessarily within that rank's block, and
//     ranks get different numbers of transfers). The rank's list is then
//     shuffled; call j of segment i is at list[j] + i*N*b.
//
// IOR's shuffle is "for i < n: swap(list[i], list[rand() % n])", with the
// generator continuing where the dealing stopped.
//
// Strided: call k covers bytes [k*t, (k+1)*t) of the target's blocks
// concatenated in segment order (see IOR.Strided).
//
// DataStart is added to every offset.
//
// Cost: sequential and strided calls are computed as they are yielded. In
// random mode the list is built when iteration starts, as IOR does: Block/
// Transfer offsets (file per process), or a walk over the Tasks*Block/
// Transfer transfers of a segment (shared file).
func (p IOR) Transfers(rank int, ph Phase) iter.Seq[Transfer] {
	p.mustValid()
	owner := p.TargetRank(rank, ph)
	file := 0
	if p.FilePerProc {
		file = owner
	}
	switch {
	case p.Random:
		return func(yield func(Transfer) bool) {
			var list []int64
			if p.FilePerProc {
				list = p.randomFPP(owner)
			} else {
				list = p.randomShared(owner)
			}
			p.randomTransfers(owner, list)(yield)
		}
	case p.Strided:
		return func(yield func(Transfer) bool) {
			n := p.RankSize() / p.Transfer
			for k := range n {
				t := p.stridedCall(owner, file, k)
				if !yield(t) {
					return
				}
			}
		}
	default:
		return func(yield func(Transfer) bool) {
			per := p.Block / p.Transfer
			seq := int64(0)
			for i := range p.Segments {
				base := p.DataStart + p.blockOffset(owner, i)
				for j := range per {
					t := Transfer{Seq: seq, Rank: owner, File: file, Segment: i,
						Offset: base + j*p.Transfer, Length: p.Transfer}
					if !yield(t) {
						return
					}
					seq++
				}
			}
		}
	}
}

// randomTransfers yields the calls of owner in random mode from its
// in-segment offset list, segment by segment.
func (p IOR) randomTransfers(owner int, list []int64) iter.Seq[Transfer] {
	file := 0
	stride := p.Block * int64(p.Tasks)
	if p.FilePerProc {
		file = owner
		stride = p.Block
	}
	return func(yield func(Transfer) bool) {
		seq := int64(0)
		for i := range p.Segments {
			for _, x := range list {
				t := Transfer{Seq: seq, Rank: owner, File: file, Segment: i,
					Offset: p.DataStart + i*stride + x, Length: p.Transfer}
				if !yield(t) {
					return
				}
				seq++
			}
		}
	}
}

// AppendTransfers appends rank's calls in issue order to dst.
func (p IOR) AppendTransfers(dst []Transfer, rank int, ph Phase) []Transfer {
	for t := range p.Transfers(rank, ph) {
		dst = append(dst, t)
	}
	return dst
}

// blockOffset is the file offset (without DataStart) of owner's block in
// segment i.
func (p IOR) blockOffset(owner int, i int64) int64 {
	if p.FilePerProc {
		return i * p.Block
	}
	return i*int64(p.Tasks)*p.Block + int64(owner)*p.Block
}

// stridedCall builds call k of owner in strided mode.
func (p IOR) stridedCall(owner, file int, k int64) Transfer {
	pos := k * p.Transfer
	end := pos + p.Transfer
	t := Transfer{Seq: k, Rank: owner, File: file, Segment: pos / p.Block, Length: p.Transfer}
	if p.FilePerProc || p.Tasks == 1 {
		// The blocks are adjacent in the file: one range.
		t.Offset = p.DataStart + p.blockOffset(owner, pos/p.Block) + pos%p.Block
		return t
	}
	blocks := (pos%p.Block + p.Transfer + p.Block - 1) / p.Block
	if blocks == 1 {
		t.Offset = p.DataStart + p.blockOffset(owner, pos/p.Block) + pos%p.Block
		return t
	}
	ext := make([]Extent, 0, blocks)
	for pos < end {
		blk := pos / p.Block
		in := pos % p.Block
		n := min(p.Block-in, end-pos)
		off := p.DataStart + p.blockOffset(owner, blk) + in
		ext = append(ext, Extent{off, n})
		pos += n
	}
	t.Offset = ext[0].Offset
	t.Extents = ext
	return t
}

// randomFPP is IOR's random offset list for a file per process: the
// in-block offsets 0, t, ..., b-t shuffled with seed Seed+owner.
func (p IOR) randomFPP(owner int) []int64 {
	g := newGlibcRandom(uint32(p.Seed + int64(owner)))
	n := p.Block / p.Transfer
	list := make([]int64, n)
	for i := range list {
		list[i] = int64(i) * p.Transfer
	}
	shuffle(g, list)
	return list
}

// randomShared is IOR's random offset list in a shared file for owner: the
// in-segment offsets dealt to owner, shuffled.
func (p IOR) randomShared(owner int) []int64 {
	lists := p.randomSharedAll(owner, owner+1)
	return lists[0]
}

// randomSharedAll returns the random lists of ranks lo..hi-1 in one pass
// over the dealing (all ranks draw the same sequence).
func (p IOR) randomSharedAll(lo, hi int) [][]int64 {
	g := newGlibcRandom(uint32(p.Seed))
	n := int64(p.Tasks)
	seg := p.Block * n
	lists := make([][]int64, hi-lo)
	for x := int64(0); x < seg; x += p.Transfer {
		r := int(int64(g.rand()) % n)
		if r >= lo && r < hi {
			lists[r-lo] = append(lists[r-lo], x)
		}
	}
	for i := range lists {
		shuffle(g.clone(), lists[i])
	}
	return lists
}

// shuffle is IOR's (biased) shuffle: for i < n, swap list[i] with
// list[rand() % n].
func shuffle(g *glibcRandom, list []int64) {
	n := int64(len(list))
	for i := range list {
		v := int64(g.rand()) % n
		list[i], list[v] = list[v], list[i]
	}
}

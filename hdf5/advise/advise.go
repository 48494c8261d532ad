package advise

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/bits"

	"github.com/pario/pario/dist"
	"github.com/pario/pario/hdf5"
	"github.com/pario/pario/pattern"
	"github.com/pario/pario/units"
)

// API is the library the program writes through.
type API string

// The libraries.
const (
	HDF5    API = "hdf5"
	NetCDF4 API = "netcdf4"
)

// Pattern is how the dataset is split among the ranks, along its first
// dimension (the thesis' two classes).
type Pattern string

// The patterns.
const (
	// Disjoint: each rank writes one contiguous part of the dataset.
	Disjoint Pattern = "disjoint"
	// Interleaved: the ranks take turns, Block bytes each (IOR's segments).
	Interleaved Pattern = "interleaved"
)

// Layout is the dataset's storage layout.
type Layout string

// The layouts ("" lets the library choose: contiguous, or chunked with an
// unlimited dimension).
const (
	Contiguous Layout = "contiguous"
	Chunked    Layout = "chunked"
)

// DefaultHeader is where the data of a file's first dataset starts when
// nothing aligns it: HDF5 1.10 writes superblock, root group and dataset
// header in the first 2 KiB, and NetCDF-4's file of one variable is the
// same size before its data. A program with more metadata passes its own.
const DefaultHeader = 2048

// Access describes the program's writes and the target directory.
type Access struct {
	API  API
	Dims []uint64 // lengths in elements; with Unlimited, Dims[0] is the records written
	// Unlimited makes the first dimension unlimited (a record dimension):
	// an extendible, chunked dataset.
	Unlimited bool
	Type      string // element type (TypeSize)
	Ranks     int
	Pattern   Pattern
	Block     int64 // Interleaved: bytes per rank per turn (0 = Transfer)
	Transfer  int64 // bytes per write call of one rank
	// TransferDefault: Transfer is the caller's default, not the user's
	// choice (errors about it say --transfer was not given).
	TransferDefault bool

	Layout     Layout
	Chunk      []uint64 // chunk lengths; nil = the library's default
	Collective bool
	Fill       bool  // fill values are written at allocation
	Alignment  int64 // HDF5's alignment now; 1 = none (HDF5's default)
	Header     int64 // bytes before the data when unaligned; 0 = DefaultHeader

	// stored: Header is the data's address read from a file (FromStored).
	stored bool
	// fillFrom says where Fill came from (a file's fill properties).
	fillFrom string
	// blockIsTransfer: Block was not given, it is Transfer.
	blockIsTransfer bool

	StripSize   int64 // the target directory's strip size
	StripeCount int   // its stripe count (datafiles per file)
	Servers     int   // I/O servers available; 0 = StripeCount
}

// Item is one piece of advice.
type Item struct {
	Topic  string
	Now    string // the setting now
	Advice string // what to do ("keep" when nothing)
	Effect string // expected effect: the analysis, then the thesis' figure
	Change bool   // the advice changes something
}

// Advice is the result for one Access.
type Advice struct {
	Access Access
	Elem   uint64 // element size
	Bytes  int64  // dataset size
	IOR    pattern.IOR
	// Now and Then are the requests as they land now and with the advice
	// (alignment, striping and transfer size) taken.
	Now, Then *pattern.Shifted
	Items     []Item
	// Layout is the pario layout advised for the target directory.
	Layout dist.Layout
}

// maxAnalysedSegments bounds the segments pattern.Analyze walks: the
// pattern repeats every segment, so a few show the class.
const maxAnalysedSegments = 64

// maxStrip is the largest strip advised (Lustre's limit, 4 GiB).
const maxStrip = 4 << 30

// minStrip is the granularity of an advised strip (Lustre's 64 KiB).
const minStrip = 64 << 10

// ErrInvalid is matched by every error about the description.
var ErrInvalid = errors.New("advise: invalid access description")

func errorf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}

// Advise checks the description and works out the advice.
func Advise(a Access) (*Advice, error) {
	if err := a.fill(); err != nil {
		return nil, err
	}
	elem, err := TypeSize(a.Type)
	if err != nil {
		return nil, errorf("%v", err)
	}
	total, ok := uint64(1), true
	for _, d := range a.Dims {
		hi, lo := bits.Mul64(total, d)
		ok = ok && hi == 0
		total = lo
	}
	hi, lo := bits.Mul64(total, elem)
	if !ok || hi != 0 || lo > math.MaxInt64/2 {
		return nil, errorf("dataset %s of %s is too large: advise takes datasets under 4 EiB (2^62 bytes)", FormatDims(a.Dims), a.Type)
	}
	ad := &Advice{Access: a, Elem: elem, Bytes: int64(lo)}
	if err := ad.checkChunk(); err != nil {
		return nil, err
	}
	if err := ad.checkEnd(a.StripSize); err != nil {
		return nil, err
	}
	p, err := ad.ior()
	if err != nil {
		return nil, err
	}
	ad.IOR = p

	now, err := ad.analyse(p, a.StripSize, a.StripeCount, ad.dataAddr())
	if err != nil {
		return nil, err
	}
	ad.Now = now
	strip, count, err := ad.advisedStriping()
	if err != nil {
		return nil, err
	}
	if err := ad.checkEnd(strip); err != nil {
		return nil, err
	}
	ad.Layout = dist.Layout{Dist: dist.SimpleStripe, Params: "strip_size=" + units.FormatSize(strip), Datafiles: count}
	then, err := ad.analyse(ad.advisedIOR(strip), strip, count, alignUp(a.header(), strip))
	if err != nil {
		return nil, err
	}
	ad.Then = then

	ad.Items = []Item{
		ad.alignmentItem(strip),
		ad.layoutItem(),
	}
	if ad.chunked() {
		ad.Items = append(ad.Items, ad.chunkItem())
	}
	ad.Items = append(ad.Items, ad.fillItem(), ad.modeItem(), ad.transferItem(strip), ad.stripingItem(strip, count))
	if a.Unlimited {
		ad.Items = append(ad.Items, ad.reductionItem())
	}
	return ad, nil
}

// fill applies defaults and checks every field.
func (a *Access) fill() error {
	switch a.API {
	case HDF5, NetCDF4:
	case "":
		a.API = HDF5
	default:
		return errorf("api %q: want hdf5 or netcdf4", a.API)
	}
	switch a.Pattern {
	case Disjoint, Interleaved:
	case "":
		a.Pattern = Disjoint
	default:
		return errorf("pattern %q: want disjoint or interleaved", a.Pattern)
	}
	switch a.Layout {
	case Contiguous, Chunked, "":
	default:
		return errorf("layout %q: want contiguous or chunked", a.Layout)
	}
	if a.Unlimited && a.Layout == Contiguous {
		return errorf("an unlimited dimension needs a chunked layout, not contiguous")
	}
	if a.Layout == "" {
		a.Layout = Contiguous
		if a.Unlimited || a.Chunk != nil {
			a.Layout = Chunked
		}
	}
	if a.Layout == Contiguous && a.Chunk != nil {
		return errorf("a chunk shape (%s) needs a chunked layout", FormatDims(a.Chunk))
	}
	if len(a.Dims) == 0 {
		return errorf("no dimensions given (--dims or --file)")
	}
	for i, d := range a.Dims {
		if d == 0 {
			return errorf("dimension %d has length 0", i)
		}
	}
	switch {
	case a.Ranks <= 0:
		return errorf("--ranks must be positive, got %d", a.Ranks)
	case a.Transfer <= 0:
		return errorf("--transfer must be positive, got %d", a.Transfer)
	case a.Block < 0:
		return errorf("--block must not be negative, got %d", a.Block)
	case a.Alignment <= 0:
		return errorf("--alignment must be at least 1 (1 = none, HDF5's default), got %d", a.Alignment)
	case a.Header < 0:
		return errorf("--header must not be negative, got %d", a.Header)
	case a.StripSize <= 0:
		return errorf("--strip-size must be positive, got %d", a.StripSize)
	case a.StripeCount <= 0:
		return errorf("--stripe-count must be positive, got %d", a.StripeCount)
	case a.Servers < 0:
		return errorf("--servers must not be negative, got %d", a.Servers)
	}
	if a.Servers == 0 {
		a.Servers = a.StripeCount
	}
	if a.StripeCount > a.Servers {
		return errorf("--stripe-count %d is more than the %d servers (--servers)", a.StripeCount, a.Servers)
	}
	if a.Pattern == Disjoint && a.Block != 0 {
		return errorf("--block is the turn size of the interleaved pattern; a disjoint rank writes its whole part")
	}
	if a.Block == 0 {
		a.Block = a.Transfer
		a.blockIsTransfer = true
	}
	return nil
}

func (a Access) header() int64 {
	if a.Header == 0 {
		return DefaultHeader
	}
	return a.Header
}

// checkEnd checks that the data ends inside a file (int64 offsets) where
// it starts now (after the header, aligned as the program asks) and where
// it starts aligned to strip; an error names the flag that moved it.
func (ad *Advice) checkEnd(strip int64) error {
	a := ad.Access
	last := int64(math.MaxInt64) - ad.Bytes // the latest start
	header := a.header()
	if header > last {
		if a.stored {
			return errorf("the data's address read from the file, %d, and its %d bytes end past the largest file offset (2^63-1)", header, ad.Bytes)
		}
		return errorf("--header %d: the dataset's %d bytes after it would end past the largest file offset (2^63-1)", header, ad.Bytes)
	}
	if a.API == HDF5 && !a.stored {
		if at, err := pattern.AlignUp(header, a.Alignment); err != nil || at > last {
			return errorf("--alignment %d: the dataset's %d bytes, aligned to it after a header of %d, would end past the largest file offset (2^63-1)", a.Alignment, ad.Bytes, header)
		}
	}
	if at, err := pattern.AlignUp(header, strip); err != nil || at > last {
		what := fmt.Sprintf("--header %d", header)
		if a.stored {
			what = fmt.Sprintf("the data's address read from the file, %d,", header)
		}
		return errorf("%s: the dataset's %d bytes, aligned to the strip (%d bytes), would end past the largest file offset (2^63-1)", what, ad.Bytes, strip)
	}
	return nil
}

func (ad *Advice) chunked() bool { return ad.Access.Layout == Chunked }

// checkChunk validates the chunk shape against the dataset.
func (ad *Advice) checkChunk() error {
	a := ad.Access
	if a.Chunk == nil {
		if a.Layout == Chunked && a.API == HDF5 {
			return errorf("HDF5 needs a chunk shape with a chunked layout (--chunk)")
		}
		return nil
	}
	if len(a.Chunk) != len(a.Dims) {
		return errorf("chunk %s has %d dimensions, the dataset %s has %d", FormatDims(a.Chunk), len(a.Chunk), FormatDims(a.Dims), len(a.Dims))
	}
	for i, c := range a.Chunk {
		if c > a.Dims[i] && !(i == 0 && a.Unlimited) {
			return errorf("chunk %s is larger than the dataset %s in dimension %d (%d > %d)", FormatDims(a.Chunk), FormatDims(a.Dims), i, c, a.Dims[i])
		}
	}
	if b := hdf5.ChunkBytes(a.Chunk, ad.elem()); b >= 4<<30 {
		return errorf("chunk %s is %d bytes; HDF5 chunks must be under 4 GiB", FormatDims(a.Chunk), b)
	}
	return nil
}

func (ad *Advice) elem() uint64 {
	if ad.Elem != 0 {
		return ad.Elem
	}
	e, _ := TypeSize(ad.Access.Type)
	return e
}

// ior is the program's pattern as IOR parameters: Block bytes per rank
// per segment, in rank order.
func (ad *Advice) ior() (pattern.IOR, error) {
	a := ad.Access
	n := int64(a.Ranks)
	elem := int64(ad.elem())
	var block, segs int64
	switch a.Pattern {
	case Disjoint:
		if (ad.Bytes/elem)%n != 0 {
			return pattern.IOR{}, errorf("the dataset's %d elements (%d bytes) do not split evenly over %d ranks", ad.Bytes/elem, ad.Bytes, a.Ranks)
		}
		block, segs = ad.Bytes/n, 1
	case Interleaved:
		if a.Block%elem != 0 {
			return pattern.IOR{}, errorf("a turn of %d bytes (--block) is not a whole number of %s elements (%d bytes each)", a.Block, a.Type, elem)
		}
		if ad.Bytes%(n*a.Block) != 0 {
			turn := "--block " + units.FormatSize(a.Block)
			if a.blockIsTransfer {
				turn = "--block (default: the transfer size, " + units.FormatSize(a.Block) + ")"
			}
			return pattern.IOR{}, errorf("the dataset's %d bytes are not a whole number of turns of %s x %s", ad.Bytes, plural(a.Ranks, "rank", "ranks"), turn)
		}
		block, segs = a.Block, ad.Bytes/(n*a.Block)
	}
	if a.Transfer%elem != 0 {
		return pattern.IOR{}, errorf("transfer size %d (--transfer) is not a whole number of %s elements (%d bytes each)", a.Transfer, a.Type, elem)
	}
	if block%a.Transfer != 0 {
		flag := "--transfer " + units.FormatSize(a.Transfer)
		if a.TransferDefault {
			flag = "--transfer (default " + units.FormatSize(a.Transfer) + ")"
		}
		return pattern.IOR{}, errorf("%s does not divide the %d bytes each rank writes per turn: try --transfer %s", flag, block, units.FormatSize(divisorUpTo(block, a.Transfer, elem)))
	}
	// The program moves whole elements, not IOR's 8-byte words.
	p := pattern.IOR{Block: block, Transfer: a.Transfer, Segments: segs, Tasks: a.Ranks, Word: elem}
	if err := p.Validate(); err != nil {
		return pattern.IOR{}, errorf("%v", err)
	}
	return p, nil
}

// divisorUpTo is a transfer size for a turn of block bytes: the largest
// whole number of elements that divides block and is at most want (elem
// itself when the search would take long).
func divisorUpTo(block, want, elem int64) int64 {
	words := block / elem
	// The fewest calls per turn that transfers of at most want bytes take.
	calls := max(1, (block+want-1)/want)
	for i := 0; i < 1<<16 && calls <= words; i, calls = i+1, calls+1 {
		if words%calls == 0 {
			return block / calls
		}
	}
	return elem
}

// dataAddr is where the data starts now: read from the file, or NetCDF-4
// (before 4.9's nc_set_alignment, the thesis' finding) ignores the
// alignment.
func (ad *Advice) dataAddr() int64 {
	if ad.Access.API == NetCDF4 || ad.Access.stored {
		return ad.Access.header()
	}
	return alignUp(ad.Access.header(), ad.Access.Alignment)
}

func alignUp(addr, align int64) int64 {
	v, err := pattern.AlignUp(addr, align)
	if err != nil {
		return addr // align and addr are checked positive before
	}
	return v
}

func (ad *Advice) analyse(p pattern.IOR, strip int64, count int, addr int64) (*pattern.Shifted, error) {
	p.Segments = min(p.Segments, maxAnalysedSegments)
	l := dist.Layout{Dist: dist.SimpleStripe, Params: "strip_size=" + units.FormatSize(strip), Datafiles: count}
	l, err := dist.ParseLayout(l.String())
	if err != nil {
		return nil, errorf("strip size %d: %v", strip, err)
	}
	d, err := l.Build(ad.Access.Servers)
	if err != nil {
		return nil, errorf("%v", err)
	}
	if calls := p.AggregateSize() / p.Transfer; calls > pattern.DefaultMaxTransfers {
		return nil, errorf("--transfer %s: %d transfers to follow, more than the analysis takes (%d): give a larger --transfer",
			units.FormatSize(p.Transfer), calls, pattern.DefaultMaxTransfers)
	}
	// Servers stays 0 (one per datafile): the class then counts the
	// servers the file is on, not idle ones.
	s, err := pattern.AnalyzeShifted(p, pattern.Config{Dist: d}, addr)
	if err != nil {
		return nil, errorf("%v", err)
	}
	return s, nil
}

// advisedStriping picks the stripe count (as many servers as ranks can
// use) and the strip: a strip one rank's turn fills exactly keeps each
// rank's requests on one server and whole; the strip now is kept when it
// does as well once the data is aligned.
//
// In the interleaved pattern rank r's turn i is strip i*ranks + r, on
// server (i*ranks + r) mod count: one server per rank only when the count
// divides the ranks. The largest such count is taken unless it leaves
// more than half the usable servers idle, where spreading over all of
// them (x-OST) moves more data than a few uncontended ones.
func (ad *Advice) advisedStriping() (int64, int, error) {
	a := ad.Access
	count := min(a.Ranks, a.Servers)
	if ad.IOR.Segments > 1 {
		d := count
		for a.Ranks%d != 0 {
			d--
		}
		if 2*d >= count {
			count = d
		}
	}
	cands := []int64{a.StripSize}
	if b := ad.IOR.Block; b%minStrip == 0 && b <= maxStrip && b != a.StripSize {
		cands = append(cands, b)
	}
	// Whole requests first (the thesis' straddling finding), then fewest
	// servers per rank, then fewest pieces.
	var best *pattern.Report
	var bestStrip int64
	for _, strip := range cands {
		s, err := ad.analyse(ad.IOR, strip, count, 0)
		if err != nil {
			return 0, 0, err
		}
		r := s.Actual
		if best == nil || cmp.Or(cmp.Compare(r.Straddling, best.Straddling), cmp.Compare(r.X, best.X), cmp.Compare(r.Pieces, best.Pieces)) < 0 {
			best, bestStrip = r, strip
		}
	}
	return bestStrip, count, nil
}

// advisedIOR is the pattern with the advised transfer size.
func (ad *Advice) advisedIOR(strip int64) pattern.IOR {
	p := ad.IOR
	if t := ad.advisedTransfer(strip); p.Block%t == 0 {
		p.Transfer = t
	}
	return p
}

// advisedTransfer: at least one strip and a multiple of it, as long as
// it divides the rank's turn.
func (ad *Advice) advisedTransfer(strip int64) int64 {
	t := ad.Access.Transfer
	if t%strip == 0 {
		return t
	}
	if want := (t/strip + 1) * strip; ad.IOR.Block%want == 0 {
		return want
	}
	return t
}

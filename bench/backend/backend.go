// Package backend is the contract between pario's IOR-compatible benchmark
// engine (package bench) and the storage it measures. A back end opens
// files and moves bytes at offsets; the engine decides the offsets, the
// timing and the verification.
//
// A new back end (HDF5 and NetCDF-4 come later, behind a build tag) is a
// Driver registered from an init function:
//
//	func init() { backend.Register(func() backend.Driver { return &driver{} }) }
//
// Its Options become command-line flags named "<api>.<option>" (lower
// case, e.g. --posix.odirect), bound to the driver's own settings; Open
// turns them and the test's Params into a Backend for one rank. The
// driver packages in this tree (posix, mmap, dummy, pario) are the
// examples; import them for their side effect, as cmd/pario does.
package backend

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pario/pario/units"
)

// Params describe the test to the back end before any file is opened:
// IOR's "transfer hints". Sizes are bytes.
type Params struct {
	Rank  int // this rank, 0 <= Rank < Tasks
	Tasks int // the number of ranks in the test

	FilePerProc   bool
	TransferSize  int64
	BlockSize     int64
	Segments      int64
	FsyncPerWrite bool // -Y: the engine calls Sync after every write
	Random        bool // -z: offsets are not sequential
	// Strided is --strided: a call may cover several ranges of the file
	// (see ExtentsIO).
	Strided bool

	// FileSize is the size each file has after a complete write phase
	// (data start offset included): what MMAP maps.
	FileSize int64
}

// Env is what a back end gets from the engine besides Params.
type Env struct {
	Params Params
	// Barrier synchronises all ranks of the test. A back end may call it
	// inside Create, collectively on every rank (as IOR's Lustre path
	// does: rank 0 creates a shared file, the others open it after a
	// barrier). Never nil.
	Barrier func(ctx context.Context) error
	// ClusterFile is the pario cluster file, for back ends that talk to a
	// pario cluster; "" elsewhere.
	ClusterFile string
	// OpTimeout bounds each call such a back end makes to a server,
	// dialling and retries included (the CLI's --op-timeout); 0 means the
	// back end's own default.
	OpTimeout time.Duration
	// Logger is for diagnostics (never nil).
	Logger *slog.Logger
}

// Backend is one rank's connection to the storage under test. Every method
// may be called again after an error.
type Backend interface {
	// Create opens name for writing, creating it if it does not exist
	// (the engine removes an old file beforehand unless told to keep it).
	// With a shared file every rank calls Create on the same name at
	// about the same time.
	Create(ctx context.Context, name string) (File, error)
	// Open opens an existing file for reading.
	Open(ctx context.Context, name string) (File, error)
	// Remove deletes name; a file that does not exist is not an error.
	Remove(ctx context.Context, name string) error
	// Size returns the size of name in bytes.
	Size(ctx context.Context, name string) (int64, error)
	// Close releases the back end (connections, mappings).
	Close() error
}

// File is an open file. WriteAt and ReadAt are the hot path: they must
// move exactly len(p) bytes or return an error (a short read at the end
// of the file returns io.EOF, as io.ReaderAt). They run under the context
// the file was opened with.
type File interface {
	io.WriterAt
	io.ReaderAt
	// Sync makes what was written durable (fsync, msync, pario's Sync).
	Sync(ctx context.Context) error
	// Close closes the file. It need not sync.
	Close(ctx context.Context) error
}

// CacheDropper is implemented by back ends that can drop a file from the
// client's page cache; the engine calls it, untimed, before a read phase
// when asked to (--posix.drop-cache).
type CacheDropper interface {
	DropCache(ctx context.Context, name string) error
}

// Checker is implemented by back ends that can tell, before a test
// starts, that name cannot be used (a missing directory, a wrong store
// path). The engine calls it on every rank before the first phase.
type Checker interface {
	Check(ctx context.Context, name string, write bool) error
}

// NoData is implemented by back ends that move no data (DUMMY): the
// engine then skips data verification and says so.
type NoData interface {
	MovesNoData() bool
}

// Describer is implemented by back ends with settings worth printing in
// the benchmark's header (a layout, O_DIRECT): key/value pairs in order.
type Describer interface {
	Describe() [][2]string
}

// Extent is one range of a file: Length bytes at Offset.
type Extent struct{ Offset, Length int64 }

// ExtentsIO is implemented by back ends whose API can move a call that
// covers several ranges of the file (--strided) as one call: a hyperslab
// selection for HDF5, a file view for MPI-IO, as the HDF5 thesis' own
// benchmarks did for transfers larger than a block. In a --strided run the
// engine then makes every call, contiguous or not, through it, so that
// ranks calling a collective API make the same calls; other back ends get
// one WriteAt or ReadAt per range (a back end with it says so in its
// Describe). p holds the ranges' bytes in order
// (len(p) is the sum of their lengths). A read that finds the end of the
// data before the last range's end returns io.EOF.
type ExtentsIO interface {
	WriteExtents(p []byte, ext []Extent) error
	ReadExtents(p []byte, ext []Extent) error
}

// StopTogether is implemented by back ends whose data calls may be
// collective (every rank must make as many: MPI-IO and HDF5 with -c, a
// file view, an extendible dataset). With a stonewalling deadline (-D)
// the engine asks it after each transfer whether to stop, passing whether
// this rank's clock says so; it answers for all ranks alike when the
// calls are collective (as IOR broadcasts rank 0's decision), else hit:
// ranks stopping on their own clocks would leave the others waiting in a
// collective call for ever.
type StopTogether interface {
	StopTogether(hit bool) (bool, error)
}

// Aborter is implemented by back ends whose calls are collectives of a
// library the engine cannot reach into (MPI-IO, HDF5 and NetCDF-4 over
// MPI): a rank that fails one can leave the others waiting inside it for
// ever (HDF5 1.10 returns from a failed write of fill values without the
// barrier the other ranks wait in), where the engine's own agreement on
// the failure never reaches them. When a rank has failed and the ranks
// have not agreed on it within the engine's grace, the engine calls
// Abort, which ends every rank of the job (MPI_Abort) and does not
// return.
type Aborter interface {
	Abort(code int)
}

// FSInfo is a file system's capacity, for the header's "FS" line.
type FSInfo struct {
	Total, Free   int64 // bytes
	Files, FreeFs int64 // inodes; 0 if unknown
}

// StatFSer is implemented by back ends that know the capacity of the
// storage holding name.
type StatFSer interface {
	StatFS(ctx context.Context, name string) (FSInfo, error)
}

// Driver is a registered back end: IOR's "API".
type Driver interface {
	// Name is the API name as -a takes it, upper case: "POSIX".
	Name() string
	// Summary is one line for the help text.
	Summary() string
	// Options lists the driver's settings, bound to this Driver value.
	Options() []Option
	// Validate checks the settings against the test (e.g. O_DIRECT needs
	// aligned transfers); errors name the option.
	Validate(p Params) error
	// Open creates one rank's Backend.
	Open(ctx context.Context, env Env) (Backend, error)
}

var (
	mu      sync.Mutex
	drivers = map[string]func() Driver{}
)

// Register adds a driver factory; it panics on a duplicate name. Each
// call of the factory must return a Driver with fresh settings.
func Register(factory func() Driver) {
	name := strings.ToUpper(factory().Name())
	mu.Lock()
	defer mu.Unlock()
	if _, dup := drivers[name]; dup {
		panic("backend: driver " + name + " registered twice")
	}
	drivers[name] = factory
}

// Names lists the registered API names, sorted.
func Names() []string {
	mu.Lock()
	defer mu.Unlock()
	names := make([]string, 0, len(drivers))
	for n := range drivers {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// New returns a fresh Driver for an API name (case does not matter). The
// error lists the valid names.
func New(name string) (Driver, error) {
	mu.Lock()
	f, ok := drivers[strings.ToUpper(name)]
	mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("unknown API %q (valid: %s)", name, strings.Join(Names(), ", "))
	}
	return f(), nil
}

// Option is one setting of a driver, shown as the flag --Name. Value
// satisfies the flag packages' Value interface (String, Set, Type).
type Option struct {
	Name  string // full flag name: "posix.odirect"
	Usage string
	Value Value
}

// Value is a settable option value.
type Value interface {
	String() string
	Set(string) error
	Type() string
}

// IsBool reports whether the option is a flag that takes no argument.
func (o Option) IsBool() bool { return o.Value.Type() == "bool" }

// BoolOption binds a boolean flag to p.
func BoolOption(p *bool, name, usage string) Option {
	return Option{Name: name, Usage: usage, Value: (*boolValue)(p)}
}

// StringOption binds a string to p.
func StringOption(p *string, name, usage string) Option {
	return Option{Name: name, Usage: usage, Value: (*stringValue)(p)}
}

// IntOption binds an integer to p.
func IntOption(p *int, name, usage string) Option {
	return Option{Name: name, Usage: usage, Value: (*intValue)(p)}
}

// SizeOption binds a positive byte count (units.ParseSize: 4k, 1m) to p.
func SizeOption(p *int64, name, usage string) Option {
	return Option{Name: name, Usage: usage, Value: units.SizeFlag(p)}
}

// MicrosOption binds a duration given in microseconds (IOR's
// --dummy.delay-* style) to p.
func MicrosOption(p *time.Duration, name, usage string) Option {
	return Option{Name: name, Usage: usage, Value: (*microsValue)(p)}
}

type boolValue bool

func (v *boolValue) String() string { return strconv.FormatBool(bool(*v)) }
func (v *boolValue) Type() string   { return "bool" }
func (v *boolValue) Set(s string) error {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return fmt.Errorf("want true or false, got %q", s)
	}
	*v = boolValue(b)
	return nil
}

type stringValue string

func (v *stringValue) String() string     { return string(*v) }
func (v *stringValue) Type() string       { return "string" }
func (v *stringValue) Set(s string) error { *v = stringValue(s); return nil }

type intValue int

func (v *intValue) String() string { return strconv.Itoa(int(*v)) }
func (v *intValue) Type() string   { return "int" }
func (v *intValue) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return fmt.Errorf("want a non-negative integer, got %q", s)
	}
	*v = intValue(n)
	return nil
}

type microsValue time.Duration

func (v *microsValue) String() string { return strconv.FormatInt(time.Duration(*v).Microseconds(), 10) }
func (v *microsValue) Type() string   { return "usec" }
func (v *microsValue) Set(s string) error {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > int64(time.Hour/time.Microsecond) {
		return fmt.Errorf("want a delay in microseconds (0 to 3600000000), got %q", s)
	}
	*v = microsValue(time.Duration(n) * time.Microsecond)
	return nil
}

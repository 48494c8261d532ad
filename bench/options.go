package bench

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/pario/pario/bench/backend"
	"github.com/pario/pario/pattern"
	"github.com/pario/pario/units"
)

// Options are one IOR test's parameters, named after IOR's. The zero value
// is not useful: start from DefaultOptions.
type Options struct {
	API          string // -a: POSIX, MMAP, DUMMY, PARIO, ...
	BlockSize    int64  // -b: contiguous bytes per rank per segment
	TransferSize int64  // -t: bytes per I/O call
	Segments     int64  // -s
	FilePerProc  bool   // -F
	NumTasks     int    // -N: ranks; 0 = what the launcher gives
	TestFile     string // -o

	Write      bool // -w
	Read       bool // -r
	CheckWrite bool // -W: untimed read-back and compare after writing
	CheckRead  bool // -R: untimed read-back and compare after the read phase
	KeepFile   bool // -k

	Repetitions    int  // -i
	InterTestDelay int  // -d: seconds before each write and read phase
	Fsync          bool // -e: fsync at the end of the write phase (timed)
	FsyncPerWrite  bool // -Y

	ReorderTasks      bool // -C
	TaskPerNodeOffset int  // -Q
	// ReorderShift overrides how many ranks one -Q step moves (IOR: 1 when
	// ranks are dealt to nodes round-robin, the ranks per node when they
	// are placed in blocks, so -C does nothing on a single node). 0 = IOR's rule.
	ReorderShift int

	RandomOffset bool  // -z
	RandomSeed   int64 // --random-offset-seed; -1 = drawn by rank 0 from the clock

	Deadline int  // -D: stonewall seconds (0 = none)
	WearOut  bool // -O stoneWallingWearOut=1
	// StoneWallStatusFile (-O stoneWallingStatusFile=F) carries the
	// transfers per rank of a stonewalled write to a later read-only run:
	// the write run (with stoneWallingWearOut) stores the count, the read
	// run reads only that many.
	StoneWallStatusFile string

	IntraTestBarriers bool  // -g: barriers between open, transfers and close (inside the window)
	QuitOnError       bool  // -q: stop after a verification pass that found wrong data
	UseExistingFile   bool  // -E: write into the existing test file instead of removing it first
	Signature         int64 // -G: seeds the written data (IOR's setTimeStampSignature)
	MaxMinutes        int   // -T: start no repetition after this many minutes (0 = no limit)

	DataStart int64 // --data-start: bytes before the data (unaligned container header)
	Strided   bool  // --strided: one call may cover many blocks (t need not divide b)

	Verbose       int    // -v (repeatable)
	SummaryFormat string // -O summaryFormat=default|JSON|CSV
	SummaryFile   string // -O summaryFile=F
	RankCSV       string // -O rankCSV=F: per-rank CSV with first-done/last-done rows
	IORRankCSV    string // -O saveRankPerformanceDetailsCSV=F: IOR's per-rank CSV
	RefNum        int    // -O refnum
}

// DefaultOptions are IOR's defaults: -a POSIX -b 1m -t 256k -s 1 -i 1 -Q 1
// -o testFile.
func DefaultOptions() Options {
	return Options{
		API:               "POSIX",
		BlockSize:         pattern.DefaultBlock,
		TransferSize:      pattern.DefaultTransfer,
		Segments:          pattern.DefaultSegments,
		TestFile:          "testFile",
		Repetitions:       1,
		TaskPerNodeOffset: pattern.DefaultTaskOffset,
		RandomSeed:        -1,
		SummaryFormat:     "default",
	}
}

// Output formats of -O summaryFormat.
const (
	FormatDefault = "default"
	FormatJSON    = "JSON"
	FormatCSV     = "CSV"
)

// directives maps IOR's -O keys (lower case) to setters.
var directives = map[string]func(o *Options, v string) error{
	"api":                     func(o *Options, v string) error { o.API = v; return nil },
	"blocksize":               sizeDirective(func(o *Options) *int64 { return &o.BlockSize }),
	"transfersize":            sizeDirective(func(o *Options) *int64 { return &o.TransferSize }),
	"segmentcount":            sizeDirective(func(o *Options) *int64 { return &o.Segments }),
	"fileperproc":             boolDirective(func(o *Options) *bool { return &o.FilePerProc }),
	"numtasks":                intDirective(func(o *Options) *int { return &o.NumTasks }),
	"testfile":                func(o *Options, v string) error { o.TestFile = v; return nil },
	"writefile":               boolDirective(func(o *Options) *bool { return &o.Write }),
	"readfile":                boolDirective(func(o *Options) *bool { return &o.Read }),
	"checkwrite":              boolDirective(func(o *Options) *bool { return &o.CheckWrite }),
	"checkread":               boolDirective(func(o *Options) *bool { return &o.CheckRead }),
	"keepfile":                boolDirective(func(o *Options) *bool { return &o.KeepFile }),
	"repetitions":             intDirective(func(o *Options) *int { return &o.Repetitions }),
	"intertestdelay":          intDirective(func(o *Options) *int { return &o.InterTestDelay }),
	"fsync":                   boolDirective(func(o *Options) *bool { return &o.Fsync }),
	"fsyncperwrite":           boolDirective(func(o *Options) *bool { return &o.FsyncPerWrite }),
	"reordertasks":            boolDirective(func(o *Options) *bool { return &o.ReorderTasks }),
	"reordertasksconstant":    boolDirective(func(o *Options) *bool { return &o.ReorderTasks }),
	"taskpernodeoffset":       intDirective(func(o *Options) *int { return &o.TaskPerNodeOffset }),
	"randomoffset":            boolDirective(func(o *Options) *bool { return &o.RandomOffset }),
	"deadlineforstonewalling": intDirective(func(o *Options) *int { return &o.Deadline }),
	"stonewallingwearout":     boolDirective(func(o *Options) *bool { return &o.WearOut }),
	"intratestbarriers":       boolDirective(func(o *Options) *bool { return &o.IntraTestBarriers }),
	"stonewallingstatusfile":  func(o *Options, v string) error { o.StoneWallStatusFile = v; return nil },
	"useexistingtestfile":     boolDirective(func(o *Options) *bool { return &o.UseExistingFile }),
	"maxtimeduration":         intDirective(func(o *Options) *int { return &o.MaxMinutes }),
	"settimestampsignature": func(o *Options, v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("want an integer, got %q", v)
		}
		o.Signature = n
		return nil
	},
	"verbose":                       intDirective(func(o *Options) *int { return &o.Verbose }),
	"refnum":                        intDirective(func(o *Options) *int { return &o.RefNum }),
	"summaryfile":                   func(o *Options, v string) error { o.SummaryFile = v; return nil },
	"saverankperformancedetailscsv": func(o *Options, v string) error { o.IORRankCSV = v; return nil },
	"rankcsv":                       func(o *Options, v string) error { o.RankCSV = v; return nil },
	"summaryformat": func(o *Options, v string) error {
		switch strings.ToLower(v) {
		case "default":
			o.SummaryFormat = FormatDefault
		case "json":
			o.SummaryFormat = FormatJSON
		case "csv":
			o.SummaryFormat = FormatCSV
		default:
			return fmt.Errorf("unknown summaryFormat %q (valid: default, JSON, CSV)", v)
		}
		return nil
	},
}

func sizeDirective(field func(*Options) *int64) func(*Options, string) error {
	return func(o *Options, v string) error {
		n, err := units.ParseSize(v, units.AllowZero)
		if err != nil {
			return err
		}
		*field(o) = n
		return nil
	}
}

func intDirective(field func(*Options) *int) func(*Options, string) error {
	return func(o *Options, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("want an integer, got %q", v)
		}
		*field(o) = n
		return nil
	}
}

func boolDirective(field func(*Options) *bool) func(*Options, string) error {
	return func(o *Options, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil {
			b, berr := strconv.ParseBool(v)
			if berr != nil {
				return fmt.Errorf("want 0 or 1, got %q", v)
			}
			*field(o) = b
			return nil
		}
		*field(o) = n != 0
		return nil
	}
}

// ApplyDirectives applies IOR's -O string: "key=value[,key=value...]",
// keys case-insensitive as in IOR (summaryFormat=JSON, summaryFile=F,
// stoneWallingWearOut=1, blockSize=4m, ...).
func (o *Options) ApplyDirectives(s string) error {
	if i := strings.IndexByte(s, '#'); i >= 0 {
		s = s[:i]
	}
	for _, d := range strings.Split(s, ",") {
		d = strings.TrimSpace(d)
		if d == "" {
			continue
		}
		k, v, ok := strings.Cut(d, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" || v == "" {
			return fmt.Errorf("-O %q: syntax error in directive %q (want key=value)", s, d)
		}
		set, known := directives[strings.ToLower(k)]
		if !known {
			return fmt.Errorf("-O: unrecognized parameter %q (known: %s)", k, knownDirectives())
		}
		if err := set(o, v); err != nil {
			return fmt.Errorf("-O %s: %w", k, err)
		}
	}
	return nil
}

func knownDirectives() string {
	names := []string{"api", "blockSize", "transferSize", "segmentCount", "filePerProc", "numTasks", "testFile",
		"writeFile", "readFile", "checkWrite", "checkRead", "keepFile", "repetitions", "interTestDelay", "fsync",
		"fsyncPerWrite", "reorderTasks", "taskPerNodeOffset", "randomOffset", "deadlineForStonewalling",
		"stoneWallingWearOut", "stoneWallingStatusFile", "intraTestBarriers", "quitOnError", "useExistingTestFile", "setTimeStampSignature",
		"maxTimeDuration", "verbose", "refnum", "summaryFormat", "summaryFile",
		"saveRankPerformanceDetailsCSV", "rankCSV"}
	return strings.Join(names, ", ")
}

// Normalize applies IOR's rule that a test with none of -w -r -W -R does
// both write and read.
func (o *Options) Normalize() {
	if !o.Write && !o.Read && !o.CheckWrite && !o.CheckRead {
		o.Write, o.Read = true, true
	}
}

// Pattern returns the access pattern of the options for tasks ranks.
// rankShift is IOR's -C shift from the rank placement (see
// pattern.IOR.RankShift); ReorderShift overrides it.
func (o *Options) Pattern(tasks, rankShift int) pattern.IOR {
	if o.ReorderShift > 0 {
		rankShift = o.ReorderShift
	}
	seed := o.RandomSeed
	if seed < 0 {
		seed = 0
	}
	return pattern.IOR{
		Block: o.BlockSize, Transfer: o.TransferSize, Segments: o.Segments, Tasks: tasks,
		FilePerProc: o.FilePerProc,
		Reorder:     o.ReorderTasks, TaskOffset: o.TaskPerNodeOffset, RankShift: min(rankShift, tasks),
		Random: o.RandomOffset, Seed: seed,
		DataStart: o.DataStart, Strided: o.Strided,
	}
}

// ErrUsage is matched by every error Validate returns: the options are
// wrong, not the storage.
var ErrUsage = errors.New("bench: invalid options")

type usageErr struct{ msg string }

func (e *usageErr) Error() string        { return e.msg }
func (e *usageErr) Is(target error) bool { return target == ErrUsage }

func usagef(format string, args ...any) error {
	return &usageErr{fmt.Sprintf(format, args...)}
}

// Validate checks the options for tasks ranks with IOR's rules and
// messages (ValidateTests) where IOR has them; the pattern's own checks
// (t divides b, -z with -C, ...) come from package pattern. Every error
// matches ErrUsage.
func (o *Options) Validate(tasks int) error {
	if _, err := backend.New(o.API); err != nil {
		return usagef("-a: %v", err)
	}
	switch {
	case o.Repetitions <= 0:
		return usagef("too few test repetitions (-i %d)", o.Repetitions)
	case o.InterTestDelay < 0:
		return usagef("inter-test delay must be nonnegative value (-d %d)", o.InterTestDelay)
	case o.Deadline < 0:
		return usagef("stonewalling deadline must be nonnegative (-D %d)", o.Deadline)
	case o.MaxMinutes < 0:
		return usagef("maximum time must be nonnegative (-T %d minutes)", o.MaxMinutes)
	case o.WearOut && o.Deadline == 0:
		return usagef("the stoneWallingWearOut is only sensible when setting a stonewall deadline with -D")
	case o.NumTasks < 0:
		return usagef("too few tasks for testing (-N %d)", o.NumTasks)
	case o.TestFile == "":
		return usagef("no test file name (-o)")
	case o.Segments <= 0:
		return usagef("segment count must be positive value (-s %d)", o.Segments)
	case o.BlockSize <= 0:
		return usagef("block size must be positive (-b %d)", o.BlockSize)
	case o.TransferSize <= 0:
		return usagef("test will not complete with zero transfer size (-t %d)", o.TransferSize)
	case o.CheckRead && !o.Write && o.Repetitions > 1:
		return usagef("-R without -w verifies a file written before, by repetition 0 of another run: use -i 1")
	case o.ReorderShift < 0:
		return usagef("--reorder-shift must be nonnegative (%d)", o.ReorderShift)
	}
	if o.RandomOffset && o.CheckRead && o.RandomSeed < 0 && !o.Write {
		return usagef("random offset with read check option requires to set the random seed (--random-offset-seed)")
	}
	if !o.Write && !o.Read && !o.CheckWrite && !o.CheckRead {
		return usagef("test must write, read, or check read/write file")
	}
	if o.CheckWrite && !o.Write {
		return usagef("-W checks what the write phase wrote: add -w")
	}
	if !o.Strided && o.TransferSize > o.BlockSize {
		return usagef("block size must not be smaller than transfer size (-b %d, -t %d); --strided lets one call cover many blocks", o.BlockSize, o.TransferSize)
	}
	if o.RandomOffset && o.Deadline > 0 && o.WearOut {
		return usagef("stoneWallingWearOut cannot be combined with -z")
	}
	p := o.Pattern(max(tasks, 1), 1)
	if err := p.Validate(); err != nil {
		return &usageErr{err.Error()}
	}
	return nil
}

package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/pario/pario/bench/backend"
	"github.com/pario/pario/pattern"
)

// Version is printed in the header, where IOR prints its own.
const Version = "pario-bench-1.0 (IOR-4.1 compatible)"

const (
	mebi = 1 << 20
	kibi = 1 << 10
	mega = 1e6
)

// Header is what the report says before the results: the run and the test.
type Header struct {
	Began       string // time.ANSIC-like, as IOR's CurrentTimeString
	CommandLine string
	Machine     string // "Linux host"
	Platform    string // "host(Linux)"
	StartTime   string
	Path        string
	FS          *backend.FSInfo
	API         string
	Describe    [][2]string // back end settings
	Options     Options
	Pattern     pattern.IOR
	Tasks       int
	Nodes       int
	TasksNode0  int
	NoData      bool // DUMMY: verification skipped
	Warnings    []string
}

// VerifyReport is the outcome of one verification pass (-W or -R).
type VerifyReport struct {
	Iter       int
	Pass       string // "write check" or "read check"
	Errors     int64  // transfers with wrong data, all ranks
	Mismatches []string
}

// reporter renders a run as it goes.
type reporter interface {
	header(h *Header)
	result(r Result)
	verify(v VerifyReport)
	remove(secs float64, iter int)
	summary(s []Summary, h *Header)
	finish(finished string) error
}

// ppDouble is IOR's PPDouble: left-justified in 10 columns, 6 decimals
// under 1, 2 under 3600, none above; negative numbers print as "-".
func ppDouble(w io.Writer, x float64, tail string) {
	if x < 0 || math.IsNaN(x) {
		fmt.Fprintf(w, "   -      %s", tail)
		return
	}
	prec := 0
	switch {
	case x < 1:
		prec = 6
	case x < 3600:
		prec = 2
	}
	fmt.Fprintf(w, "%-10.*f%s", prec, x, tail)
}

// textReporter writes IOR's default output.
type textReporter struct {
	w       io.Writer
	verbose int
	results []Result
	wide    bool // print the first-done / last-done lines
}

func (t *textReporter) header(h *Header) {
	w := t.w
	o := h.Options
	kv := func(k, v string) { fmt.Fprintf(w, "%-20s: %s\n", k, v) }
	fmt.Fprintf(w, "%s: MPI Coordinated Test of Parallel I/O\n", Version)
	kv("Began", h.Began)
	kv("Command line", h.CommandLine)
	kv("Machine", h.Machine)
	kv("TestID", "0")
	kv("StartTime", h.StartTime)
	kv("Path", h.Path)
	if h.FS != nil && h.FS.Total > 0 {
		used := 100 * float64(h.FS.Total-h.FS.Free) / float64(h.FS.Total)
		line := fmt.Sprintf("%.1f GiB   Used FS: %.1f%%", float64(h.FS.Total)/(1<<30), used)
		if h.FS.Files > 0 {
			line += fmt.Sprintf("   Inodes: %.1f Mi   Used Inodes: %.1f%%", float64(h.FS.Files)/(1<<20), 100*float64(h.FS.Files-h.FS.FreeFs)/float64(h.FS.Files))
		}
		kv("FS", line)
	}
	for _, warn := range h.Warnings {
		fmt.Fprintf(w, "WARNING: %s\n", warn)
	}
	fmt.Fprintf(w, "\nOptions: \n")
	kv("api", h.API)
	kv("apiVersion", "")
	for _, d := range h.Describe {
		kv(d[0], d[1])
	}
	kv("test filename", o.TestFile)
	kv("access", map[bool]string{true: "file-per-process", false: "single-shared-file"}[o.FilePerProc])
	kv("type", "independent")
	kv("segments", strconv.FormatInt(o.Segments, 10))
	kv("ordering in a file", map[bool]string{true: "random", false: "sequential"}[o.RandomOffset])
	if o.ReorderTasks {
		kv("ordering inter file", "constant task offset")
		kv("task offset", strconv.Itoa(o.TaskPerNodeOffset))
	} else {
		kv("ordering inter file", "no tasks offsets")
	}
	kv("nodes", strconv.Itoa(h.Nodes))
	kv("tasks", strconv.Itoa(h.Tasks))
	kv("clients per node", strconv.Itoa(h.TasksNode0))
	kv("repetitions", strconv.Itoa(o.Repetitions))
	kv("xfersize", humanReadable(o.TransferSize))
	kv("blocksize", humanReadable(o.BlockSize))
	kv("aggregate filesize", humanReadable(h.Pattern.AggregateSize()))
	if o.DataStart > 0 {
		kv("data start", humanReadable(o.DataStart))
	}
	if o.Strided {
		kv("strided", "1")
	}
	if o.Verbose > 0 {
		kv("verbose", strconv.Itoa(o.Verbose))
	}
	if o.Deadline > 0 {
		kv("stonewallingTime", strconv.Itoa(o.Deadline))
		kv("stoneWallingWearOut", b2s(o.WearOut))
	}
	if h.NoData && (o.CheckWrite || o.CheckRead) {
		kv("verification", "skipped: "+h.API+" moves no data")
	}
	fmt.Fprintf(w, "\nResults: \n\n")
	fmt.Fprintf(w, "access    bw(MiB/s)  IOPS       Latency(s)  block(KiB) xfer(KiB)  open(s)    wr/rd(s)   close(s)   total(s)   iter\n")
	fmt.Fprintf(w, "------    ---------  ----       ----------  ---------- ---------  --------   --------   --------   --------   ----\n")
}

func b2s(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// humanReadable is IOR's HumanReadable with BASE_TWO. It stays apart from
// units.FormatBytes on purpose: scripts that read IOR's header expect IOR's
// two decimals and "bytes".
func humanReadable(n int64) string {
	switch {
	case n >= 1<<30:
		if n%(1<<30) == 0 {
			return fmt.Sprintf("%d GiB", n>>30)
		}
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		if n%(1<<20) == 0 {
			return fmt.Sprintf("%d MiB", n>>20)
		}
		return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		if n%(1<<10) == 0 {
			return fmt.Sprintf("%d KiB", n>>10)
		}
		return fmt.Sprintf("%.2f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

func (t *textReporter) result(r Result) {
	t.results = append(t.results, r)
	w := t.w
	fmt.Fprintf(w, "%-10s", r.Access)
	ppDouble(w, r.BW/mebi, " ")
	ppDouble(w, r.IOPS, " ")
	ppDouble(w, r.Latency, "  ")
	ppDouble(w, float64(r.Block)/kibi, " ")
	ppDouble(w, float64(r.Xfer)/kibi, " ")
	ppDouble(w, r.Open, " ")
	ppDouble(w, r.WrRd, " ")
	ppDouble(w, r.Close, " ")
	ppDouble(w, r.Total, " ")
	fmt.Fprintf(w, "%-4d\n", r.Iter)
	if t.wide {
		fmt.Fprintf(w, "          first done: rank %d at %.3fs, %.1f MiB/s, %.0f IOPS; last done: rank %d at %.3fs, %.1f MiB/s\n",
			r.FirstDone.Rank, r.FirstDone.Elapsed, r.FirstDone.BW/mebi, r.FirstDone.IOPS,
			r.LastDone.Rank, r.LastDone.Elapsed, r.LastDone.BW/mebi)
	}
}

func (t *textReporter) verify(v VerifyReport) {
	if v.Errors == 0 {
		if t.verbose > 0 || t.wide {
			fmt.Fprintf(t.w, "%-10s%s of iteration %d: every byte as written\n", "verify", v.Pass, v.Iter)
		}
		return
	}
	fmt.Fprintf(t.w, "WARNING: Incorrect data on %s (%d errors found).\n", v.Pass, v.Errors)
	for _, m := range v.Mismatches {
		fmt.Fprintf(t.w, "  %s\n", m)
	}
}

func (t *textReporter) remove(secs float64, iter int) {
	if t.verbose < 1 {
		return
	}
	fmt.Fprintf(t.w, "remove    -          -          -           -          -          -          -          -          ")
	ppDouble(t.w, secs, " ")
	fmt.Fprintf(t.w, "%-4d\n", iter)
}

func (t *textReporter) summary(sums []Summary, h *Header) {
	w := t.w
	o := h.Options
	if t.verbose > 0 {
		for _, s := range sums {
			fmt.Fprintf(w, "Max %-6s %.2f MiB/sec (%.2f MB/sec)\n", strings.ToUpper(s.Operation[:1])+s.Operation[1:]+":", s.BWMax/mebi, s.BWMax/mega)
		}
	}
	fmt.Fprintf(w, "\nSummary of all tests:")
	fmt.Fprintf(w, "\n%-9s %10s %10s %10s %10s %10s %10s %10s %10s %10s %10s %13s",
		"Operation", "Max(MiB)", "Min(MiB)", "Mean(MiB)", "StdDev",
		"Max(OPs)", "Min(OPs)", "Mean(OPs)", "StdDev",
		"Mean(s)", "Stonewall(s)", "Stonewall(MiB)")
	fmt.Fprintf(w, " Test# #Tasks tPN reps fPP reord reordoff reordrand seed segcnt ")
	fmt.Fprintf(w, "%8s %8s %9s %5s", " blksiz", "xsize", "aggs(MiB)", "API")
	fmt.Fprintf(w, " RefNum\n")
	for _, s := range sums {
		fmt.Fprintf(w, "%-9s ", s.Operation)
		for _, v := range []float64{s.BWMax / mebi, s.BWMin / mebi, s.BWMean / mebi, s.BWStd / mebi, s.OPsMax, s.OPsMin, s.OPsMean, s.OPsSD} {
			fmt.Fprintf(w, "%10.2f ", v)
		}
		fmt.Fprintf(w, "%10.5f ", s.MeanTime)
		fmt.Fprintf(w, "%10s ", "NA")
		fmt.Fprintf(w, "%13s ", "NA")
		fmt.Fprintf(w, "%5d ", 0)
		fmt.Fprintf(w, "%6d ", h.Tasks)
		fmt.Fprintf(w, "%3d ", h.TasksNode0)
		fmt.Fprintf(w, "%4d ", o.Repetitions)
		fmt.Fprintf(w, "%3d ", btoi(o.FilePerProc))
		fmt.Fprintf(w, "%5d ", btoi(o.ReorderTasks))
		fmt.Fprintf(w, "%8d ", o.TaskPerNodeOffset)
		fmt.Fprintf(w, "%9d ", 0)
		fmt.Fprintf(w, "%4d ", 0)
		fmt.Fprintf(w, "%6d ", o.Segments)
		fmt.Fprintf(w, "%8d ", o.BlockSize)
		fmt.Fprintf(w, "%8d ", o.TransferSize)
		fmt.Fprintf(w, "%9.1f ", float64(s.XSize)/mebi)
		fmt.Fprintf(w, "%3s ", h.API)
		fmt.Fprintf(w, "%6d", o.RefNum)
		fmt.Fprintf(w, "\n")
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (t *textReporter) finish(finished string) error {
	fmt.Fprintf(t.w, "%-20s: %s\n", "Finished", finished)
	return nil
}

// csvReporter writes IOR's CSV format: one line per phase.
type csvReporter struct{ w io.Writer }

func (c *csvReporter) header(*Header) {
	fmt.Fprintf(c.w, "access,bw(MiB/s),IOPS,Latency,block(KiB),xfer(KiB),open(s),wr/rd(s),close(s),total(s),numTasks,iter\n")
}

func (c *csvReporter) result(r Result) {
	fmt.Fprintf(c.w, "%s,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%d,%d\n", r.Access, r.BW/mebi, r.IOPS, r.Latency,
		float64(r.Block)/kibi, float64(r.Xfer)/kibi, r.Open, r.WrRd, r.Close, r.Total, len(r.Ranks), r.Iter)
}

func (c *csvReporter) verify(VerifyReport)        {}
func (c *csvReporter) remove(float64, int)        {}
func (c *csvReporter) summary([]Summary, *Header) {}
func (c *csvReporter) finish(string) error        { return nil }

// JSON output: IOR's keys, made with encoding/json so it is valid JSON.

type jsonDone struct {
	Rank    int     `json:"rank"`
	Elapsed float64 `json:"elapsed"`
	MiB     float64 `json:"MiB"`
	BwMiB   float64 `json:"bwMiB"`
	IOPS    float64 `json:"iops"`
}

type jsonResult struct {
	Access    string    `json:"access"`
	BwMiB     *float64  `json:"bwMiB,omitempty"`
	BlockKiB  *float64  `json:"blockKiB,omitempty"`
	XferKiB   *float64  `json:"xferKiB,omitempty"`
	IOPS      *float64  `json:"iops,omitempty"`
	Latency   *float64  `json:"latency,omitempty"`
	OpenTime  *float64  `json:"openTime,omitempty"`
	WrRdTime  *float64  `json:"wrRdTime,omitempty"`
	CloseTime *float64  `json:"closeTime,omitempty"`
	TotalTime float64   `json:"totalTime"`
	Iter      int       `json:"iter"`
	AggBytes  int64     `json:"aggBytes,omitempty"`
	Transfers int64     `json:"transfers,omitempty"`
	FirstDone *jsonDone `json:"firstDone,omitempty"`
	LastDone  *jsonDone `json:"lastDone,omitempty"`
}

type jsonParameters struct {
	TestID               int    `json:"testID"`
	Refnum               int    `json:"refnum"`
	API                  string `json:"api"`
	Platform             string `json:"platform"`
	TestFileName         string `json:"testFileName"`
	DeadlineForStonewall int    `json:"deadlineForStonewall"`
	StoneWallingWearOut  int    `json:"stoneWallingWearOut"`
	Nodes                int    `json:"nodes"`
	TasksPerNode         int    `json:"tasksPerNode"`
	Repetitions          int    `json:"repetitions"`
	InterTestDelay       int    `json:"interTestDelay"`
	Fsync                int    `json:"fsync"`
	FsyncPerWrite        int    `json:"fsyncperwrite"`
	ReadFile             int    `json:"readFile"`
	WriteFile            int    `json:"writeFile"`
	FilePerProc          int    `json:"filePerProc"`
	ReorderTasks         int    `json:"reorderTasks"`
	RandomOffset         int    `json:"randomOffset"`
	CheckWrite           int    `json:"checkWrite"`
	CheckRead            int    `json:"checkRead"`
	KeepFile             int    `json:"keepFile"`
	Verbose              int    `json:"verbose"`
	SegmentCount         int64  `json:"segmentCount"`
	TransferSize         int64  `json:"transferSize"`
	BlockSize            int64  `json:"blockSize"`
	DataStart            int64  `json:"dataStart,omitempty"`
	Strided              int    `json:"strided,omitempty"`
}

type jsonOptions struct {
	API               string            `json:"api"`
	APIVersion        string            `json:"apiVersion"`
	TestFilename      string            `json:"test filename"`
	Access            string            `json:"access"`
	Type              string            `json:"type"`
	Segments          int64             `json:"segments"`
	OrderingInAFile   string            `json:"ordering in a file"`
	OrderingInterFile string            `json:"ordering inter file"`
	Nodes             int               `json:"nodes"`
	Tasks             int               `json:"tasks"`
	ClientsPerNode    int               `json:"clients per node"`
	Repetitions       int               `json:"repetitions"`
	Xfersize          string            `json:"xfersize"`
	Blocksize         string            `json:"blocksize"`
	AggregateFilesize string            `json:"aggregate filesize"`
	Backend           map[string]string `json:"backend,omitempty"`
}

type jsonTest struct {
	TestID       int            `json:"TestID"`
	StartTime    string         `json:"StartTime"`
	Path         string         `json:"Path"`
	Capacity     string         `json:"Capacity,omitempty"`
	UsedCapacity string         `json:"Used Capacity,omitempty"`
	Parameters   jsonParameters `json:"Parameters"`
	Options      jsonOptions    `json:"Options"`
	Results      []jsonResult   `json:"Results"`
}

type jsonSummary struct {
	Operation              string  `json:"operation"`
	API                    string  `json:"API"`
	TestID                 int     `json:"TestID"`
	ReferenceNumber        int     `json:"ReferenceNumber"`
	SegmentCount           int64   `json:"segmentCount"`
	BlockSize              int64   `json:"blockSize"`
	TransferSize           int64   `json:"transferSize"`
	NumTasks               int     `json:"numTasks"`
	TasksPerNode           int     `json:"tasksPerNode"`
	Repetitions            int     `json:"repetitions"`
	FilePerProc            int     `json:"filePerProc"`
	ReorderTasks           int     `json:"reorderTasks"`
	TaskPerNodeOffset      int     `json:"taskPerNodeOffset"`
	ReorderTasksRandom     int     `json:"reorderTasksRandom"`
	ReorderTasksRandomSeed int     `json:"reorderTasksRandomSeed"`
	BwMaxMIB               float64 `json:"bwMaxMIB"`
	BwMinMIB               float64 `json:"bwMinMIB"`
	BwMeanMIB              float64 `json:"bwMeanMIB"`
	BwStdMIB               float64 `json:"bwStdMIB"`
	OPsMax                 float64 `json:"OPsMax"`
	OPsMin                 float64 `json:"OPsMin"`
	OPsMean                float64 `json:"OPsMean"`
	OPsSD                  float64 `json:"OPsSD"`
	MeanTime               float64 `json:"MeanTime"`
	XsizeMiB               float64 `json:"xsizeMiB"`
}

type jsonVerify struct {
	Iter       int      `json:"iter"`
	Pass       string   `json:"pass"`
	Errors     int64    `json:"errors"`
	Mismatches []string `json:"mismatches,omitempty"`
}

type jsonDoc struct {
	Version      string        `json:"Version"`
	Began        string        `json:"Began"`
	CommandLine  string        `json:"Command line"`
	Machine      string        `json:"Machine"`
	Tests        []jsonTest    `json:"tests"`
	Summary      []jsonSummary `json:"summary"`
	Verification []jsonVerify  `json:"verification,omitempty"`
	Finished     string        `json:"Finished"`
}

type jsonReporter struct {
	w       io.Writer
	verbose int
	doc     jsonDoc
	h       *Header
}

func fp(v float64) *float64 { return &v }

// r4 and r6 round to 4 decimals (rates and sizes, as IOR prints them) and
// to 6 (seconds: microseconds), so the JSON carries no float noise.
func r4(v float64) float64 { return math.Round(v*1e4) / 1e4 }
func r6(v float64) float64 { return math.Round(v*1e6) / 1e6 }

func (j *jsonReporter) header(h *Header) {
	j.h = h
	o := h.Options
	j.doc = jsonDoc{Version: Version, Began: h.Began, CommandLine: h.CommandLine, Machine: h.Machine}
	t := jsonTest{TestID: 0, StartTime: h.StartTime, Path: h.Path, Results: []jsonResult{}}
	if h.FS != nil && h.FS.Total > 0 {
		t.Capacity = fmt.Sprintf("%.1f GiB", float64(h.FS.Total)/(1<<30))
		t.UsedCapacity = fmt.Sprintf("%.1f%%", 100*float64(h.FS.Total-h.FS.Free)/float64(h.FS.Total))
	}
	t.Parameters = jsonParameters{
		Refnum: o.RefNum, API: h.API, Platform: h.Platform, TestFileName: o.TestFile,
		DeadlineForStonewall: o.Deadline, StoneWallingWearOut: btoi(o.WearOut), Nodes: h.Nodes, TasksPerNode: h.TasksNode0,
		Repetitions: o.Repetitions, InterTestDelay: o.InterTestDelay, Fsync: btoi(o.Fsync), FsyncPerWrite: btoi(o.FsyncPerWrite),
		ReadFile: btoi(o.Read), WriteFile: btoi(o.Write), FilePerProc: btoi(o.FilePerProc), ReorderTasks: btoi(o.ReorderTasks),
		RandomOffset: btoi(o.RandomOffset), CheckWrite: btoi(o.CheckWrite), CheckRead: btoi(o.CheckRead), KeepFile: btoi(o.KeepFile),
		Verbose: o.Verbose, SegmentCount: o.Segments, TransferSize: o.TransferSize, BlockSize: o.BlockSize,
		DataStart: o.DataStart, Strided: btoi(o.Strided),
	}
	t.Options = jsonOptions{
		API: h.API, TestFilename: o.TestFile, Access: map[bool]string{true: "file-per-process", false: "single-shared-file"}[o.FilePerProc],
		Type: "independent", Segments: o.Segments, OrderingInAFile: map[bool]string{true: "random", false: "sequential"}[o.RandomOffset],
		OrderingInterFile: map[bool]string{true: "constant task offset", false: "no tasks offsets"}[o.ReorderTasks],
		Nodes:             h.Nodes, Tasks: h.Tasks, ClientsPerNode: h.TasksNode0, Repetitions: o.Repetitions,
		Xfersize: humanReadable(o.TransferSize), Blocksize: humanReadable(o.BlockSize), AggregateFilesize: humanReadable(h.Pattern.AggregateSize()),
	}
	if len(h.Describe) > 0 {
		t.Options.Backend = map[string]string{}
		for _, d := range h.Describe {
			t.Options.Backend[d[0]] = d[1]
		}
	}
	j.doc.Tests = []jsonTest{t}
}

func done(d Done) *jsonDone {
	return &jsonDone{Rank: d.Rank, Elapsed: r6(d.Elapsed), MiB: r4(float64(d.Bytes) / mebi), BwMiB: r4(d.BW / mebi), IOPS: r4(d.IOPS)}
}

func (j *jsonReporter) result(r Result) {
	jr := jsonResult{
		Access: r.Access, BwMiB: fp(r4(r.BW / mebi)), BlockKiB: fp(r4(float64(r.Block) / kibi)), XferKiB: fp(r4(float64(r.Xfer) / kibi)),
		IOPS: fp(r4(r.IOPS)), Latency: fp(r6(r.Latency)), OpenTime: fp(r6(r.Open)), WrRdTime: fp(r6(r.WrRd)), CloseTime: fp(r6(r.Close)),
		TotalTime: r6(r.Total), Iter: r.Iter, AggBytes: r.AggBytes, Transfers: r.Transfers,
		FirstDone: done(r.FirstDone), LastDone: done(r.LastDone),
	}
	j.doc.Tests[0].Results = append(j.doc.Tests[0].Results, jr)
}

func (j *jsonReporter) verify(v VerifyReport) {
	j.doc.Verification = append(j.doc.Verification, jsonVerify(v))
}

func (j *jsonReporter) remove(secs float64, iter int) {
	if j.verbose < 1 {
		return
	}
	j.doc.Tests[0].Results = append(j.doc.Tests[0].Results, jsonResult{Access: "remove", TotalTime: r6(secs), Iter: iter})
}

func (j *jsonReporter) summary(sums []Summary, h *Header) {
	o := h.Options
	j.doc.Summary = []jsonSummary{}
	for _, s := range sums {
		j.doc.Summary = append(j.doc.Summary, jsonSummary{
			Operation: s.Operation, API: h.API, ReferenceNumber: o.RefNum, SegmentCount: o.Segments, BlockSize: o.BlockSize,
			TransferSize: o.TransferSize, NumTasks: h.Tasks, TasksPerNode: h.TasksNode0, Repetitions: o.Repetitions,
			FilePerProc: btoi(o.FilePerProc), ReorderTasks: btoi(o.ReorderTasks), TaskPerNodeOffset: o.TaskPerNodeOffset,
			BwMaxMIB: r4(s.BWMax / mebi), BwMinMIB: r4(s.BWMin / mebi), BwMeanMIB: r4(s.BWMean / mebi), BwStdMIB: r4(s.BWStd / mebi),
			OPsMax: r4(s.OPsMax), OPsMin: r4(s.OPsMin), OPsMean: r4(s.OPsMean), OPsSD: r4(s.OPsSD), MeanTime: r6(s.MeanTime),
			XsizeMiB: r4(float64(s.XSize) / mebi),
		})
	}
}

func (j *jsonReporter) finish(finished string) error {
	j.doc.Finished = finished
	enc := json.NewEncoder(j.w)
	enc.SetIndent("", "  ")
	return enc.Encode(&j.doc)
}

// multiReporter sends everything to several reporters.
type multiReporter []reporter

func (m multiReporter) header(h *Header) {
	for _, r := range m {
		r.header(h)
	}
}
func (m multiReporter) result(x Result) {
	for _, r := range m {
		r.result(x)
	}
}
func (m multiReporter) verify(v VerifyReport) {
	for _, r := range m {
		r.verify(v)
	}
}
func (m multiReporter) remove(s float64, i int) {
	for _, r := range m {
		r.remove(s, i)
	}
}
func (m multiReporter) summary(s []Summary, h *Header) {
	for _, r := range m {
		r.summary(s, h)
	}
}
func (m multiReporter) finish(f string) error {
	var err error
	for _, r := range m {
		if e := r.finish(f); e != nil && err == nil {
			err = e
		}
	}
	return err
}

// rankCSV writes the per-rank CSV: one row per rank and phase, and two
// rows per phase with the elbencho-style figures of the whole test when
// the first and the last rank finished (rank "first-done" / "last-done").
type rankCSV struct{ w io.Writer }

func (c *rankCSV) start() {
	fmt.Fprintln(c.w, "iter,access,rank,open_s,io_s,close_s,total_s,done_s,bytes,transfers,MiBps,IOPS,latency_s")
}

func (c *rankCSV) result(r Result) {
	start := math.Inf(1)
	for _, rec := range r.Ranks {
		start = min(start, rec.T[OpenStart])
	}
	for _, rec := range r.Ranks {
		total := rec.T[CloseStop] - rec.T[OpenStart]
		io := rec.T[IOStop] - rec.T[IOStart]
		lat := 0.0
		if rec.Transfers > 0 {
			lat = io / float64(rec.Transfers)
		}
		fmt.Fprintf(c.w, "%d,%s,%d,%.6f,%.6f,%.6f,%.6f,%.6f,%d,%d,%.2f,%.2f,%.9f\n", r.Iter, r.Access, rec.Rank,
			rec.T[OpenStop]-rec.T[OpenStart], io, rec.T[CloseStop]-rec.T[CloseStart], total, rec.T[CloseStop]-start,
			rec.Bytes, rec.Transfers, rate(float64(rec.Bytes), total)/mebi, rate(float64(rec.Transfers), io), lat)
	}
	for _, d := range []struct {
		name string
		d    Done
	}{{"first-done", r.FirstDone}, {"last-done", r.LastDone}} {
		fmt.Fprintf(c.w, "%d,%s,%s,,,,,%.6f,%d,%d,%.2f,%.2f,\n", r.Iter, r.Access, d.name, d.d.Elapsed, d.d.Bytes, d.d.Transfers, d.d.BW/mebi, d.d.IOPS)
	}
}

// iorRankCSV writes IOR's saveRankPerformanceDetailsCSV format.
type iorRankCSV struct{ w io.Writer }

func (c *iorRankCSV) start() {
	fmt.Fprintln(c.w, "access,rank,runtime-with-openclose,runtime,throughput-withopenclose,throughput")
}

func (c *iorRankCSV) result(r Result) {
	per := float64(r.AggBytes) / float64(len(r.Ranks))
	for _, rec := range r.Ranks {
		total := rec.T[CloseStop] - rec.T[OpenStart]
		io := rec.T[IOStop] - rec.T[IOStart]
		fmt.Fprintf(c.w, "%s,%d,%.10e,%.10e,%.10e,%.10e\n", r.Access, rec.Rank, total, io, rate(per, total), rate(per, io))
	}
}

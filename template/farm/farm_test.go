package farm

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pario/pario/internal/testenv"
	"github.com/pario/pario/rank"
	"github.com/pario/pario/template"
	"github.com/pario/pario/template/annot"
	"github.com/pario/pario/template/seg"
)

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// fasta is n records of varying length, deterministic.
func fasta(n int) []byte {
	var b bytes.Buffer
	for i := range n {
		fmt.Fprintf(&b, ">q%d protein %d\n", i, i*7%13)
		for l := range 1 + i*5%4 {
			b.WriteString(strings.Repeat(string(rune('a'+(i+l)%26)), 10+(i*31+l*17)%70))
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

func records(t *testing.T, data []byte) []string {
	t.Helper()
	segs, err := seg.All(seg.FASTA, bytes.NewReader(data), 0, int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range segs {
		out = append(out, string(data[s.Base:s.Base+s.Extent]))
	}
	return out
}

func parse(t *testing.T, src string) *annot.File {
	t.Helper()
	af, err := annot.Parse("io.ann", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return af
}

// sequential is one run of argv over the whole input: what an ordered
// farm must reproduce byte for byte.
func sequential(t *testing.T, argv []string, input string) []byte {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	in, err := os.Open(input)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	cmd.Stdin = in
	cmd.Env = append(os.Environ(), "PARIO_FARM_SEGMENT=", "PARIO_FARM_RANK=")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("sequential %v: %v", argv, err)
	}
	return out
}

type farmRun struct {
	n           int
	annotations string
	argv        []string
	block       int64
	group       int
}

// run runs a farm on goroutine ranks (real rendezvous and TCP) and
// returns every rank's result and error.
func (fr farmRun) run(t *testing.T, input, output string) ([]Result, []error) {
	t.Helper()
	af := parse(t, fr.annotations)
	res := make([]Result, fr.n)
	errs := make([]error, fr.n)
	var mu sync.Mutex
	err := rank.RunLocal(testCtx(t), fr.n, func(ctx context.Context, c *rank.Comm) error {
		r, err := Run(ctx, Config{Comm: c, Annotations: af, In: input, Out: output, InFS: Local{}, OutFS: Local{},
			Argv: fr.argv, Block: fr.block, Group: fr.group})
		mu.Lock()
		res[c.Rank()], errs[c.Rank()] = r, err
		mu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return res, errs
}

func (fr farmRun) mustRun(t *testing.T, input, output string) Result {
	t.Helper()
	res, errs := fr.run(t, input, output)
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for r := range res {
		if !slices.Equal(res[r].Outputs, res[0].Outputs) || res[r].Segments != res[0].Segments {
			t.Fatalf("rank %d's result %+v differs from rank 0's %+v", r, res[r], res[0])
		}
	}
	return res[0]
}

func concat(t *testing.T, names []string) []byte {
	t.Helper()
	var b []byte
	for _, n := range names {
		p, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		b = append(b, p...)
	}
	return b
}

// noTemps fails if a farm's temporary output is left in dir.
func noTemps(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.Contains(e.Name(), ".farm-") {
			t.Errorf("temporary output %s left behind", e.Name())
		}
	}
}

const ordered = `in  NEWSPAPER ro wo b farm=FASTA
out NEWSPAPER rc wo b farm=0
`

// Higher ranks are faster, so that output placed as it comes would not
// be in order by chance.
const slowLowRanks = `sleep 0.0$((5 - PARIO_FARM_RANK % 5)); `

func TestOrderedMatchesSequential(t *testing.T) {
	dir := t.TempDir()
	input := filepath.Join(dir, "q.fa")
	if err := os.WriteFile(input, fasta(120), 0o644); err != nil {
		t.Fatal(err)
	}
	tools := map[string][]string{
		"tr":   {"tr", "a-z", "A-Z"},
		"awk":  {"awk", `/^>/ {print substr($1, 2)} !/^>/ {print length($0), toupper(substr($0, 1, 3))}`},
		"slow": {"sh", "-c", slowLowRanks + "tr a-z A-Z"},
	}
	for _, tc := range []struct {
		tool         string
		n, group     int
		block        int64
		wantSegments int
	}{
		{tool: "tr", n: 1},
		{tool: "tr", n: 4, block: 1, wantSegments: 120}, // one record a run
		{tool: "awk", n: 3},
		{tool: "awk", n: 4, block: 1, wantSegments: 120},
		{tool: "slow", n: 4, block: 500},
		{tool: "slow", n: 4, group: 2, block: 300},
		{tool: "tr", n: 5, group: 2},
	} {
		name := fmt.Sprintf("%s/N%d/group%d/block%d", tc.tool, tc.n, tc.group, tc.block)
		t.Run(name, func(t *testing.T) {
			argv := tools[tc.tool]
			out := filepath.Join(t.TempDir(), "hits.txt")
			res := farmRun{n: tc.n, annotations: ordered, argv: argv, block: tc.block, group: tc.group}.mustRun(t, input, out)
			want := sequential(t, argv, input)
			got := concat(t, res.Outputs)
			if !bytes.Equal(got, want) {
				t.Fatalf("ordered output differs from the sequential run:\ngot  %.300q\nwant %.300q", got, want)
			}
			wantFiles := 1
			if tc.group > 0 {
				wantFiles = (tc.n + tc.group - 1) / tc.group
			}
			if len(res.Outputs) != wantFiles {
				t.Fatalf("%d output files %v, want %d", len(res.Outputs), res.Outputs, wantFiles)
			}
			if tc.wantSegments > 0 && res.Segments != tc.wantSegments {
				t.Fatalf("%d runs of the command, want %d", res.Segments, tc.wantSegments)
			}
			if st, _ := os.Stat(input); res.Bytes != st.Size() {
				t.Fatalf("%d input bytes fed, want %d", res.Bytes, st.Size())
			}
			noTemps(t, filepath.Dir(out))
		})
	}
}

// TestAnnotationChangesBehaviour: one program, one input, one annotation
// line changed between runs (no rebuild): ordered newspaper output is the
// sequential run's; chaotic newspaper and chaotic log outputs have every
// record whole, but segment 0's, held back until segment 10 has started,
// comes after the first records.
func TestAnnotationChangesBehaviour(t *testing.T) {
	dir := t.TempDir()
	input := filepath.Join(dir, "q.fa")
	data := fasta(40)
	if err := os.WriteFile(input, data, 0o644); err != nil {
		t.Fatal(err)
	}
	in := "in NEWSPAPER ro wo b farm=FASTA\n"
	for _, tc := range []struct {
		out     string
		ordered bool
	}{
		{"out NEWSPAPER rc wo b farm=0", true},
		{"out NEWSPAPER rc wc b farm=0", false},
		{"out LOG rc wc a farm=0", false},
		{"out LOG rc wc b farm=0", false},
		{"out NEWSPAPER rc wo b farm=0", true},
	} {
		t.Run(tc.out, func(t *testing.T) {
			marker := filepath.Join(t.TempDir(), "segment-10-started")
			argv := []string{"sh", "-c", fmt.Sprintf(`case "$PARIO_FARM_SEGMENT" in
				0) while [ ! -e %[1]s ]; do sleep 0.02; done;;
				10) touch %[1]s;;
				esac; cat`, marker)}
			out := filepath.Join(t.TempDir(), "out.fa")
			farmRun{n: 3, annotations: in + tc.out, argv: argv, block: 1}.mustRun(t, input, out)
			got, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if tc.ordered != bytes.Equal(got, data) {
				t.Fatalf("%s: output identical to the input: %v, want %v", tc.out, !tc.ordered, tc.ordered)
			}
			gotRecs, wantRecs := records(t, got), records(t, data)
			if tc.ordered {
				return
			}
			if i := slices.Index(gotRecs, wantRecs[0]); i < 5 {
				t.Errorf("chaotic: segment 0, done after segment 10 started, is record %d of the output", i)
			}
			slices.Sort(gotRecs)
			slices.Sort(wantRecs)
			if !slices.Equal(gotRecs, wantRecs) {
				t.Fatalf("chaotic output: records are not the input's, whole:\n%q", got)
			}
		})
	}
}

func TestFailingSegment(t *testing.T) {
	dir := t.TempDir()
	input := filepath.Join(dir, "q.fa")
	if err := os.WriteFile(input, fasta(30), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, outLine := range []string{"out NEWSPAPER rc wo b farm=0", "out LOG rc wc b farm=0"} {
		t.Run(outLine, func(t *testing.T) {
			out := filepath.Join(dir, "hits.txt")
			// An old output stays as it was: the failed run leaves nothing
			// under its name.
			if err := os.WriteFile(out, []byte("old\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			argv := []string{"sh", "-c", `if [ "$PARIO_FARM_SEGMENT" = 2 ]; then echo "bad residue in $(head -1)" >&2; exit 3; fi; sleep 0.05; cat`}
			_, errs := farmRun{n: 3, annotations: "in NEWSPAPER ro wo b farm=FASTA\n" + outLine, argv: argv, block: 1}.run(t, input, out)
			if errs[0] == nil {
				t.Fatal("rank 0: no error")
			}
			msg := errs[0].Error()
			for _, want := range []string{"segment 2 ", `">q2 protein 1"`, "exit status 3", "bad residue in >q2 protein 1", "sh -c"} {
				if !strings.Contains(msg, want) {
					t.Errorf("rank 0's error does not say %q:\n%s", want, msg)
				}
			}
			for r, err := range errs[1:] {
				if !errors.Is(err, ErrFailedElsewhere) {
					t.Errorf("rank %d: %v, want ErrFailedElsewhere", r+1, err)
				}
			}
			if b, _ := os.ReadFile(out); string(b) != "old\n" {
				t.Errorf("the output's name holds %q after a failed run, want the old file", b)
			}
			noTemps(t, dir)
		})
	}
}

func TestStreams(t *testing.T) {
	// A grouped function Run registers in this process is its own, not one
	// for the messages to suggest.
	if _, err := groupedAnnotation(parse(t, ordered).Lines[0], 7, template.Bounds{Max: 100}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		src, argv0, want string
	}{
		{ordered, "tr", ""},
		{"in NEWSPAPER ro wo b tr=Lines\nout LOG rc wc a tr=0\nin NEWSPAPER ro wo b farm=FASTA\nout NEWSPAPER rc wo b farm=0", "/usr/bin/tr", ""},
		{"in REPORT ro wo b farm=4k\nout NEWSPAPER rc wr b farm=0", "tr", ""},
		{"out NEWSPAPER rc wo b farm=0", "tr", `no line for stream "in" in function "tr" or "farm"`},
		{"in NEWSPAPER ro wo b farm=FASTA", "tr", `no line for stream "out"`},
		{"in LOG ro wo b farm=0\nout NEWSPAPER rc wo b farm=0", "tr", "io.ann:1: in LOG ro wo b farm=0: the input is cut into segments"},
		{"in NEWSPAPER ro wo b farm=0\nout NEWSPAPER rc wo b farm=0", "tr", "name a segmentation function"},
		{"in NEWSPAPER ro wo b farm=FASTA\nout NEWSPAPER rc wo b farm=64", "tr", "io.ann:2: out NEWSPAPER rc wo b farm=64: a command's output has no size"},
		{"in NEWSPAPER ro wo b farm=FASTA\nout LOG rc wo b farm=0", "tr", "an ordered or relaxed log"},
		{"in NEWSPAPER ro wo b farm=FASTA\nout MEETING rc wo b farm=0", "tr", "not a MEETING"},
		// An unknown function is refused here, where the CLI asks before
		// any rank starts, naming the line and what is registered.
		{"in NEWSPAPER ro wo b farm=Nope\nout NEWSPAPER rc wo b farm=0", "tr", `io.ann:1: in NEWSPAPER ro wo b farm=Nope: no segmentation function "Nope": use one of BLen, BSize, CEDESize, FASTA, LenPrefix32, Lines, or`},
		{"\nin REPORT ro wo b farm=fasta\nout NEWSPAPER rc wo b farm=0", "tr", `io.ann:2: in REPORT ro wo b farm=fasta: no segmentation function "fasta"`},
		// The docking example's functions, which the docs list.
		{"in NEWSPAPER ro wo b farm=BSize\nout NEWSPAPER rc wo b farm=0", "tr", ""},
		{"in NEWSPAPER ro wo b farm=BLen\nout NEWSPAPER rc wo b farm=0", "tr", ""},
	} {
		_, _, err := Streams(parse(t, tc.src), []string{tc.argv0})
		if tc.want == "" && err != nil {
			t.Errorf("%q: %v", tc.src, err)
		}
		if tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%q: error %v, want one saying %q", tc.src, err, tc.want)
		}
	}
	// The line suggested for a missing stream is one farm takes.
	for _, src := range []string{"in NEWSPAPER ro wo b farm=Lines", "out NEWSPAPER rc wc b farm=0"} {
		_, _, err := Streams(parse(t, src), []string{"tr"})
		if err == nil {
			t.Fatalf("%q: no error for the missing stream", src)
		}
		hint := regexp.MustCompile("e.g. `([^`]*)`").FindStringSubmatch(err.Error())
		if hint == nil {
			t.Fatalf("%q: %v suggests no line", src, err)
		}
		if _, _, err := Streams(parse(t, src+"\n"+hint[1]), []string{"tr"}); err != nil {
			t.Errorf("%q: the suggested line %q is refused: %v", src, hint[1], err)
		}
	}
	in, out, err := Streams(parse(t, "in NEWSPAPER ro wo b tr=Lines\nout LOG rc wc a tr=0\n"+ordered), []string{"/usr/bin/tr"})
	if err != nil || in.SegFunc != "Lines" || out.Template != annot.Log {
		t.Fatalf("the command's own lines (function tr) are not preferred: %v %v %v", in, out, err)
	}
}

func TestParts(t *testing.T) {
	data := fasta(50)
	r := bytes.NewReader(data)
	size := int64(len(data))
	recs, err := seg.All(seg.FASTA, r, 0, size)
	if err != nil {
		t.Fatal(err)
	}
	starts := map[int64]bool{size: true}
	for _, rc := range recs {
		starts[rc.Base] = true
	}
	for _, n := range []int{1, 2, 3, 7, 50, 60} {
		b, err := parts(seg.FASTA, r, size, n)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) != n+1 || b[0] != 0 || b[n] != size {
			t.Fatalf("%d parts: %v", n, b)
		}
		for i := 1; i <= n; i++ {
			if b[i] < b[i-1] || !starts[b[i]] {
				t.Fatalf("%d parts: boundary %d = %d is not a record boundary or goes back: %v", n, i, b[i], b)
			}
			if n <= 7 && (b[i]-b[i-1] < size/int64(n)/2) {
				t.Fatalf("%d parts: part %d is %d bytes of %d: %v", n, i-1, b[i]-b[i-1], size, b)
			}
		}
	}
}

func TestGrouped(t *testing.T) {
	data := fasta(20)
	r := bytes.NewReader(data)
	recs := records(t, data)
	for _, block := range []int64{1, 100, 1000, 1 << 20} {
		segs, err := seg.All(grouped(seg.FASTA, block), r, 0, int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		var joined strings.Builder
		k := 0
		for i, s := range segs {
			part := string(data[s.Base : s.Base+s.Extent])
			joined.WriteString(part)
			// Whole records, at least block bytes except the last.
			var n int
			for n < len(part) {
				if !strings.HasPrefix(part[n:], recs[k]) {
					t.Fatalf("block %d: segment %d does not hold whole records", block, i)
				}
				n += len(recs[k])
				k++
			}
			if i < len(segs)-1 && s.Extent < block {
				t.Fatalf("block %d: segment %d is %d bytes", block, i, s.Extent)
			}
		}
		if joined.String() != string(data) {
			t.Fatalf("block %d: segments do not cover the input", block)
		}
	}
}

// TestProgress: world rank 0 hears how far the parent has got, never
// going back, and last of all that it is done with the whole input.
func TestProgress(t *testing.T) {
	dir := t.TempDir()
	input := filepath.Join(dir, "q.fa")
	data := fasta(30)
	if err := os.WriteFile(input, data, 0o644); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []Progress
	af := parse(t, ordered)
	err := rank.RunLocal(testCtx(t), 2, func(ctx context.Context, c *rank.Comm) error {
		cfg := Config{Comm: c, Annotations: af, In: input, Out: filepath.Join(dir, "out"), InFS: Local{}, OutFS: Local{},
			Argv: []string{"sh", "-c", "sleep 0.02; cat"}, Block: 1, ProgressEvery: 5 * time.Millisecond,
			Progress: func(p Progress) {
				if c.Rank() != 0 {
					t.Errorf("progress on rank %d", c.Rank())
				}
				mu.Lock()
				seen = append(seen, p)
				mu.Unlock()
			}}
		_, err := Run(ctx, cfg)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) < 2 {
		t.Fatalf("%d progress reports, want several", len(seen))
	}
	for i := 1; i < len(seen); i++ {
		if seen[i].Bytes < seen[i-1].Bytes || seen[i].Segments < seen[i-1].Segments || seen[i-1].Done {
			t.Fatalf("progress went back or went on after done: %+v then %+v", seen[i-1], seen[i])
		}
	}
	last := seen[len(seen)-1]
	if !last.Done || last.Bytes != int64(len(data)) || last.Total != int64(len(data)) || last.Segments != 30 {
		t.Fatalf("last report %+v, want done with 30 segments and %d of %d bytes", last, len(data), len(data))
	}
	if s := last.String(); !strings.Contains(s, "done: 30 segments, 100%") {
		t.Errorf("the progress line %q", s)
	}
}

// TestWindow: a window answers every read as the file itself does, short
// reads and io.EOF at the end included, whatever the order of the reads.
func TestWindow(t *testing.T) {
	data := make([]byte, 3*windowSize+123)
	for i := range data {
		data[i] = byte(i * 7)
	}
	file := bytes.NewReader(data)
	w := &window{r: file}
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 2000 {
		off := rng.Int64N(int64(len(data)) + 10)
		n := rng.IntN(2 * windowSize)
		if i%3 != 0 {
			n = rng.IntN(2000)
		}
		want := make([]byte, n)
		wn, werr := file.ReadAt(want, off)
		got := make([]byte, n)
		gn, gerr := w.ReadAt(got, off)
		if gn != wn || !bytes.Equal(got[:gn], want[:wn]) || (gerr == nil) != (werr == nil) {
			t.Fatalf("ReadAt(%d bytes, %d): got %d, %v; the file gives %d, %v", n, off, gn, gerr, wn, werr)
		}
	}
}

// An output disk that fills mid-run ends the run with the disk's error on
// every rank, and leaves neither the output nor its temporary file. Before,
// the ordered write's later segments waited for a turn that the failed one
// never passed on, and the farm hung (its ranks waited for each other).
func TestOutputDiskFills(t *testing.T) {
	input := filepath.Join(t.TempDir(), "q.fa")
	if err := os.WriteFile(input, fasta(40000), 0o644); err != nil { // about 3 MB
		t.Fatal(err)
	}
	for _, outLine := range []string{"out NEWSPAPER rc wo b farm=0", "out NEWSPAPER rc wc b farm=0", "out LOG rc wc b farm=0"} {
		t.Run(outLine, func(t *testing.T) {
			dir := testenv.Tmpfs(t, "1m")
			out := filepath.Join(dir, "hits.txt")
			done := make(chan []error, 1)
			go func() {
				_, errs := farmRun{n: 3, annotations: "in NEWSPAPER ro wo b farm=FASTA\n" + outLine, argv: []string{"cat"}, block: 64 << 10}.run(t, input, out)
				done <- errs
			}()
			var errs []error
			select {
			case errs = <-done:
			case <-time.After(60 * time.Second):
				t.Fatal("the farm did not end in 60 s with its output disk full")
			}
			if errs[0] == nil || !strings.Contains(errs[0].Error(), "no space left on device") {
				t.Fatalf("rank 0: %v, want the disk's error", errs[0])
			}
			for r, err := range errs[1:] {
				if err == nil {
					t.Errorf("rank %d succeeded", r+1)
				}
			}
			if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the output's name exists after the failed run: %v", err)
			}
			noTemps(t, dir)
		})
	}
}

// A group of more ranks than there are is one group of them all. Before,
// --group 9223372036854775807 overflowed the count of groups (ranks +
// group - 1 wrapped negative), which made zero groups and a panic (index
// out of range) on every rank.
func TestGroupLargerThanRanks(t *testing.T) {
	dir := t.TempDir()
	input := filepath.Join(dir, "q.fa")
	if err := os.WriteFile(input, fasta(30), 0o644); err != nil {
		t.Fatal(err)
	}
	argv := []string{"tr", "a-z", "A-Z"}
	out := filepath.Join(dir, "hits")
	res := farmRun{n: 3, annotations: ordered, argv: argv, group: math.MaxInt}.mustRun(t, input, out)
	if !slices.Equal(res.Outputs, []string{out + ".0"}) {
		t.Fatalf("outputs %v, want one, %s.0", res.Outputs, out)
	}
	if got, want := concat(t, res.Outputs), sequential(t, argv, input); !bytes.Equal(got, want) {
		t.Fatalf("output differs from the sequential run:\ngot  %.300q\nwant %.300q", got, want)
	}
}

// TestGroups: the count of groups without overflow, near the int's maximum
// too.
func TestGroups(t *testing.T) {
	for _, tc := range []struct{ ranks, group, groups, size int }{
		{4, 0, 1, 4}, {4, 1, 4, 1}, {4, 3, 2, 3}, {4, 4, 1, 4}, {4, 5, 1, 4},
		{4, math.MaxInt, 1, 4}, {math.MaxInt, math.MaxInt - 1, 2, math.MaxInt - 1}, {1, math.MaxInt, 1, 1},
	} {
		if g, s := Groups(tc.ranks, tc.group); g != tc.groups || s != tc.size {
			t.Errorf("Groups(%d, %d) = %d groups of %d, want %d of %d", tc.ranks, tc.group, g, s, tc.groups, tc.size)
		}
	}
}

// TestDockInput: the docking example's molecule files, cut by BSize (which
// docs/templates.md lists among the segmentation functions), are farmable:
// one run per molecule gives the input back in order. Before, farm did not
// have BSize registered and failed once the ranks had met.
func TestDockInput(t *testing.T) {
	dir := t.TempDir()
	input := filepath.Join(dir, "b.dat")
	// Built here rather than by dock.Generate: importing template/dock
	// would register BSize in the test binary, whether farm does or not.
	// B = int N, N x (C E D E), E; atom = int M, M x (int, char).
	var data bytes.Buffer
	le32 := func(v int) { data.Write(binary.LittleEndian.AppendUint32(nil, uint32(v))) }
	for b := range 7 {
		n := 1 + b%3
		le32(n)
		for a := range 4*n + 1 {
			m := (a*5+b)%9 + 1
			le32(m)
			for e := range m {
				le32(e)
				data.WriteByte(byte('a' + (a+e)%26))
			}
		}
	}
	if err := os.WriteFile(input, data.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.dat")
	res := farmRun{n: 2, annotations: "in NEWSPAPER ro wo b farm=BSize\nout NEWSPAPER rc wo b farm=0", argv: []string{"cat"}, block: 1}.mustRun(t, input, out)
	if res.Segments != 7 {
		t.Errorf("%d runs, want one per molecule, 7", res.Segments)
	}
	if got := concat(t, res.Outputs); !bytes.Equal(got, data.Bytes()) {
		t.Errorf("the output (%d bytes) is not the input (%d bytes)", len(got), data.Len())
	}
}

// TestOutputIsDirectory: an output that is a directory is refused by
// CheckOutputs, and by Run before any segment runs (the command would
// create a file). Before, every segment ran and the rename at the end
// failed.
func TestOutputIsDirectory(t *testing.T) {
	dir := t.TempDir()
	input := filepath.Join(dir, "q.fa")
	if err := os.WriteFile(input, fasta(10), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"d", "g.1"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var de *OutputIsDirError
	if err := CheckOutputs(testCtx(t), Local{}, filepath.Join(dir, "d"), 3, 0); !errors.As(err, &de) || de.Name != filepath.Join(dir, "d") {
		t.Errorf("CheckOutputs(d): %v, want d is a directory", err)
	}
	if err := CheckOutputs(testCtx(t), Local{}, filepath.Join(dir, "g"), 4, 2); !errors.As(err, &de) || de.Name != filepath.Join(dir, "g.1") {
		t.Errorf("CheckOutputs(g, groups of 2 of 4): %v, want g.1 is a directory", err)
	}
	if err := CheckOutputs(testCtx(t), Local{}, filepath.Join(dir, "new"), 4, 2); err != nil {
		t.Errorf("CheckOutputs(new): %v", err)
	}
	ran := filepath.Join(dir, "ran")
	_, errs := farmRun{n: 2, annotations: ordered, argv: []string{"sh", "-c", "touch " + ran + "; cat"}}.run(t, input, filepath.Join(dir, "d"))
	if errs[0] == nil || !strings.Contains(errs[0].Error(), filepath.Join(dir, "d")+" is a directory") {
		t.Errorf("rank 0: %v, want the output named a directory", errs[0])
	}
	if _, err := os.Stat(ran); err == nil {
		t.Error("the command ran")
	}
	noTemps(t, dir)
}

// TestOutputDirectoryMissing: an output whose directory does not exist,
// or is a file, is refused by CheckOutputs and by Run naming the user's
// output and its directory. Before, the create of the hidden temporary
// file failed and was all the error named (".x.farm-...: no such file or
// directory").
func TestOutputDirectoryMissing(t *testing.T) {
	dir := t.TempDir()
	input := filepath.Join(dir, "q.fa")
	if err := os.WriteFile(input, fasta(10), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		out, dir string
		kind     Kind
		group    int
		want     string
	}{
		{filepath.Join(dir, "nodir", "x"), filepath.Join(dir, "nodir"), Missing, 0, "does not exist"},
		{filepath.Join(dir, "nodir", "deeper", "x"), filepath.Join(dir, "nodir", "deeper"), Missing, 2, "does not exist"},
		{filepath.Join(file, "x"), file, NotDir, 0, "is not a directory"},
	} {
		var de *OutputDirError
		err := CheckOutputs(testCtx(t), Local{}, c.out, 4, c.group)
		if !errors.As(err, &de) || de.Dir != c.dir || de.Kind != c.kind || !strings.Contains(err.Error(), c.out) ||
			!strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), ".farm-") {
			t.Errorf("CheckOutputs(%s): %v, want its directory %s named: %s", c.out, err, c.dir, c.want)
		}
	}
	out := filepath.Join(dir, "nodir", "x")
	ran := filepath.Join(dir, "ran")
	_, errs := farmRun{n: 2, annotations: ordered, argv: []string{"sh", "-c", "touch " + ran + "; cat"}}.run(t, input, out)
	if errs[0] == nil || !strings.Contains(errs[0].Error(), "the directory "+filepath.Join(dir, "nodir")+" of the output "+out+" does not exist") {
		t.Errorf("rank 0: %v, want the output's directory named missing", errs[0])
	}
	if _, err := os.Stat(ran); err == nil {
		t.Error("the command ran")
	}
}

// TestScratchDiskFills: when $TMPDIR, where each run's output is kept
// until it is placed, fills up, the failure says so, naming the scratch
// file and the disk's error. Before, the write error was dropped and the
// run was reported as "cat: signal: broken pipe": the failed write closed
// the command's stdout.
func TestScratchDiskFills(t *testing.T) {
	dir := t.TempDir()
	input := filepath.Join(dir, "q.fa")
	if err := os.WriteFile(input, fasta(80000), 0o644); err != nil { // about 6 MB
		t.Fatal(err)
	}
	out := filepath.Join(dir, "hits.txt")
	scratch := testenv.Tmpfs(t, "1m")
	t.Setenv("TMPDIR", scratch)
	_, errs := farmRun{n: 2, annotations: ordered, argv: []string{"cat"}}.run(t, input, out)
	if errs[0] == nil {
		t.Fatal("rank 0: no error with $TMPDIR full")
	}
	msg := errs[0].Error()
	for _, want := range []string{"scratch " + scratch + "/pario-segment-", "no space left on device"} {
		if !strings.Contains(msg, want) {
			t.Errorf("rank 0's error does not say %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "broken pipe") && !strings.Contains(msg, "no space left") {
		t.Errorf("the command's SIGPIPE is reported, not the write that caused it:\n%s", msg)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the output exists after the failed run: %v", err)
	}
	noTemps(t, dir)
}

// TestStaleTempRemoved: a run removes the temporary files that killed
// runs (SIGKILL) left next to its output, and only those: never a live
// run's, which it holds locked; never a young one, which its run may not
// have locked yet; never one of another output or of an older naming.
// Before, every killed run's .OUT.farm-XXXX stayed for good.
func TestStaleTempRemoved(t *testing.T) {
	dir := t.TempDir()
	input := filepath.Join(dir, "q.fa")
	if err := os.WriteFile(input, fasta(20), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "hits.txt")
	old := time.Now().Add(-time.Hour)
	mk := func(name string, mtime time.Time) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("partial"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		return p
	}
	stale := mk(".hits.txt.farm-L0123456789ab", old)
	young := mk(".hits.txt.farm-L0123456789ac", time.Now())
	otherOut := mk(".hits.fa.farm-L0123456789ad", old)
	oldNaming := mk(".hits.txt.farm-0123456789ae", old)
	live := mk(".hits.txt.farm-L0123456789af", old)
	lf, err := os.Open(live)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}

	farmRun{n: 2, annotations: ordered, argv: []string{"cat"}}.mustRun(t, input, out)
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a killed run's old, unlocked %s is still there: %v", filepath.Base(stale), err)
	}
	for _, p := range []string{young, otherOut, oldNaming, live} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s was removed: %v", filepath.Base(p), err)
		}
	}

	// A live run's file survives another run's tidying, however old its
	// mtime: the run holds it locked until its rename.
	marker := filepath.Join(dir, "started")
	done := make(chan []error, 1)
	go func() {
		_, errs := farmRun{n: 2, annotations: ordered, argv: []string{"sh", "-c", "touch " + marker + "; sleep 0.5; cat"}, block: 1 << 20}.run(t, input, out)
		done <- errs
	}()
	for {
		if _, err := os.Stat(marker); err == nil {
			break
		}
		select {
		case errs := <-done:
			t.Fatalf("the run ended before its command started: %v", errors.Join(errs...))
		case <-time.After(10 * time.Millisecond):
		}
	}
	ents, _ := filepath.Glob(filepath.Join(dir, ".hits.txt.farm-L*"))
	if len(ents) != 3 { // the live run's, and young and live above
		t.Fatalf("temporary files %v, want the live run's, %s and %s", ents, filepath.Base(young), filepath.Base(live))
	}
	for _, p := range ents {
		os.Chtimes(p, old, old)
	}
	h, name, err := Local{}.CreateTemp(context.Background(), out)
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	Local{}.Remove(context.Background(), name)
	if err := errors.Join(<-done...); err != nil {
		t.Fatalf("a live run failed after another run tidied its directory: %v", err)
	}
	if b, err := os.ReadFile(out); err != nil || !bytes.Equal(b, fasta(20)) {
		t.Fatalf("the live run's output: %v, %d bytes", err, len(b))
	}
}

// TestEmptyInput: an empty input is no runs of the command and an empty
// output, whatever cuts it; with a constant extent the parent handed out
// empty segments for ever (the template reads the empty part [0, 0) as
// "to the end of the file").
func TestEmptyInput(t *testing.T) {
	dir := t.TempDir()
	input := filepath.Join(dir, "empty")
	if err := os.WriteFile(input, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{"1", "4k", "Lines", "FASTA", "LenPrefix32"} {
		for _, group := range []int{0, 1} {
			t.Run(fmt.Sprintf("%s/group%d", in, group), func(t *testing.T) {
				out := filepath.Join(t.TempDir(), "out")
				ann := "in NEWSPAPER ro wo b farm=" + in + "\nout NEWSPAPER rc wo b farm=0\n"
				res := farmRun{n: 3, annotations: ann, argv: []string{"cat"}, group: group}.mustRun(t, input, out)
				if res.Segments != 0 || res.Bytes != 0 {
					t.Fatalf("%d runs over %d bytes of an empty input, want none", res.Segments, res.Bytes)
				}
				if got := concat(t, res.Outputs); len(got) != 0 {
					t.Fatalf("output %q, want empty", got)
				}
			})
		}
	}
}

// TestPartsKeepNoRecords: cutting an input into --group parts walks its
// records without keeping them (24 bytes a record before: 48 MiB for
// two million lines, and a billion-read FASTQ would not fit), and stops
// at the last boundary.
func TestPartsKeepNoRecords(t *testing.T) {
	data := bytes.Repeat([]byte("x\n"), 2_000_000)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	b, err := parts(seg.Lines, bytes.NewReader(data), int64(len(data)), 2)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int64{0, int64(len(data)) / 2, int64(len(data))}; !slices.Equal(b, want) {
		t.Errorf("parts = %v, want %v", b, want)
	}
	// The race detector's sync.Pool drops a quarter of what is put back,
	// by design, so scan's buffers are made again under it.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 && !testenv.RaceEnabled {
		t.Errorf("cutting 2,000,000 lines into 2 parts allocated %d MiB", alloc>>20)
	}
}

package annot

import (
	"errors"
	"strings"
	"testing"
)

func TestParseSeedLines(t *testing.T) {
	src := `# the seed's figure 9 annotations
fin NEWSPAPER ro wo b ComputeMolecule=BSize
fin NEWSPAPER ro wo b ComputeCEDE=CEDESize
fout NEWSPAPER rc wc b ComputeMolecule=0   # unknown extent
fout newspaper rc wc b ComputeCEDE=0

res LOG rc wr a main=0
tab REPORT rr wo a Stats=64k
`
	f, err := Parse("io.ann", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := []Annotation{
		{Stream: "fin", Template: Newspaper, Read: Ordered, Write: Ordered, Tx: Block, Function: "ComputeMolecule", SegFunc: "BSize", Line: 2},
		{Stream: "fin", Template: Newspaper, Read: Ordered, Write: Ordered, Tx: Block, Function: "ComputeCEDE", SegFunc: "CEDESize", Line: 3},
		{Stream: "fout", Template: Newspaper, Read: Chaotic, Write: Chaotic, Tx: Block, Function: "ComputeMolecule", Line: 4},
		{Stream: "fout", Template: Newspaper, Read: Chaotic, Write: Chaotic, Tx: Block, Function: "ComputeCEDE", Line: 5},
		{Stream: "res", Template: Log, Read: Chaotic, Write: Relaxed, Tx: Atomic, Function: "main", Line: 7},
		{Stream: "tab", Template: Report, Read: Relaxed, Write: Ordered, Tx: Atomic, Function: "Stats", Extent: 64 << 10, Line: 8},
	}
	if len(f.Lines) != len(want) {
		t.Fatalf("got %d lines, want %d: %+v", len(f.Lines), len(want), f.Lines)
	}
	for i := range want {
		if f.Lines[i] != want[i] {
			t.Errorf("line %d: got %+v, want %+v", i, f.Lines[i], want[i])
		}
	}
	lv := f.Levels("fin")
	if len(lv) != 2 || lv[0].Function != "ComputeMolecule" || lv[1].Function != "ComputeCEDE" {
		t.Errorf("Levels(fin) = %+v", lv)
	}
	if a, ok := f.Lookup("fout", "ComputeCEDE"); !ok || !a.Unknown() {
		t.Errorf("Lookup(fout, ComputeCEDE) = %+v, %v", a, ok)
	}
	if got := f.Lines[0].String(); got != "fin NEWSPAPER ro wo b ComputeMolecule=BSize" {
		t.Errorf("String() = %q", got)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		src   string
		line  int
		field int
		want  string
	}{
		{"fin NEWSPAPER ro wo b", 1, 0, "5 fields, want 6"},
		{"\n\nfin PAPER ro wo b f=0", 3, 2, `"PAPER" is not PHOTOCOPY`},
		{"fin LOG rx wo b f=0", 1, 3, `"rx" is not ro, rr or rc`},
		{"fin LOG ro ro b f=0", 1, 4, `"ro" is not wo, wr or wc`},
		{"fin LOG ro wo c f=0", 1, 5, `"c" is not a (atomic) or b (block)`},
		{"fin LOG ro wo b f", 1, 6, "has no '='"},
		{"fin LOG ro wo b f=", 1, 6, "empty segmentation"},
		{"fin LOG ro wo b f=12q", 1, 6, `segmentation "12q"`},
		{"fin LOG ro wo b f=BSize", 1, 6, "not segmented"},
		{"fin NEWSPAPER ro wo b =BSize", 1, 6, "is not a name"},
		{"f/in NEWSPAPER ro wo b f=0", 1, 1, "is not a name"},
		{"fin NEWSPAPER ro wo b f=0\nfin NEWSPAPER ro wo b f=1", 2, 6, "already annotated on line 1"},
		{"fin NEWSPAPER ro wo b f=$x", 1, 6, "neither a size nor a function name"},
		{"fin NEWSPAPER ro wo b f=-1", 1, 6, "must not be negative"},
		{"fin NEWSPAPER ro wo b f=+4k", 1, 6, `segmentation "+4k"`},
		{"fin NEWSPAPER ro wo b f=99999999999999999999", 1, 6, "too large"},
		{"fin NEWSPAPER ro wo b f=0\r\nfout LOG rc wc a f=7\r\n", 2, 6, "not segmented"},
		{"fïn NEWSPAPER ro wo b f=0", 1, 1, `"fïn" is not a name`},
		{"fin NEWSPAPER ro wo b f=0 extra", 1, 0, "7 fields, want 6"},
	} {
		_, err := Parse("io.ann", []byte(tc.src))
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("%q: error %v, want *Error", tc.src, err)
			continue
		}
		if e.File != "io.ann" || e.Line != tc.line || e.Field != tc.field || !strings.Contains(e.Error(), tc.want) {
			t.Errorf("%q: got %q (line %d field %d), want line %d field %d containing %q", tc.src, e, e.Line, e.Field, tc.line, tc.field, tc.want)
		}
		if tc.field > 0 && !strings.Contains(e.Error(), "io.ann:") || tc.field > 0 && !strings.Contains(e.Error(), fieldNames[tc.field]) {
			t.Errorf("%q: %q does not name the file and field", tc.src, e)
		}
	}
}

// TestParseLineEnds: CR LF line ends, a byte order mark, a last line
// without its newline and a non-breaking space between fields parse as
// the plain file does.
func TestParseLineEnds(t *testing.T) {
	plain := "fin NEWSPAPER ro wo b ComputeMolecule=BSize\nfout LOG rc wc a ComputeMolecule=0\n"
	want, err := Parse("io.ann", []byte(plain))
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range []string{
		strings.ReplaceAll(plain, "\n", "\r\n"),
		"\ufeff" + plain,
		"\ufeff" + strings.ReplaceAll(plain, "\n", "\r\n"),
		strings.TrimSuffix(plain, "\n"),
		strings.Replace(plain, " ", "\u00a0", 1),
	} {
		got, err := Parse("io.ann", []byte(src))
		if err != nil {
			t.Errorf("%q: %v", src, err)
			continue
		}
		if len(got.Lines) != len(want.Lines) {
			t.Errorf("%q: %d lines, want %d", src, len(got.Lines), len(want.Lines))
			continue
		}
		for i := range want.Lines {
			if got.Lines[i] != want.Lines[i] {
				t.Errorf("%q: line %d is %+v, want %+v", src, i+1, got.Lines[i], want.Lines[i])
			}
		}
	}
}

// FuzzParse: no input panics; what parses prints back to lines that parse
// to the same annotations.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"fin NEWSPAPER ro wo b ComputeMolecule=BSize\nfout NEWSPAPER rc wc b ComputeMolecule=0\n",
		"x LOG rr wr a main=0 # c",
		"t REPORT rc wo a f=64k",
		"m MEETING ro wo b f=0\np PHOTOCOPY rc wc a g=0",
		"fin NEWSPAPER ro wo b",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		file, err := Parse("fuzz", src)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.File != "fuzz" || e.Line < 1 {
				t.Fatalf("error %v is not an *Error naming file and line", err)
			}
			return
		}
		var b strings.Builder
		for _, a := range file.Lines {
			b.WriteString(a.String() + "\n")
		}
		again, err := Parse("again", []byte(b.String()))
		if err != nil {
			t.Fatalf("printed form %q does not parse: %v", b.String(), err)
		}
		if len(again.Lines) != len(file.Lines) {
			t.Fatalf("round trip: %d lines, want %d", len(again.Lines), len(file.Lines))
		}
		for i, a := range again.Lines {
			w := file.Lines[i]
			a.Line, w.Line = 0, 0
			if a != w {
				t.Fatalf("round trip: %+v, want %+v", a, w)
			}
		}
	})
}

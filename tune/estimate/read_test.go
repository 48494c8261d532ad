package estimate

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/report")

func TestReadCSV(t *testing.T) {
	tests := []struct {
		name, in   string
		want       []Block
		errContain string
	}{
		{name: "service", in: "job,arrival,service\nA,1.5,2\nB,3,0.25\n", want: []Block{{"A", 1.5, 2}, {"B", 3, 0.25}}},
		{name: "columns in any order, extra ones, spaces, comments",
			in:   "# a log\nservice, note ,Job, Arrival\n\n2,x,A,1\n# more\n3,y,B,4\n",
			want: []Block{{"A", 1, 2}, {"B", 4, 3}}},
		{name: "end instead of service, timestamps",
			in:   "job,arrival,end\nA,2010-06-01T00:00:00Z,2010-06-01T00:00:04.5Z\nB,2010-06-01T00:00:10,2010-06-01 00:00:12\n",
			want: []Block{{"A", 1275350400, 4.5}, {"B", 1275350410, 2}}},
		{name: "empty", in: "", errContain: "the log is empty"},
		{name: "no service column", in: "job,arrival\nA,1\n", errContain: `line 1: header "job,arrival": want the columns job, arrival and service (or end)`},
		{name: "bad arrival", in: "job,arrival,service\nA,1,1\nB,soon,1\n", errContain: `line 3, arrival: "soon" is neither seconds nor a time`},
		{name: "negative service", in: "job,arrival,service\nA,1,-1\n", errContain: `line 2, service: "-1" is negative`},
		{name: "NaN service", in: "job,arrival,service\nA,1,NaN\n", errContain: `line 2, service: "NaN" is not a number`},
		{name: "end before arrival", in: "job,arrival,end\nA,5,4\n", errContain: "line 2: end 4 is before arrival"},
		{name: "short line", in: "job,arrival,service\nA,1\n", errContain: "line 2: no service (2 fields)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log, err := ReadCSV(strings.NewReader(tt.in))
			checkRead(t, log, err, tt.want, tt.errContain)
		})
	}
}

func TestReadSacct(t *testing.T) {
	f, err := os.ReadFile("testdata/sacct.txt")
	if err != nil {
		t.Fatal(err)
	}
	const t0 = 1275350400 // 2010-06-01T00:00:00Z
	tests := []struct {
		name, in   string
		want       []Block
		skipped    int
		errContain string
	}{
		// 100: its numbered steps; 101: its batch step; 102 and the array
		// tasks: their allocations; 104, 105 skipped.
		{name: "steps, batch, allocation, array, unfinished", in: string(f), skipped: 2, want: []Block{
			{"100", t0 + 1, 2}, {"100", t0 + 5, 1}, {"101", t0 + 5, 2}, {"102", t0 + 25, 4},
			{"103_1", t0 + 45, 3}, {"103_2", t0 + 45, 1},
		}},
		{name: "sacct -p: trailing bar, CRLF", in: "JobID|Start|End|\r\n7|2010-06-01T00:00:00|2010-06-01T00:00:02|\r\n",
			want: []Block{{"7", t0, 2}}},
		{name: "empty", in: "", errContain: "the log is empty"},
		{name: "no End column", in: "JobID|Start\n1|2010-06-01T00:00:00\n", errContain: `line 1: header "JobID|Start" has no end column`},
		{name: "bad Start", in: "JobID|Start|End\n1|yesterday|2010-06-01T00:00:00\n", errContain: `line 2, Start: "yesterday"`},
		{name: "ends before it starts", in: "JobID|Start|End\n1|2010-06-01T00:00:05|2010-06-01T00:00:00\n", errContain: "line 2: 1 ends (2010-06-01T00:00:00) before it starts"},
		{name: "no JobID", in: "JobID|Start|End\n|2010-06-01T00:00:00|2010-06-01T00:00:01\n", errContain: "line 2: no JobID"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log, err := ReadSacct(strings.NewReader(tt.in))
			checkRead(t, log, err, tt.want, tt.errContain)
			if err == nil && len(log.Skipped) != tt.skipped {
				t.Errorf("skipped %+v, want %d", log.Skipped, tt.skipped)
			}
		})
	}
}

func checkRead(t *testing.T, log Log, err error, want []Block, errContain string) {
	t.Helper()
	if errContain != "" {
		if err == nil || !strings.Contains(err.Error(), errContain) {
			t.Fatalf("err = %v, want one containing %q", err, errContain)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(log.Blocks) != len(want) {
		t.Fatalf("blocks %+v, want %+v", log.Blocks, want)
	}
	for i := range want {
		if g := log.Blocks[i]; g.Job != want[i].Job || !near(g.Arrival, want[i].Arrival) || !near(g.Service, want[i].Service) {
			t.Errorf("block %d = %+v, want %+v", i, g, want[i])
		}
	}
}

func TestReadDetects(t *testing.T) {
	for _, tt := range []struct{ file, format string }{{"figure2.csv", FormatCSV}, {"sacct.txt", FormatSacct}} {
		f, err := os.Open(filepath.Join("testdata", tt.file))
		if err != nil {
			t.Fatal(err)
		}
		log, err := Read(f, "auto")
		f.Close()
		if err != nil || log.Format != tt.format {
			t.Errorf("%s: format %q, err %v; want %s", tt.file, log.Format, err, tt.format)
		}
	}
	if _, err := Read(strings.NewReader("x"), "json"); err == nil || !strings.Contains(err.Error(), `format "json"`) {
		t.Errorf("unknown format: err = %v", err)
	}
	if _, err := Read(strings.NewReader(""), ""); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("empty log: err = %v", err)
	}
}

// TestWriteTextGolden: the report of pario tune estimate for the test logs.
func TestWriteTextGolden(t *testing.T) {
	for _, name := range []string{"figure2.csv", "sacct.txt"} {
		t.Run(name, func(t *testing.T) {
			f, err := os.Open(filepath.Join("testdata", name))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			log, err := Read(f, "")
			if err != nil {
				t.Fatal(err)
			}
			r, err := Estimate(log.Blocks, 0)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := r.WriteText(&buf, name+" ("+log.Format+")", log.Skipped); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "report", name+".txt")
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if buf.String() != string(want) {
				t.Errorf("report differs from %s (go test -update rewrites it):\n%s", golden, buf.String())
			}
		})
	}
}

// FuzzReadCSV: no input makes the CSV reader panic, and what it accepts
// is usable: finite, non-negative services.
func FuzzReadCSV(f *testing.F) {
	f.Add([]byte("job,arrival,service\nA,1,2\n"))
	f.Add([]byte("job,arrival,end\nA,2010-06-01T00:00:00Z,2010-06-01T00:00:04Z\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		log, err := ReadCSV(bytes.NewReader(b))
		if err != nil {
			return
		}
		checkBlocks(t, log)
	})
}

// FuzzReadSacct: the same for sacct's output.
func FuzzReadSacct(f *testing.F) {
	f.Add([]byte("JobID|Start|End\n1|2010-06-01T00:00:00|2010-06-01T00:00:02\n1.0|2010-06-01T00:00:00|2010-06-01T00:00:01\n"))
	f.Add([]byte("JobID|Start|End|\n2|Unknown|Unknown|\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		log, err := ReadSacct(bytes.NewReader(b))
		if err != nil {
			return
		}
		checkBlocks(t, log)
	})
}

func checkBlocks(t *testing.T, log Log) {
	for _, b := range log.Blocks {
		if b.Service < 0 || b.Service != b.Service || b.Arrival != b.Arrival {
			t.Fatalf("accepted block %+v", b)
		}
	}
	if r, err := Estimate(log.Blocks, 0); err == nil && (r.Lambda <= 0 || r.Gamma <= 0) {
		t.Fatalf("estimate %+v from accepted blocks", r)
	}
}

package calib

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestReadParioBenchJSON(t *testing.T) {
	// A real `pario bench --servers 1 -N 1 -b 64m -t 256k
	// --pario.strip-size 1m -w -e -i 3 -O summaryFormat=JSON` summary: the
	// layout is in Options.backend.
	pts, err := ReadFile("testdata/pario-bench.json", Layout{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pts) != 1 {
		t.Fatalf("%d points, want 1", len(pts))
	}
	p := pts[0]
	if p.Strip != 1<<20 || p.Transfer != 256<<10 || p.Targets != 1 || p.Size != 64<<20 || len(p.Times) != 3 {
		t.Errorf("point %s with %d times, want S=1m t=256k n=1 M=64m, 3 times", p.Label(), len(p.Times))
	}
}

func TestReadIORJSON(t *testing.T) {
	// IOR says nothing about striping: the name says strip 1m, 1 OST.
	pts, err := ReadFile("testdata/ior-strip1m-ost1.json", Layout{})
	if err != nil {
		t.Fatal(err)
	}
	p := pts[0]
	if p.Strip != 1<<20 || p.Transfer != 256<<10 || p.Targets != 1 || p.Size != 1<<30 || len(p.Times) != 2 || p.Times[1] != 2.5 {
		t.Errorf("point %s times %v, want S=1m t=256k n=1 M=1g, [2 2.5]", p.Label(), p.Times)
	}
	// Under another name the strip size must come from the caller.
	dir := t.TempDir()
	b, _ := os.ReadFile("testdata/ior-strip1m-ost1.json")
	plain := filepath.Join(dir, "ior.json")
	os.WriteFile(plain, b, 0o644)
	if _, err := ReadFile(plain, Layout{}); err == nil || !strings.Contains(err.Error(), "--strip-size") || !strings.Contains(err.Error(), plain) {
		t.Errorf("IOR file without a strip size: %v, want an error naming the file and --strip-size", err)
	}
	pts, err = ReadFile(plain, Layout{Strip: 4 << 20, Targets: 2})
	if err != nil || pts[0].Strip != 4<<20 || pts[0].Targets != 2 {
		t.Errorf("with defaults: %v, %v", pts, err)
	}
}

func TestReadCSV(t *testing.T) {
	pts, err := ReadFile("testdata/points.csv", Layout{})
	if err != nil {
		t.Fatal(err)
	}
	m := Merge(pts)
	if len(m) != 2 || len(m[0].Times) != 2 || m[1].Targets != 2 {
		t.Errorf("Merge(ReadFile(points.csv)) = %+v", m)
	}
}

func TestLayoutFromName(t *testing.T) {
	for name, want := range map[string]Layout{
		"bench-strip1m-t256k-servers1.json": {1 << 20, 1},
		"ior_stripe_4m_ost8.json":           {4 << 20, 8},
		"run-strip-size=64k.json":           {64 << 10, 0},
		"results.json":                      {},
	} {
		if got := layoutFromName(name); got != want {
			t.Errorf("layoutFromName(%q) = %+v, want %+v", name, got, want)
		}
	}
}

func TestBadResultsFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		path string
		want string // in the message, after the file name
	}{
		{filepath.Join(dir, "missing.json"), "no such file"},
		{write("empty.json", "  \n"), "empty file"},
		{write("broken-strip1m.json", "{\n  \"tests\": [\n    {,\n"), "line 3: not valid JSON"},
		{write("type-strip1m.json", `{"tests": [{"Results": [{"access": "write", "totalTime": "fast"}]}]}`), "tests.Results.totalTime"},
		{write("other.json", `{"hello": 1}`), "tests: missing"},
		{write("notime-strip1m.json", `{"tests": [{"Parameters": {"transferSize": 1024}, "Results": [{"access": "write", "bwMiB": 1}]}]}`), "tests[0].Results[0].totalTime: missing"},
		{write("read-strip1m.json", `{"tests": [{"Parameters": {"transferSize": 1024}, "Results": [{"access": "read", "totalTime": 1}]}]}`), "no write result"},
		{write("badlayout.json", `{"tests": [{"Options": {"backend": {"layout": "varstrip:strips=0:100"}}, "Results": []}]}`), "Options.backend.layout"},
		// Sizes past int64 wrapped negative and read as missing ("no file size").
		{write("hugeblock-strip1m.json", `{"tests": [{"Parameters": {"transferSize": 1048576, "blockSize": 9223372036854775807, "segmentCount": 4}, "Options": {"tasks": 4}, "Results": [{"access": "write", "totalTime": 1.5}]}]}`), "tests[0].Parameters: blockSize 9223372036854775807 x segmentCount 4 x tasks 4 is 1.48e+20 bytes"},
		{write("hugebw-strip1m.json", `{"tests": [{"Parameters": {"transferSize": 1048576}, "Results": [{"access": "write", "totalTime": 1e10, "bwMiB": 1e20}]}]}`), "tests[0].Results[0]: bwMiB 1e+20 x totalTime 1e+10 is"},
		{write("header.csv", "a,b,c\n1,2,3\n"), "line 1: not a JSON result"},
		{write("field.csv", "strip,transfer,servers,size,seconds\n1m,64k,1,64m,0.5\n1m,64k,x,64m,0.5\n"), "line 3, servers"},
		{write("time.csv", "strip,transfer,servers,size,seconds\n1m,64k,1,64m,-2\n"), "line 2, seconds"},
		{write("size.csv", "strip,transfer,servers,size,seconds\n1q,64k,1,64m,1\n"), "line 2, strip"},
		{write("short.csv", "strip,transfer,servers,size,seconds\n1m,64k\n"), "line 2"},
		{write("nodata.csv", "strip,transfer,servers,size,seconds\n"), "no data line"},
	}
	for _, c := range cases {
		_, err := ReadFile(c.path, Layout{})
		var ie *InputError
		if err == nil || !errors.As(err, &ie) {
			t.Errorf("%s: error %v, want an InputError", filepath.Base(c.path), err)
			continue
		}
		if !strings.HasPrefix(err.Error(), "calibrate: "+c.path+": ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %q, want the file name and %q", filepath.Base(c.path), err, c.want)
		}
	}
}

func TestGridRuns(t *testing.T) {
	g := Grid{Strips: []int64{64 << 10, 1 << 20}, Transfers: []int64{64 << 10, 1 << 20}, Servers: []int{1, 2}, Size: 8 << 20, Repetitions: 2}
	runs := g.Runs("/x")
	if len(runs) != 6 { // (64k,64k) (1m,64k) (1m,1m) on each of 2 server counts
		t.Fatalf("%d runs, want 6", len(runs))
	}
	if l := layoutFromName(filepath.Base(runs[5].File)); l.Strip != 1<<20 || l.Targets != 2 {
		t.Errorf("run file %s: its name gives %+v", runs[5].File, l)
	}
	joined := strings.Join(runs[0].Args, " ")
	for _, want := range []string{"--servers 1", "-b 8388608", "-t 65536", "--pario.strip-size 65536", "-w -e -i 2", "summaryFormat=JSON"} {
		if !strings.Contains(joined, want) {
			t.Errorf("args %q lack %q", joined, want)
		}
	}
}

// FuzzParse feeds results files of any shape to the reader: it must never
// panic, a refusal must be an *InputError naming the file, and every point
// it accepts must be one the fit can use (positive strip, transfer,
// targets and size; positive, finite times).
func FuzzParse(f *testing.F) {
	for _, name := range []string{"points.csv", "pario-bench.json", "ior-strip1m-ost1.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(name, b)
	}
	f.Add("x.csv", []byte("strip,transfer,servers,size,seconds\n0,0,1,0,1\n"))
	f.Add("strip1m.json", []byte(`{"tests":[{"Parameters":{"transferSize":-1,"blockSize":9223372036854775807,"segmentCount":9223372036854775807},"Options":{"tasks":3},"Results":[{"access":"write","totalTime":1e-300,"bwMiB":1e308}]}]}`))
	f.Add("r.json", []byte(`{"tests":[{"Options":{"backend":{"layout":"simple_stripe:strip_size=0,num_datafiles=-2"}}}]}`))
	f.Fuzz(func(t *testing.T, name string, b []byte) {
		pts, err := Parse(name, b, Layout{})
		if err != nil {
			var ie *InputError
			if !errors.As(err, &ie) || ie.File != name {
				t.Fatalf("error %v (%T) does not name the file %q", err, err, name)
			}
			return
		}
		if len(pts) == 0 {
			t.Fatal("no points and no error")
		}
		for i, p := range pts {
			if p.Strip <= 0 || p.Transfer <= 0 || p.Targets <= 0 || p.Size <= 0 || len(p.Times) == 0 {
				t.Fatalf("point %d accepted with strip %d, transfer %d, targets %d, size %d, %d times", i, p.Strip, p.Transfer, p.Targets, p.Size, len(p.Times))
			}
			for _, s := range p.Times {
				if !(s > 0) || math.IsInf(s, 0) {
					t.Fatalf("point %d accepted with time %v", i, s)
				}
			}
		}
	})
}

// TestReadFileFIFO: `pario tune calibrate --results FIFO` hung forever in
// open when nothing wrote the FIFO. It now reads it as empty.
func TestReadFileFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "results.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("mkfifo:", err)
	}
	done := make(chan error, 1)
	go func() { _, err := ReadFile(fifo, Layout{}); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), fifo) {
			t.Errorf("ReadFile(FIFO without a writer) = %v, want an error naming it", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ReadFile of a FIFO without a writer hangs")
	}
}

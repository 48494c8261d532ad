package bench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pario/pario/cluster"
	"github.com/pario/pario/internal/testbin"
	"github.com/pario/pario/internal/testenv"
)

// The integration tests run the pario binary as users do: `pario bench`
// starting its own rank processes (-N), under mpirun, and the default run.

var parioBin string

func TestMain(m *testing.M) { testbin.Main(m, &parioBin) }

// pario runs the binary and returns its combined output and exit code.
func pario(t *testing.T, env []string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(parioBin, args...)
	cmd.Env = append(os.Environ(), env...)
	return testbin.Run(t, cmd)
}

func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	out, code := pario(t, nil, args...)
	if code != 0 {
		t.Fatalf("pario %s: exit %d\n%s", strings.Join(args, " "), code, out)
	}
	return out
}

var resultRow = regexp.MustCompile(`(?m)^(write|read)\s+(\d+\.?\d*)\s+`)

// checkReport checks an IOR text report: a row per phase and repetition,
// every verification pass clean, and the summary.
func checkReport(t *testing.T, out string, reps int) {
	t.Helper()
	table, _, _ := strings.Cut(out, "Summary of all tests:")
	rows := resultRow.FindAllStringSubmatch(table, -1)
	if len(rows) != 2*reps {
		t.Errorf("%d result rows, want %d:\n%s", len(rows), 2*reps, out)
	}
	if strings.Contains(out, "Incorrect data") || !strings.Contains(out, "Summary of all tests:") {
		t.Errorf("report:\n%s", out)
	}
}

// Multi-rank runs through the local launcher on every back end, with
// write and read verification.
func TestLaunchedRanksEveryBackend(t *testing.T) {
	ctx := context.Background()
	c, err := cluster.Start(ctx, cluster.Config{Dir: t.TempDir(), DataServers: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	common := []string{"-N", "3", "-b", "256k", "-t", "64k", "-s", "2", "-w", "-r", "-W", "-R", "-i", "2", "-v"}
	for _, tc := range []struct {
		api  string
		file string
		more []string
	}{
		{"POSIX", filepath.Join(t.TempDir(), "ior.dat"), []string{"--posix.drop-cache"}},
		{"POSIX", filepath.Join(t.TempDir(), "ior.dat"), []string{"-F", "-C", "--reorder-shift", "1", "--posix.odirect"}},
		{"MMAP", filepath.Join(t.TempDir(), "ior.dat"), nil},
		{"DUMMY", "ignored", []string{"--dummy.delay-xfer", "10"}},
		{"PARIO", "pario:/ior.dat", []string{"--pario.strip-size", "64k", "--pario.servers", "2"}},
		{"PARIO", "pario:/fpp", []string{"-F", "-z", "--pario.layout", "varstrip:strips=0:100000;1:28000;2:400000"}},
	} {
		t.Run(tc.api+strings.Join(tc.more, ""), func(t *testing.T) {
			args := append([]string{"--cluster", c.ClusterFile, "bench", "-a", tc.api, "-o", tc.file}, common...)
			out := mustRun(t, append(args, tc.more...)...)
			checkReport(t, out, 2)
			if tc.api != "DUMMY" && strings.Count(out, "every byte as written") != 4 {
				t.Errorf("want 4 verified passes:\n%s", out)
			}
			if !strings.Contains(out, "tasks               : 3") {
				t.Errorf("not 3 tasks:\n%s", out)
			}
		})
	}
}

// The default run: embedded cluster, 4 ranks, verification, IOR tables,
// and nothing left behind.
func TestDefaultRun(t *testing.T) {
	tmp := t.TempDir()
	out, code := pario(t, []string{"TMPDIR=" + tmp}, "bench")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	checkReport(t, out, 2)
	for _, want := range []string{"api                 : PARIO", "tasks               : 4", "I/O servers         : 4", "first done: rank", "removed"} {
		if !strings.Contains(out, want) {
			t.Errorf("default run lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "every byte as written"); n != 4 {
		t.Errorf("%d verified passes, want 4", n)
	}
	left, _ := os.ReadDir(tmp)
	if len(left) != 0 {
		t.Errorf("left behind in TMPDIR: %v", left)
	}
}

// A corrupted block of a kept file fails -R verification, with its offset.
func TestCorruptBlockFailsVerification(t *testing.T) {
	file := filepath.Join(t.TempDir(), "ior.dat")
	args := []string{"bench", "-a", "POSIX", "-N", "2", "-b", "256k", "-t", "64k", "-o", file, "-k"}
	mustRun(t, append(args, "-w", "-W")...)
	// Copy rank 0's first transfer over its fourth (offset 192 KiB).
	f, err := os.OpenFile(file, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	blk := make([]byte, 64<<10)
	if _, err := f.ReadAt(blk, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(blk, 192<<10); err != nil {
		t.Fatal(err)
	}
	f.Close()
	out, code := pario(t, nil, append(args, "-r", "-R")...)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s", code, out)
	}
	for _, want := range []string{
		"WARNING: Incorrect data on read check (1 errors found).",
		"rank 0, offset 196608: expected data of rank 0, repetition 0, found a block stamped for offset 0 by rank 0 in repetition 0 (misplaced by +196608 bytes)",
		"data verification failed",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// Bad input gets a clear, IOR-like error and exit status 2 (1 for a
// missing directory, found when the test starts). A few cases end to end;
// every check of the flags is in TestParseArgsAndCheck, in process.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	o := filepath.Join(dir, "f")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"-a", "POSIX", "-o", o, "-b", "4m", "-t", "3m"}, 2, "block size must be a multiple of transfer size"},
		{[]string{"-a", "FOO", "-o", o}, 2, `unknown API "FOO" (valid: DUMMY, MMAP, PARIO, POSIX)`},
		{[]string{"-a", "POSIX", "-o", "/nonexistent-dir/f"}, 1, "directory /nonexistent-dir does not exist"},
		{[]string{"-a", "MMAP", "-o", o, "--posix.odirect"}, 2, "--posix.odirect: option(s) of another API than -a MMAP"},
		// Sizes are units flags: pflag names the flag, units says why.
		{[]string{"-a", "POSIX", "-o", o, "-b", "4q"}, 2, `invalid argument "4q" for "-b, --block-size" flag: size "4q": not a size: want digits with an optional binary suffix`},
		{[]string{"-a", "POSIX", "-o", o, "-t", "1m5"}, 2, `for "-t, --transfer-size" flag: size "1m5": not a size`},
		{[]string{"-a", "POSIX", "-o", o, "-W"}, 2, "-W checks what the write phase wrote: add -w"},
		{[]string{"-a", "PARIO", "-o", "pario:/x", "--pario.strip-size", "0k"}, 2, `invalid argument "0k" for "--pario.strip-size"`},
		{[]string{"-a", "PARIO", "-o", "pario:/x", "--pario.strips", "0:1;5:1"}, 2, "gap"},
	} {
		out, code := pario(t, nil, append([]string{"bench"}, tc.args...)...)
		if code != tc.code || !strings.Contains(out, tc.want) {
			t.Errorf("pario bench %s: exit %d, output %q; want exit %d mentioning %q", strings.Join(tc.args, " "), code, out, tc.code, tc.want)
		}
	}
}

// --analyze prints the pattern analysis without moving data.
func TestAnalyze(t *testing.T) {
	out := mustRun(t, "bench", "--analyze", "-N", "4", "-b", "2m", "-t", "1m", "-s", "4",
		"--pario.strip-size", "1m", "--pario.servers", "4", "--servers", "4", "--link-rate", "117e6", "--disk-rate", "200e6")
	for _, want := range []string{"2-OST", "interleaved"} {
		if !strings.Contains(out, want) {
			t.Errorf("analysis lacks %q:\n%s", want, out)
		}
	}
}

// Under mpirun each process is one rank: rank detection and the
// rendezvous, with the report's task count and a JSON summary.
func TestMpirun(t *testing.T) {
	mpirun, err := exec.LookPath("mpirun")
	if err != nil {
		testenv.SkipOrFail(t, "mpirun not found (Debian: apt-get install openmpi-bin)")
	}
	dir := t.TempDir()
	cmd := exec.Command(mpirun, "--allow-run-as-root", "--oversubscribe", "-np", "4",
		parioBin, "bench", "-a", "POSIX", "-b", "256k", "-t", "64k", "-s", "2", "-w", "-r", "-W", "-R",
		"-o", filepath.Join(dir, "ior.dat"), "-O", "summaryFormat=JSON")
	cmd.Env = append(os.Environ(), "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1", "OMPI_MCA_plm_rsh_agent=")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("mpirun: %v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	var doc struct {
		Summary []struct {
			Operation string `json:"operation"`
			NumTasks  int    `json:"numTasks"`
			XsizeMiB  float64
		} `json:"summary"`
		Verification []struct{ Errors int64 } `json:"verification"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &doc); err != nil {
		t.Fatalf("stdout is not one JSON report (only rank 0 prints): %v\n%s", err, stdout.String())
	}
	if len(doc.Summary) != 2 || doc.Summary[0].NumTasks != 4 || doc.Summary[0].XsizeMiB != 2 {
		t.Errorf("summary %+v, want write and read by 4 tasks of 2 MiB", doc.Summary)
	}
	if len(doc.Verification) != 2 || doc.Verification[0].Errors+doc.Verification[1].Errors != 0 {
		t.Errorf("verification %+v", doc.Verification)
	}
}

// pario bench sweep runs a grid of points and draws it.
func TestSweep(t *testing.T) {
	dir := t.TempDir()
	out := mustRun(t, "bench", "sweep", "--vary", "t=4k,8k", "--vary", "N=1,2", "--out", dir, "--",
		"-a", "DUMMY", "-b", "64k", "-o", "x", "-w", "-r")
	if !strings.Contains(out, "4 points") {
		t.Errorf("output:\n%s", out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "sweep.csv"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[4], "8k,2,") || strings.HasSuffix(lines[4], ",,") {
		t.Errorf("csv:\n%s", b)
	}
	for _, f := range []string{"write.png", "write.svg", "read.png", "read.svg"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
}

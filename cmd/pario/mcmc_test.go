package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pario/pario/internal/testenv"
)

// concatFiles is base's serial files in format order: per run .t then .p.
func concatFiles(t *testing.T, base string, runs int) []byte {
	t.Helper()
	var b []byte
	for r := 1; r <= runs; r++ {
		for _, ext := range []string{".t", ".p"} {
			name := base + ext
			if runs > 1 {
				name = base + ".run" + strconv.Itoa(r) + ext
			}
			data, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			b = append(b, data...)
		}
	}
	return b
}

// pario mcmc: serial and MFG runs as local rank processes give the same
// bytes (the MFG file is the serial files end to end, into a POSIX file
// and into pario files under simple_stripe and varstrip), and split gives
// the serial files back.
func TestMcmcSerialEqualsMFG(t *testing.T) {
	cf := up(t)
	dir := t.TempDir()
	for _, tc := range []struct {
		name   string
		shape  []string
		runs   int
		target string
		extra  []string
	}{
		{"pi_1 varstrip", []string{"--runs", "8", "--chains", "2", "--np", "4"}, 8, "pario:/pi1.mfg", []string{"--layout", "varstrip", "--lambda", "auto"}},
		{"partial-1 simple_stripe", []string{"--runs", "3", "--chains", "5", "--np", "4"}, 3, "pario:/p1.mfg", []string{"--layout", "simple_stripe:strip_size=1k", "--lambda", "3"}},
		{"posix 3.2.7", []string{"--runs", "2", "--chains", "3", "--np", "3", "--format", "3.2.7"}, 2, filepath.Join(dir, "posix.mfg"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			common := append([]string{"--taxa", "12", "--gens", "40", "--samplefreq", "2", "--seed", "5"}, tc.shape...)
			base := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_"))
			run(t, cf, append([]string{"mcmc", "--io", "serial", "-o", base + ".ser"}, common...)...)
			mfgArgs := append(append([]string{"mcmc", "--io", "mfg", "-o", tc.target}, common...), tc.extra...)
			out := run(t, cf, mfgArgs...)
			if !strings.Contains(out, "list writes") {
				t.Errorf("no report:\n%s", out)
			}
			want := concatFiles(t, base+".ser", tc.runs)
			splitArgs := []string{"mcmc", "split", tc.target, "-o", base + ".split"}
			for i, a := range common {
				if a == "--runs" || a == "--taxa" || a == "--gens" || a == "--samplefreq" || a == "--format" {
					splitArgs = append(splitArgs, a, common[i+1])
				}
			}
			run(t, cf, splitArgs...)
			if got := concatFiles(t, base+".split", tc.runs); !bytes.Equal(got, want) {
				t.Errorf("split's files differ from the serial run's (%d B, want %d)", len(got), len(want))
			}
			if !strings.HasPrefix(tc.target, "pario:") {
				if got, err := os.ReadFile(tc.target); err != nil || !bytes.Equal(got, want) {
					t.Errorf("the parallel file is not the serial files end to end (%v)", err)
				}
			}
		})
	}
	// varstrip: each of the 4 datafiles holds the same share, one per
	// rank (viewdist).
	out := run(t, cf, "viewdist", "/pi1.mfg")
	var sizes []string
	for _, line := range strings.Split(out, "\n")[1:] {
		if f := strings.Fields(line); len(f) == 4 && f[0] != "datafile" {
			sizes = append(sizes, f[3])
		}
	}
	if !strings.Contains(out, "varstrip") || len(sizes) != 4 || sizes[0] == "0" || strings.Count(strings.Join(sizes, " "), sizes[0]) != 4 {
		t.Errorf("viewdist /pi1.mfg: want 4 datafiles of one rank's bytes each:\n%s", out)
	}
}

// Bad input gets a clear error and writes nothing.
func TestMcmcBadInput(t *testing.T) {
	cf := up(t)
	dir := t.TempDir()
	good := filepath.Join(dir, "good.mfg")
	run(t, cf, "mcmc", "--runs", "2", "--taxa", "8", "--gens", "4", "-o", good)
	bad := filepath.Join(dir, "bad.mfg")
	b, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] = '\n'
	if err := os.WriteFile(bad, b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"mcmc", "--runs", "0", "-o", filepath.Join(dir, "x")}, "runs must be at least 1"},
		{[]string{"mcmc", "--runs", "2", "--chains", "2", "--np", "5", "-o", filepath.Join(dir, "x")}, "every process needs a chain"},
		{[]string{"mcmc", "--io", "serial", "--runs", "0", "-o", filepath.Join(dir, "x")}, "runs must be at least 1"},
		{[]string{"mcmc", "--runs", "64", "--taxa", "65536", "--gens", "100000", "--lambda", "100000", "-o", filepath.Join(dir, "x")}, "does not fit in memory"},
		{[]string{"mcmc", "--runs", "3", "--chains", "5", "--np", "4", "--layout", "varstrip", "-o", "pario:/x"}, "use simple_stripe"},
		{[]string{"mcmc", "--lambda", "two", "-o", filepath.Join(dir, "x")}, "--lambda"},
		{[]string{"mcmc", "split", bad, "--runs", "2", "--taxa", "8", "--gens", "4", "-o", filepath.Join(dir, "x")}, "split"},
		{[]string{"mcmc", "split", good, "--runs", "3", "--taxa", "8", "--gens", "4", "-o", filepath.Join(dir, "x")}, "the file has"},
	} {
		out, err := runErr(cf, tc.args...)
		if err == nil || !strings.Contains(out, tc.want) {
			t.Errorf("pario %s: %v %q, want an error saying %q", strings.Join(tc.args, " "), err, out, tc.want)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "x*")); len(m) > 0 {
		t.Errorf("bad input wrote %v", m)
	}
	// Usage errors found before any rank starts: exit status 2, said once
	// (not once per rank), nothing written.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"mcmc", "-o", ""}, "-o is empty"},
		{[]string{"mcmc", "--io", "serial", "-o", ""}, "-o is empty"},
		{[]string{"mcmc", "--io", "serial", "-o", "pario:/lay"}, "--io serial writes local files"},
		{[]string{"mcmc", "--np", "2", "--nodes", "2", "--node-cpus", "4611686018427387904", "-o", filepath.Join(dir, "y")}, "--node-cpus"},
		{[]string{"mcmc", "--baseline", "1e-320", "-o", filepath.Join(dir, "y")}, "--baseline"},
		{[]string{"mcmc", "--baseline", "1e308", "-o", filepath.Join(dir, "y")}, "seconds from"},
		{[]string{"mcmc", "--runs", "3", "--chains", "4", "--np", "2", "--layout", "varstrip", "-o", "pario:/y"}, "--layout varstrip"},
		{[]string{"mcmc", "--runs", "8", "--chains", "1", "--np", "8", "--nodes", "8", "--layout", "varstrip", "-o", "pario:/y"}, "the cluster has 4 I/O servers"},
	} {
		out, err := runErr(cf, tc.args...)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || strings.Count(out, tc.want) != 1 {
			t.Errorf("pario %q: %v %q, want exit status 2 and one line saying %q", tc.args, err, out, tc.want)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*y*")); len(m) > 0 {
		t.Errorf("bad input wrote %v", m)
	}
	if _, err := runErr(cf, "stat", "/y"); err == nil {
		t.Error("a refused run created pario:/y")
	}
	if _, err := runErr(cf, "stat", "/x"); err == nil {
		t.Error("a refused varstrip created pario:/x")
	}
}

// The serial baseline keeps 2 x runs files open at rank 0, as MrBayes, and
// fails under `ulimit -n 1024` with 512 runs, as the thesis' did; MFG
// writes one file and does not.
func TestMcmcOpenFileLimit(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatalf("no bash: %v", err)
	}
	dir := t.TempDir()
	limited := func(args ...string) (string, error) {
		script := "ulimit -n 1024 && exec \"$0\" \"$@\""
		cmd := exec.Command(bash, append([]string{"-c", script, parioBin, "mcmc", "--runs", "512", "--chains", "1", "--taxa", "4", "--gens", "2"}, args...)...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := limited("--io", "serial", "-o", filepath.Join(dir, "s"))
	if err == nil || !strings.Contains(out, "too many open files") {
		t.Errorf("serial, 512 runs, ulimit -n 1024: %v\n%s\nwant too many open files", err, out)
	}
	out, err = limited("--io", "mfg", "-o", filepath.Join(dir, "m.mfg"))
	if err != nil {
		t.Errorf("mfg, 512 runs, ulimit -n 1024: %v\n%s", err, out)
	}
}

// Under mpirun every process is one rank, the count the launcher's: the
// MFG file equals a local serial run's files end to end.
func TestMcmcMpirun(t *testing.T) {
	mpirun, err := exec.LookPath("mpirun")
	if err != nil {
		testenv.SkipOrFail(t, "mpirun not found (Debian: apt-get install openmpi-bin)")
		return
	}
	dir := t.TempDir()
	common := []string{"--runs", "6", "--chains", "2", "--taxa", "8", "--gens", "20", "--seed", "9"}
	cmd := exec.Command(mpirun, append([]string{"--allow-run-as-root", "--oversubscribe", "-np", "4", parioBin, "mcmc", "--io", "mfg", "-o", filepath.Join(dir, "m.mfg")}, common...)...)
	cmd.Env = append(os.Environ(),
		"OMPI_MCA_btl_vader_single_copy_mechanism=none", // containers: no CMA
		"OMPI_MCA_plm_rsh_agent=",                       // one host: never ssh
		"OMPI_MCA_rmaps_base_oversubscribe=1",
		"OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1")
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "on 4 processes") {
		t.Fatalf("mpirun pario mcmc: %v\n%s", err, out)
	}
	run(t, "", append([]string{"mcmc", "--io", "serial", "--np", "4", "-o", filepath.Join(dir, "s")}, common...)...)
	got, err := os.ReadFile(filepath.Join(dir, "m.mfg"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, concatFiles(t, filepath.Join(dir, "s"), 6)) {
		t.Error("the MFG file written under mpirun is not the serial files end to end")
	}
}

// An interrupted pario mcmc (Ctrl-C) says so once and exits 130, local
// ranks included, rather than each rank printing the collective call it
// was in ("AllreduceFloat64(Max): context canceled").
func TestMcmcInterrupted(t *testing.T) {
	for _, np := range []string{"1", "2"} {
		t.Run("np "+np, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "x.out")
			cmd := exec.Command(parioBin, "mcmc", "--np", np, "--gens", "1000000000", "-o", out)
			cmd.Env = append(os.Environ(), "PARIO_HOME="+t.TempDir(), "PARIO_CLUSTER=")
			var buf bytes.Buffer
			cmd.Stdout, cmd.Stderr = &buf, &buf
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Second)
			if err := cmd.Process.Signal(os.Interrupt); err != nil {
				t.Fatal(err)
			}
			err := cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 130 {
				t.Errorf("interrupted: %v, want exit status 130\n%s", err, buf.String())
			}
			msg := buf.String()
			if strings.Count(msg, "interrupted") != 1 || strings.Contains(msg, "context canceled") {
				t.Errorf("interrupted, it printed:\n%s\nwant one line saying so", msg)
			}
		})
	}
}

// A serial run or a split that fills the disk, or is interrupted, leaves
// no .t/.p file under its final name (before, a split on a full disk left
// a 448 KiB .run1.t and an empty .run1.p, though its help promises that no
// output is written), and an older output under those names stays whole.
func TestMcmcOutputsAllOrNothing(t *testing.T) {
	cf := up(t)
	src := filepath.Join(t.TempDir(), "big.mfg")
	shape := []string{"--runs", "2", "--taxa", "64", "--gens", "2000"}
	run(t, cf, append([]string{"mcmc", "-o", src}, shape...)...)
	full := testenv.Tmpfs(t, "256k")
	old := filepath.Join(full, "sp.run1.t")
	if err := os.WriteFile(old, []byte("an older, complete output"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := runErr(cf, append([]string{"mcmc", "split", src, "-o", filepath.Join(full, "sp")}, shape...)...)
	if err == nil || !strings.Contains(out, "no space left on device") {
		t.Fatalf("split onto a 256 KiB disk: %v\n%s", err, out)
	}
	out, err = runErr(cf, append([]string{"mcmc", "--io", "serial", "-o", filepath.Join(full, "ser")}, shape...)...)
	if err == nil || !strings.Contains(out, "no space left on device") {
		t.Fatalf("serial run onto a 256 KiB disk: %v\n%s", err, out)
	}
	left, _ := os.ReadDir(full)
	var names []string
	for _, e := range left {
		names = append(names, e.Name())
	}
	if len(names) != 1 || names[0] != "sp.run1.t" {
		t.Errorf("after the failures the disk holds %v, want the older output alone", names)
	}
	if b, _ := os.ReadFile(old); string(b) != "an older, complete output" {
		t.Errorf("the older output became %q", b)
	}

	// Interrupted, a serial run says so and leaves nothing.
	dir := t.TempDir()
	cmd := exec.Command(parioBin, "--cluster", cf, "mcmc", "--io", "serial", "--gens", "1000000000", "-o", filepath.Join(dir, "int"))
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	cmd.Process.Signal(os.Interrupt)
	cmd.Wait()
	if !strings.Contains(buf.String(), "interrupted; no output written") {
		t.Errorf("interrupted serial run printed %q", buf.String())
	}
	if m, _ := os.ReadDir(dir); len(m) > 0 {
		t.Errorf("an interrupted serial run left %d files", len(m))
	}
}

// One rank interrupted on its own (a signal to its process alone): the
// run exits 130 naming that rank, where before it said only that a rank
// failed, "its messages above", with no message above.
func TestMcmcOneRankInterrupted(t *testing.T) {
	out := filepath.Join(t.TempDir(), "x.out")
	cmd := exec.Command(parioBin, "mcmc", "--np", "2", "--gens", "1000000000", "-o", out)
	cmd.Env = append(os.Environ(), "PARIO_HOME="+t.TempDir(), "PARIO_CLUSTER=")
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var ranks []int
	for deadline := time.Now().Add(10 * time.Second); len(ranks) < 2; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the launcher started %d rank processes", len(ranks))
		}
		ranks = childPids(cmd.Process.Pid)
	}
	time.Sleep(500 * time.Millisecond)
	if err := syscall.Kill(ranks[1], syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 || !strings.Contains(buf.String(), "was interrupted; no output written") {
		t.Errorf("one rank interrupted: %v\n%s\nwant exit status 130 and the rank named", err, buf.String())
	}
}

// childPids lists the processes whose parent is pid, by /proc.
func childPids(pid int) []int {
	var kids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so read after ')'.
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			kids = append(kids, n)
		}
	}
	return kids
}

// TestMcmcNoClusterSaidOnce: an --io mfg run into the store with no
// cluster running (mcmc --help's second example, pasted before `pario
// up`) says so once, before any rank starts. Each of 8 ranks said it, and
// the run then called pario:/run.mfg, which it never created, incomplete.
func TestMcmcNoClusterSaidOnce(t *testing.T) {
	out, code := exitCode(t, "mcmc", "--runs", "8", "--chains", "4", "--np", "8", "--taxa", "16", "--gens", "10",
		"--io", "mfg", "-o", "pario:/run.mfg", "--layout", "varstrip")
	if code != 1 || strings.Count(out, "no cluster file") != 1 || strings.Contains(out, "[rank") || strings.Contains(out, "incomplete") {
		t.Errorf("exit %d, want 1 and one line saying there is no cluster file:\n%s", code, out)
	}
}

package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pario/pario/internal/testenv"
)

const farmOrdered = "in  NEWSPAPER ro wo b farm=FASTA\nout NEWSPAPER rc wo b farm=0\n"

// globins is HMMER's tutorial globins45.fa, copies times, each copy's
// names made its own.
func globins(t *testing.T, copies int) []byte {
	t.Helper()
	src, err := os.ReadFile("/usr/share/doc/hmmer/examples/tutorial/globins45.fa")
	if err != nil {
		testenv.SkipOrFail(t, "HMMER's examples (Debian hmmer-examples): %v", err)
	}
	header := regexp.MustCompile(`(?m)^>(\S+)`)
	var b bytes.Buffer
	for i := range copies {
		b.Write(header.ReplaceAll(src, []byte(fmt.Sprintf(">${1}_%d", i))))
	}
	return b.Bytes()
}

func needTools(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := exec.LookPath(n); err != nil {
			testenv.SkipOrFail(t, "%s not installed (Debian hmmer, ncbi-blast+): %v", n, err)
		}
	}
}

func shell(t *testing.T, dir, script string) {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
}

// farmCLI runs `pario farm` in dir and returns its stderr.
func farmCLI(t *testing.T, dir, cluster string, args ...string) (string, error) {
	t.Helper()
	if cluster != "" {
		args = append([]string{"--cluster", cluster}, args...)
	}
	cmd := exec.Command(parioBin, args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if stdout.Len() > 0 {
		t.Errorf("pario farm wrote to stdout (not a terminal, no progress): %q", stdout.String())
	}
	return stderr.String(), err
}

// TestFarmRealTools: pario farm runs HMMER's hmmscan and BLAST's blastp
// over a FASTA input split by records, on local rank processes; ordered,
// the output is byte-identical to one sequential run of the same command.
// The tools' whole-run header and footer (with the date) are comment
// lines, dropped by grep in both runs.
func TestFarmRealTools(t *testing.T) {
	needTools(t, "hmmscan", "hmmpress", "blastp", "makeblastdb")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "q.fa"), globins(t, 3), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "io.ann"), []byte(farmOrdered), 0o644); err != nil {
		t.Fatal(err)
	}
	tut := "/usr/share/doc/hmmer/examples/tutorial"
	shell(t, dir, fmt.Sprintf("cat %[1]s/globins4.hmm %[1]s/fn3.hmm %[1]s/Pkinase.hmm > mini.hmm && hmmpress mini.hmm", tut))
	shell(t, dir, fmt.Sprintf("makeblastdb -in %s/globins45.fa -dbtype prot -out glob", tut))
	for name, argv := range map[string][]string{
		"hmmscan": {"sh", "-c", `hmmscan --cpu 1 --tblout /dev/stdout -o /dev/null mini.hmm - | grep -v '^#'`},
		"blastp":  {"blastp", "-db", "glob", "-outfmt", "6", "-num_threads", "1"},
	} {
		t.Run(name, func(t *testing.T) {
			seq := exec.Command(argv[0], argv[1:]...)
			seq.Dir = dir
			in, err := os.Open(filepath.Join(dir, "q.fa"))
			if err != nil {
				t.Fatal(err)
			}
			defer in.Close()
			seq.Stdin = in
			want, err := seq.Output()
			if err != nil {
				t.Fatalf("sequential %s: %v", name, err)
			}
			if bytes.Count(want, []byte("\n")) < 100 {
				t.Fatalf("sequential %s found %d hits: too few to show anything", name, bytes.Count(want, []byte("\n")))
			}
			out := name + ".out"
			msg, err := farmCLI(t, dir, "", append([]string{"farm", "-N", "3", "--in", "q.fa", "--out", out, "--annotations", "io.ann", "--"}, argv...)...)
			if err != nil {
				t.Fatalf("pario farm: %v\n%s", err, msg)
			}
			got, err := os.ReadFile(filepath.Join(dir, out))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%s: farm output (%d bytes) differs from the sequential run's (%d bytes)", name, len(got), len(want))
			}
			if !strings.Contains(msg, "on 3 ranks") {
				t.Errorf("no summary: %q", msg)
			}
		})
	}
}

// TestFarmToParioFile: the output goes to a pario file with the layout
// given, and with --group to one pario file per group of ranks.
func TestFarmToParioFile(t *testing.T) {
	cf := up(t)
	dir := t.TempDir()
	var in bytes.Buffer
	for i := range 200 {
		fmt.Fprintf(&in, ">r%d\n%s\n", i, strings.Repeat("acgt", 1+i%37))
	}
	if err := os.WriteFile(filepath.Join(dir, "q.fa"), in.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "io.ann"), []byte(farmOrdered), 0o644); err != nil {
		t.Fatal(err)
	}
	want := bytes.ToUpper(in.Bytes())
	msg, err := farmCLI(t, dir, cf, "farm", "-N", "3", "--block", "1k", "--layout", "simple_stripe:strip_size=4k",
		"--in", "q.fa", "--out", "pario:/hits.fa", "--annotations", "io.ann", "--", "tr", "a-z", "A-Z")
	if err != nil {
		t.Fatalf("pario farm: %v\n%s", err, msg)
	}
	got := filepath.Join(dir, "got")
	run(t, cf, "cp", "-q", "pario:/hits.fa", got)
	if b, _ := os.ReadFile(got); !bytes.Equal(b, want) {
		t.Fatalf("pario output differs from the sequential run's")
	}
	if out := run(t, cf, "stat", "/hits.fa"); !strings.Contains(out, "simple_stripe") || (!strings.Contains(out, "4096") && !strings.Contains(out, "4k")) {
		t.Errorf("the output's layout is not the one given:\n%s", out)
	}
	if out := run(t, cf, "ls", "/"); strings.Contains(out, ".farm-") {
		t.Errorf("temporary output left in the store:\n%s", out)
	}

	// A pario input: segments read across the store's strips.
	msg, err = farmCLI(t, dir, cf, "farm", "-N", "2", "--block", "700", "--in", "pario:/hits.fa", "--out", "lower.fa",
		"--annotations", "io.ann", "--", "tr", "A-Z", "a-z")
	if err != nil {
		t.Fatalf("pario farm from a pario input: %v\n%s", err, msg)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "lower.fa")); !bytes.Equal(b, in.Bytes()) {
		t.Fatalf("output from a pario input differs from the sequential run's")
	}

	msg, err = farmCLI(t, dir, cf, "farm", "-N", "4", "--group", "2", "--in", "q.fa", "--out", "pario:/g",
		"--annotations", "io.ann", "--", "tr", "a-z", "A-Z")
	if err != nil {
		t.Fatalf("pario farm --group 2: %v\n%s", err, msg)
	}
	var all []byte
	for g := range 2 {
		p := filepath.Join(dir, fmt.Sprint("g", g))
		run(t, cf, "cp", "-q", fmt.Sprintf("pario:/g.%d", g), p)
		b, _ := os.ReadFile(p)
		if len(b) == 0 {
			t.Fatalf("group %d wrote nothing", g)
		}
		all = append(all, b...)
	}
	if !bytes.Equal(all, want) {
		t.Fatalf("the groups' files, concatenated, differ from the sequential run's output")
	}
}

// TestFarmFailingSegment: a failing run of the command is named with its
// exit status and stderr, the exit status is 1, and nothing is left under
// the output's name.
func TestFarmFailingSegment(t *testing.T) {
	dir := t.TempDir()
	var in bytes.Buffer
	for i := range 20 {
		fmt.Fprintf(&in, ">r%d\nacgt\n", i)
	}
	if err := os.WriteFile(filepath.Join(dir, "q.fa"), in.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "io.ann"), []byte(farmOrdered), 0o644); err != nil {
		t.Fatal(err)
	}
	msg, err := farmCLI(t, dir, "", "farm", "-N", "2", "--block", "1", "--in", "q.fa", "--out", "out.fa", "--annotations", "io.ann", "--",
		"sh", "-c", `if grep -q r7; then echo "r7 is bad" >&2; exit 5; fi; cat`)
	var ee *exec.ExitError
	if err == nil || !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("exit %v, want status 1\n%s", err, msg)
	}
	for _, want := range []string{"segment 7", "exit status 5", "r7 is bad"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the error does not say %q:\n%s", want, msg)
		}
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.Name() != "q.fa" && e.Name() != "io.ann" {
			t.Errorf("%s left behind by a failed run", e.Name())
		}
	}

	// A bad annotation is a usage error naming the file and line.
	if err := os.WriteFile(filepath.Join(dir, "bad.ann"), []byte("in NEWSPAPER ro wo b farm=FASTA\nout LOG rc wo b farm=0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	msg, err = farmCLI(t, dir, "", "farm", "--in", "q.fa", "--out", "out.fa", "--annotations", "bad.ann", "--", "cat")
	if err == nil || !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(msg, "bad.ann:2:") {
		t.Fatalf("bad annotation: %v, want exit 2 naming bad.ann:2\n%s", err, msg)
	}
}

// TestFarmUnderMpirun: launched by Open MPI's mpirun, each process is a
// rank (OMPI_COMM_WORLD_*); four ranks in groups of two write two files,
// which concatenated are the sequential output.
func TestFarmUnderMpirun(t *testing.T) {
	mpirun, err := exec.LookPath("mpirun")
	if err != nil {
		testenv.SkipOrFail(t, "mpirun not found (Debian: apt-get install openmpi-bin)")
	}
	dir := t.TempDir()
	var in bytes.Buffer
	for i := range 100 {
		fmt.Fprintf(&in, ">r%d\n%s\n", i, strings.Repeat("acgt", 1+i%13))
	}
	if err := os.WriteFile(filepath.Join(dir, "q.fa"), in.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "io.ann"), []byte(farmOrdered), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(mpirun, "--allow-run-as-root", "--oversubscribe", "-np", "4",
		parioBin, "farm", "--group", "2", "--block", "100", "--in", "q.fa", "--out", "out", "--", "tr", "a-z", "A-Z")
	cmd.Dir = dir
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PARIO_") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, "PARIO_ANNOTATIONS=io.ann",
		"OMPI_MCA_btl_vader_single_copy_mechanism=none", "OMPI_MCA_plm_rsh_agent=", "OMPI_MCA_rmaps_base_oversubscribe=1",
		"OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("mpirun pario farm: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "on 4 ranks") {
		t.Errorf("no summary from rank 0:\n%s", out)
	}
	var got []byte
	for g := range 2 {
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprint("out.", g)))
		if err != nil || len(b) == 0 {
			t.Fatalf("group %d's file: %v (%d bytes)", g, err, len(b))
		}
		got = append(got, b...)
	}
	if !bytes.Equal(got, bytes.ToUpper(in.Bytes())) {
		t.Fatalf("the groups' files, concatenated, differ from the sequential output")
	}
}

// TestFarmProgressOnTerminal: rank 0's progress lines are drawn in place,
// and a line of other output first clears the progress line.
func TestFarmProgressOnTerminal(t *testing.T) {
	var b bytes.Buffer
	w := farmStderr{&progressLine{w: &b}}
	w.Write([]byte(farmProgressMark + "farm: handed out 1 segments\n"))
	w.Write([]byte(farmProgressMark + "farm: handed out 2 segments\n"))
	w.Write([]byte("[rank 1] a warning\n"))
	w.show.clear()
	want := "\rfarm: handed out 1 segments\x1b[K\rfarm: handed out 2 segments\x1b[K\r\x1b[K[rank 1] a warning\n"
	if b.String() != want {
		t.Fatalf("terminal got %q, want %q", b.String(), want)
	}
}

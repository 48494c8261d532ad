package medic_test

import (
	"bytes"
	"fmt"
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

// A tiny protein database and a self-search against it, made with the real
// BLAST+, so that the sender can encode a genuine blast container.
const tinyProteins = `>sp|P01|ONE one
MKVLAAGIVGLLLAAQPAMAADTKQALEELKKAGVNIEDIRAQGLAKAGY
>sp|P02|TWO two
MSTNPKPQRKTKRNTNRRPQDVKFPGGGQIVGGVYLLPRRGPRLGVRATR
>sp|P03|THREE three
MADEEKLPPGWEKRMSRSSGRVYYFNHITNASQWERPSGNSSSGGKNGQG
`

func tinyBlast(t *testing.T, dir string) (db, query, out string) {
	t.Helper()
	for _, p := range []string{"blastp", "makeblastdb", "blastdbcmd"} {
		if _, err := exec.LookPath(p); err != nil {
			testenv.SkipOrFail(t, "missing %s (Debian package ncbi-blast+)", p)
		}
	}
	fa := filepath.Join(dir, "db.fa")
	os.WriteFile(fa, []byte(tinyProteins), 0o644)
	db = filepath.Join(dir, "db")
	if b, err := exec.Command("makeblastdb", "-in", fa, "-dbtype", "prot", "-parse_seqids", "-out", db).CombinedOutput(); err != nil {
		t.Fatalf("makeblastdb: %v\n%s", err, b)
	}
	query = filepath.Join(dir, "q.fa")
	os.WriteFile(query, []byte(strings.Join(strings.SplitAfter(tinyProteins, "\n")[:2], "")), 0o644)
	out = filepath.Join(dir, "hits.tsv")
	if b, err := exec.Command("blastp", "-query", query, "-db", db, "-outfmt", "6", "-out", out).CombinedOutput(); err != nil {
		t.Fatalf("blastp: %v\n%s", err, b)
	}
	return db, query, out
}

func waitFor(t *testing.T, what string, d time.Duration, ok func() bool) {
	t.Helper()
	for end := time.Now().Add(d); !ok(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("%s: not after %v", what, d)
		}
	}
}

// globs returns the names under dir (recursively) that match pattern.
func globs(dir, pattern string) []string {
	var got []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if ok, _ := filepath.Match(pattern, filepath.Base(p)); ok && err == nil {
			got = append(got, p)
		}
		return nil
	})
	return got
}

// A receiver killed (SIGKILL) while BLAST regenerates an output takes the
// BLAST programs with it, and the next receiver started on the same
// directory removes the temporary output and the work directory it left.
func TestCLIKilledReceiverLeavesNothing(t *testing.T) {
	needMedicCommand(t)
	dir := t.TempDir()
	db, query, hits := tinyBlast(t, dir)
	key := filepath.Join(dir, "k")
	if out, code := run(t, "medic", "keygen", key); code != 0 {
		t.Fatal(out)
	}
	// The storage site's BLAST+ is a stand-in whose first program records
	// its pid and then runs for as long as the test: the regeneration is
	// under way for as long as we like. It answers the receiver's check of
	// blast.db at its start (blastdbcmd -info) as BLAST+ does.
	bin := filepath.Join(dir, "fakeblast")
	os.Mkdir(bin, 0o755)
	pidFile := filepath.Join(dir, "child.pid")
	script := fmt.Sprintf("#!/bin/sh\ncase \"$*\" in *-info*) printf 'Database: fake\\n\\t1 sequences; 10 total residues\\n'; exit 0;; esac\n"+
		"echo $$ > %s.tmp && mv %s.tmp %s\nexec sleep 600\n", pidFile, pidFile, pidFile)
	for _, p := range []string{"blastdbcmd", "makeblastdb", "blastp"} {
		os.WriteFile(filepath.Join(bin, p), []byte(script), 0o755)
	}
	dest := filepath.Join(dir, "dest")
	s := serve(t, "--key", key, "--dir", dest, "--resource", "blast.db="+db, "--resource", "blast.bin="+bin)

	send := exec.Command(parioBin, "medic", "send", hits, s.addr, "--key", key, "--spool", filepath.Join(dir, "spool"), "--plugin", "blast",
		"--param", "program=blastp", "--param", "outfmt=6", "--param", "db="+db, "--param", "query="+query)
	var sout bytes.Buffer
	send.Stdout, send.Stderr = &sout, &sout
	if err := send.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { send.Process.Kill(); send.Wait() })
	var pid int
	waitFor(t, "the regeneration's child started", 20*time.Second, func() bool {
		b, err := os.ReadFile(pidFile)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && pid > 0
	})
	// Should the child survive (the defect), it is this test's to end.
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	tmps := globs(dest, ".medic-hits.tsv.*.tmp")
	work := globs(filepath.Join(dest, ".medic-staging"), "decode-*")
	if len(tmps) != 1 || len(work) != 1 || !testenv.Alive(pid) {
		t.Fatalf("during the regeneration: temporaries %v, work directories %v, child %d alive %v", tmps, work, pid, testenv.Alive(pid))
	}

	s.cmd.Process.Signal(syscall.SIGKILL)
	s.cmd.Wait()
	waitFor(t, fmt.Sprintf("the child (pid %d) died with the receiver", pid), 5*time.Second, func() bool { return !testenv.Alive(pid) })
	if err := send.Wait(); err == nil || !strings.Contains(sout.String(), "send again") {
		t.Fatalf("sender after the crash: %v: %s", err, sout.String())
	}
	if len(globs(dest, ".medic-*.tmp")) != 1 || len(globs(filepath.Join(dest, ".medic-staging"), "decode-*")) != 1 {
		t.Fatal("the killed receiver's leftovers are gone before a restart: the test shows nothing")
	}

	s2 := serve(t, "--key", key, "--dir", dest)
	if left := append(globs(dest, ".medic-*.tmp"), globs(dest, "decode-*")...); len(left) != 0 {
		t.Fatalf("after a restart: %v left\n%s", left, s2.out.String())
	}
	// The log comes through a pipe that exec copies on its own: it may
	// lag the "listening" line on the other pipe.
	says := func() bool {
		log := s2.out.String()
		return strings.Contains(log, "removed the temporary output of an earlier receiver") && strings.Contains(log, "removed the work directory of an earlier receiver")
	}
	for end := time.Now().Add(5 * time.Second); !says() && time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
	}
	if !says() {
		t.Errorf("the restarted receiver does not say what it removed:\n%s", s2.out.String())
	}
}

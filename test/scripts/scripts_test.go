package scripts

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Every script under scripts/ is tried, so that a new one answers -h too.
//
// busy are the programs through which a script does its work: on -h
// none of them may run.
var busy = []string{
	"go", "make", "mpirun", "pario", "zcat", "nice", "python3", "makeblastdb", "blastp",
	"hmmscan", "hmmpress", "parallel", "h5dump", "ncdump", "fusermount3", "curl", "mb", "tee", "fio", "ip", "sudo",
}

func TestScriptsAnswerHelp(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	stubs, ran := t.TempDir(), filepath.Join(t.TempDir(), "ran")
	for _, name := range busy {
		stub := "#!/bin/sh\necho \"$0 $*\" >> '" + ran + "'\nexit 99\n"
		if err := os.WriteFile(filepath.Join(stubs, name), []byte(stub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	scripts, err := filepath.Glob(filepath.Join(root, "scripts", "*.sh"))
	if err != nil || len(scripts) == 0 {
		t.Fatalf("no scripts under %s/scripts: %v", root, err)
	}
	for _, path := range scripts {
		s := filepath.Base(path)
		for _, arg := range []string{"-h", "--help"} {
			os.Remove(ran)
			cmd := exec.Command(bash, path, arg)
			cmd.Dir = t.TempDir()
			cmd.Env = []string{"PATH=" + stubs + ":/usr/bin:/bin", "HOME=" + t.TempDir()}
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), strings.TrimSuffix(s, ".sh")) {
				t.Errorf("scripts/%s %s: %v, want exit status 0 and its usage:\n%s", s, arg, err, out)
			}
			if b, err := os.ReadFile(ran); err == nil {
				t.Errorf("scripts/%s %s started work instead of printing its usage:\n%s", s, arg, b)
			}
		}
	}
}

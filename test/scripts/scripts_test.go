package scripts

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// helpScripts are the scripts docs/hdf5.md, docs/medic.md, docs/mfg.md
// and docs/templates.md name. medic-scenarios.sh and dock-figures.sh ran
// their whole experiment on -h; the getopts ones said "illegal option"
// and exited 2; mfg-speedup.sh built pario first.
var helpScripts = []string{
	"compare-farm.sh",
	"compare-ior-hdf5.sh",
	"dock-figures.sh",
	"hdf5-findings.sh",
	"hdf5-thesis.sh",
	"hdf5-trace.sh",
	"medic-auto-sweep.sh",
	"medic-blast-e2e.sh",
	"medic-scenarios.sh",
	"mfg-exp.sh",
	"mfg-speedup.sh",
}

// busy are the programs through which a script does its work: on -h
// none of them may run.
var busy = []string{
	"go", "make", "mpirun", "pario", "zcat", "nice", "python3", "makeblastdb", "blastp",
	"hmmscan", "hmmpress", "parallel", "h5dump", "ncdump", "fusermount3", "curl", "mb", "tee",
}

func TestScriptsAnswerHelp(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
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
	for _, s := range helpScripts {
		for _, arg := range []string{"-h", "--help"} {
			os.Remove(ran)
			cmd := exec.Command(bash, filepath.Join(root, "scripts", s), arg)
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

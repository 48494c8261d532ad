package main

import (
	"context"
	"errors"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/pario/pario/cluster"
	"github.com/pario/pario/internal/testbin"
)

// pario df: a row per server, and a total that counts the one disk the
// servers of `pario up` share once.
func TestDfCountsSharedDiskOnce(t *testing.T) {
	cf := up(t)
	out := run(t, cf, "df")
	row := regexp.MustCompile(`(?m)^\s*data0\s+\S+\s+(\S+ \S+)\s`).FindStringSubmatch(out)
	total := regexp.MustCompile(`(?m)^\s*total\s+1 file system\s+(\S+ \S+)\s`).FindStringSubmatch(out)
	if row == nil || total == nil || row[1] != total[1] {
		t.Fatalf("df: want a total of one file system, the size of data0's:\n%s", out)
	}
}

// With the metadata server down, df still shows the I/O servers the
// cluster file names, asked directly (as lfs df reports each target), and
// fails saying the metadata server did not answer. Before, it said only
// that, and showed nothing of the servers that were up.
func TestDfWithTheMetadataServerDown(t *testing.T) {
	var logs testbin.LockedBuffer
	p, err := cluster.SpawnProcesses(context.Background(), cluster.ProcessConfig{Binary: parioBin, Dir: t.TempDir(), DataServers: 2, Output: &logs})
	if err != nil {
		t.Fatalf("spawn cluster: %v\n%s", err, logs.String())
	}
	defer p.Close()
	if err := p.Kill("meta"); err != nil {
		t.Fatal(err)
	}
	out, err := runErr(p.ClusterFile, "--op-timeout", "5s", "df")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("df with the metadata server down: %v, want exit status 1\n%s", err, out)
	}
	for _, want := range []string{"data0", "data1", "total", "1 file system", "the metadata server did not answer", "metadata server (" + p.File.Meta + ")"} {
		if !strings.Contains(out, want) {
			t.Errorf("df with the metadata server down lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "did not answer: I/O server") {
		t.Errorf("df calls an I/O server that is up unanswering:\n%s", out)
	}
}

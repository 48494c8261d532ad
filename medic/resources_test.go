package medic_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCLIServeChecksResources: `medic serve` refuses a resource it could
// not use when it starts, naming the flag, the key and the path (exit 2),
// and starts with a good one. Before, --resource blast.db=/missing started
// without complaint and the missing database showed only at the first
// BLAST regeneration, on the sender's side.
func TestCLIServeChecksResources(t *testing.T) {
	needMedicCommand(t)
	dir := t.TempDir()
	db, _, _ := tinyBlast(t, dir)
	key := filepath.Join(dir, "k")
	if out, code := run(t, "medic", "keygen", key); code != 0 {
		t.Fatal(out)
	}
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o644)
	dest := filepath.Join(dir, "dest")
	for _, c := range []struct {
		res  string
		want []string
	}{
		{"blast.db=" + dir + "/missing", []string{"--resource blast.db=" + dir + "/missing: no BLAST database there"}},
		{"blast.db=" + dir, []string{"--resource blast.db=" + dir + ": is a directory"}},
		{"blast.db=" + db + ".pin", []string{"--resource blast.db=" + db + ".pin: names one of the database's files: name the database without .pin (" + db + ")"}},
		{"blast.db=", []string{"--resource blast.db=: empty"}},
		{"blast.bin=" + dir + "/nobin", []string{"--resource blast.bin=" + dir + "/nobin:", "no such file or directory"}},
		{"blast.bin=" + file, []string{"--resource blast.bin=" + file + ": not a directory"}},
		{"blast.bin=" + dir, []string{"--resource blast.bin=" + dir + ":", "blastdbcmd not found in " + dir}},
		{"blast.workers=0", []string{"--resource blast.workers=0: want a positive integer"}},
		{"blast.chunks=x", []string{"--resource blast.chunks=x: want a positive integer"}},
		{"blast.dbb=" + db, []string{"--resource blast.dbb=" + db + ": the blast plugin has no such resource", "blast.db"}},
		{"blst.db=" + db, []string{`--resource blst.db=` + db + `: no plugin "blst" uses it`}},
		{"db=" + db, []string{"--resource db=" + db + ": want PLUGIN.NAME"}},
	} {
		out, code := runBounded(t, 10*time.Second, "medic", "serve", "--listen", "127.0.0.1:0", "--key", key, "--dir", dest, "--resource", c.res)
		if code != 2 || strings.Contains(out, "listening") {
			t.Errorf("serve --resource %s: exit %d, want 2 before listening:\n%s", c.res, code, out)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("serve --resource %s: the error does not say %q:\n%s", c.res, w, out)
			}
		}
	}
	if _, err := os.Stat(dest); err == nil {
		t.Error("a refused serve made its --dir")
	}
	// The database as blast.db names it, with the programs' directory
	// (tinyBlast found them on $PATH).
	bin, _ := exec.LookPath("blastdbcmd")
	serve(t, "--key", key, "--dir", dest, "--resource", "blast.db="+db, "--resource", "blast.bin="+filepath.Dir(bin),
		"--resource", "blast.workers=2")
}

// runBounded is run for a command that may not end (a receiver that
// starts where it should refuse): past d it is killed, and its exit code
// is -1.
func runBounded(t *testing.T, d time.Duration, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	out, err := exec.CommandContext(ctx, parioBin, args...).CombinedOutput()
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return string(out) + fmt.Sprintf("\n(still running after %v: killed)", d), -1
	case errors.As(err, &ee):
		return string(out), ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return string(out), 0
}

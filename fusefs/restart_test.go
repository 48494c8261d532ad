package fusefs_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// After a metadata server restart, the first change waits out the cache
// leases of the previous run, since a mount may still trust its caches;
// a mount that unmounted cleanly gave its lease back, so with no mount
// left the restart waits for nothing, while a mount killed with -9 (which
// gave nothing back) is still waited for. The lease is 10 minutes here,
// so a wait shows as a command that cannot finish, not as a slow one.

// restartLeaseEnv is the servers' lease: a grace period would be 15
// minutes, far past the time the tests allow.
const restartLeaseEnv = "10m"

// TestRestartAfterCleanUnmountDoesNotWait is the reviewer's reproduction:
// mount, mkdir through it, `pario umount`, restart the metadata server,
// `pario cp` into the new directory.
func TestRestartAfterCleanUnmountDoesNotWait(t *testing.T) {
	t.Setenv("PARIO_LEASE", restartLeaseEnv)
	p := spawn(t)
	cf := p.ClusterFile
	dir := t.TempDir()
	_, out, exited := mountCommand(t, dir, "--cluster", cf, "mount", "--metrics", "127.0.0.1:0")
	waitMountLease(t, out)
	sh(t, "mkdir "+filepath.Join(dir, "thatdir"))
	if umount, err := exec.Command(parioBin, "umount", dir).CombinedOutput(); err != nil {
		t.Fatalf("pario umount: %v\n%s", err, umount)
	}
	exitsCleanly(t, exited, dir)

	restartMetaServer(t, p.Kill, p.StartMeta)
	local := filepath.Join(t.TempDir(), "somefile")
	writeFile(t, local, []byte("x\n"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if cp, err := exec.CommandContext(ctx, parioBin, "--cluster", cf, "--op-timeout", "30s", "cp", local, "pario:/thatdir/x").CombinedOutput(); err != nil {
		t.Fatalf("pario cp after a restart with no mount left: %v (the grace period of a lease given back?)\n%s", err, cp)
	}
}

// TestRestartAfterKilledMountWaits: a mount killed with -9 never gave its
// lease back, so the restarted server answers no change before that lease
// would have ended.
func TestRestartAfterKilledMountWaits(t *testing.T) {
	t.Setenv("PARIO_LEASE", restartLeaseEnv)
	p := spawn(t)
	cf := p.ClusterFile
	dir := t.TempDir()
	cmd, out, exited := mountCommand(t, dir, "--cluster", cf, "mount", "--metrics", "127.0.0.1:0")
	waitMountLease(t, out)
	sh(t, "mkdir "+filepath.Join(dir, "thatdir"))
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-exited
	if umount, err := exec.Command(parioBin, "umount", dir).CombinedOutput(); err != nil {
		t.Fatalf("pario umount of a killed mount: %v\n%s", err, umount)
	}

	restartMetaServer(t, p.Kill, p.StartMeta)
	mkdir, err := exec.Command(parioBin, "--cluster", cf, "--op-timeout", "3s", "mkdir", "/other").CombinedOutput()
	if err == nil {
		t.Fatalf("pario mkdir answered at once after a restart, though a killed mount's lease may still run:\n%s", mkdir)
	}
	if !strings.Contains(string(mkdir), "metadata server") {
		t.Fatalf("pario mkdir failed otherwise than by waiting for the metadata server: %v\n%s", err, mkdir)
	}
	// Its mkdir still waits: a clean stop would wait for it first.
	if err := p.Kill("meta"); err != nil {
		t.Fatal(err)
	}
}

// restartMetaServer kills the metadata server (-9) and starts it again.
func restartMetaServer(t *testing.T, kill func(string) error, start func(context.Context) error) {
	t.Helper()
	if err := kill("meta"); err != nil {
		t.Fatal(err)
	}
	if err := start(context.Background()); err != nil {
		t.Fatal(err)
	}
}

package medic_test

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pario/pario/internal/testenv"
	"github.com/pario/pario/medic"
	"github.com/pario/pario/medic/medictest"
)

// sleeperPlugin regenerates nothing: its Decode runs a shell through
// medic.Command that starts a long sleep of its own (a grandchild of the
// receiver) and waits for it.
type sleeperPlugin struct{}

func (sleeperPlugin) Name() string                                          { return "sleeper-test" }
func (sleeperPlugin) Encode(context.Context, medic.Source, io.Writer) error { return nil }
func (sleeperPlugin) Decode(ctx context.Context, _ io.Reader, _ io.Writer, env medic.Env) error {
	pidFile, err := env.Resource("sleeper-test.pidfile")
	if err != nil {
		return err
	}
	cmd := medic.Command(ctx, "sh", "-c", `sleep 600 & echo $! > "$1.tmp" && mv "$1.tmp" "$1"; wait`, "sh", pidFile)
	return medic.RunCommand(cmd)
}

func init() { medic.Register(sleeperPlugin{}) }

// Closing a receiver cancels its regenerations, and that kills the whole
// process group of every program a plugin runs, grandchildren included;
// the work directory and the temporary output go too.
func TestCloseKillsRegenerationGroup(t *testing.T) {
	s := &site{key: medictest.Key(t)}
	pidFile := filepath.Join(t.TempDir(), "sleep.pid")
	startServer(t, s, map[string]string{"sleeper-test.pidfile": pidFile}, nil)
	p := writeFile(t, "out.txt", []byte("anything\n"))
	errc := make(chan error, 1)
	go func() {
		_, err := sendFile(t, s, p, "sleeper-test", medic.SendOptions{})
		errc <- err
	}()
	var pid int
	waitFor(t, "the plugin's grandchild started", 10*time.Second, func() bool {
		b, err := os.ReadFile(pidFile)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && pid > 0
	})
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	if len(globs(s.staging, "decode-*")) != 1 || len(globs(s.dest, ".medic-*.tmp")) != 1 {
		t.Fatalf("during the regeneration: work directories %v, temporaries %v", globs(s.staging, "decode-*"), globs(s.dest, ".medic-*.tmp"))
	}

	// A second receiver started on the same directories meanwhile leaves
	// the live regeneration's files alone.
	other, err := medic.NewServer(medic.ServerConfig{Key: s.key, Store: medic.DirStore(s.dest), StagingDir: s.staging})
	if err != nil {
		t.Fatal(err)
	}
	other.Close()
	if len(globs(s.staging, "decode-*")) != 1 || len(globs(s.dest, ".medic-*.tmp")) != 1 {
		t.Fatal("a second receiver removed the files of a live regeneration")
	}

	done := make(chan struct{})
	go func() { s.srv.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return: the regeneration was not canceled")
	}
	waitFor(t, "the grandchild died with the canceled regeneration", 5*time.Second, func() bool { return !testenv.Alive(pid) })
	if err := <-errc; err == nil {
		t.Fatal("the send succeeded although the receiver closed during the regeneration")
	}
	if left := append(globs(s.staging, "decode-*"), globs(s.dest, ".medic-*.tmp")...); len(left) != 0 {
		t.Fatalf("left after Close: %v", left)
	}
	// The container stays staged: the next receiver regenerates it
	// without a new transfer.
	if parts := globs(s.staging, "*.part"); len(parts) != 1 {
		t.Fatalf("staged after Close: %v, want the container kept", parts)
	}
}

// A work directory without an owner note (an older receiver's) is not
// provably stale: a starting receiver leaves it, and says so.
func TestStaleWithoutNoteKept(t *testing.T) {
	dest, staging := t.TempDir(), t.TempDir()
	old := filepath.Join(staging, "decode-123")
	os.Mkdir(old, 0o700)
	var log strings.Builder
	srv, err := medic.NewServer(medic.ServerConfig{Key: medictest.Key(t), Store: medic.DirStore(dest), StagingDir: staging, Logger: newTextLogger(&log)})
	if err != nil {
		t.Fatal(err)
	}
	srv.Close()
	if _, err := os.Stat(old); err != nil || !strings.Contains(log.String(), "without an owner note") {
		t.Fatalf("old work directory: %v; log:\n%s", err, log.String())
	}
}

func newTextLogger(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }

// RemoveTemp takes only the store's own temporary files, whatever a note
// in the staging directory says.
func TestRemoveTempRefusesOtherFiles(t *testing.T) {
	dest := t.TempDir()
	st := medic.DirStore(dest)
	os.WriteFile(filepath.Join(dest, "keep.txt"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(dest, ".medic-a.txt.1.tmp"), nil, 0o644)
	for _, name := range []string{"keep.txt", "../x/.medic-a.1.tmp", "/tmp/.medic-a.1.tmp", "", ".", "sub/../.medic-a.txt.1.tmp", ".medic-a.txt.1"} {
		if err := st.RemoveTemp(context.Background(), name); err == nil || errors.Is(err, fs.ErrNotExist) {
			t.Errorf("RemoveTemp(%q) = %v, want a refusal", name, err)
		}
	}
	if err := st.RemoveTemp(context.Background(), ".medic-a.txt.1.tmp"); err != nil {
		t.Fatal(err)
	}
	if err := st.RemoveTemp(context.Background(), ".medic-a.txt.1.tmp"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("second removal: %v, want ErrNotExist", err)
	}
	onlyFiles(t, dest, "keep.txt")
}

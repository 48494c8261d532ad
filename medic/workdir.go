package medic

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Each regeneration works in a directory of its own under the staging
// directory, decode-*, which it holds locked (flock on the directory)
// for as long as it runs, and in which it notes the store's temporary
// file as soon as it has one. A receiver that dies during a regeneration
// (SIGKILL, a crash) leaves both behind, but the kernel drops its lock: a
// receiver that starts later and can take the lock of a decode-*
// directory holding a note knows that its owner is gone, and removes the
// directory and the temporary file the note names. The note is written
// under the lock, so a directory being set up (locked, no note yet) is
// never taken for stale.

const (
	workPrefix = "decode-"
	ownerNote  = "owner"
	pluginDir  = "tmp" // the plugin's Env.TempDir, beside the note
)

type workDir struct {
	path string
	dir  *os.File // open and locked while the regeneration runs
}

// newWorkDir makes and locks a work directory under staging.
func newWorkDir(staging string) (*workDir, error) {
	p, err := os.MkdirTemp(staging, workPrefix)
	if err != nil {
		return nil, err
	}
	w := &workDir{path: p}
	if w.dir, err = os.Open(p); err == nil {
		err = lockFile(w.dir)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(p, ownerNote), fmt.Appendf(nil, "pid %d\n", os.Getpid()), 0o600)
	}
	if err == nil {
		err = os.Mkdir(filepath.Join(p, pluginDir), 0o700)
	}
	if err != nil {
		w.remove()
		return nil, fmt.Errorf("work directory %s: %w", p, err)
	}
	return w, nil
}

// tempDir is where the plugin may keep its files.
func (w *workDir) tempDir() string { return filepath.Join(w.path, pluginDir) }

// noteTemp records the store's temporary file (Pending.Temp).
func (w *workDir) noteTemp(temp string) error {
	f, err := os.OpenFile(filepath.Join(w.path, ownerNote), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(f, "temp %s\n", strconv.Quote(temp))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// remove deletes the directory, then lets go of its lock.
func (w *workDir) remove() {
	os.RemoveAll(w.path)
	if w.dir != nil {
		w.dir.Close()
	}
}

// removeStale removes the work directories under staging whose receiver
// is gone, and the store's temporary files they name; it logs what it
// removed, and warns about decode-* directories it cannot prove stale.
func removeStale(ctx context.Context, staging string, st Store, log *slog.Logger) {
	es, err := os.ReadDir(staging)
	if err != nil {
		log.Warn("medic: cannot look for what an earlier receiver left", "dir", staging, "err", err)
		return
	}
	for _, e := range es {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), workPrefix) {
			continue
		}
		removeIfStale(ctx, filepath.Join(staging, e.Name()), st, log)
	}
}

func removeIfStale(ctx context.Context, p string, st Store, log *slog.Logger) {
	d, err := os.Open(p)
	if err != nil {
		return
	}
	defer d.Close()
	if !tryLockFile(d) {
		return // a live receiver's
	}
	note, err := os.ReadFile(filepath.Join(p, ownerNote))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			log.Warn("medic: staging holds a work directory without an owner note (left by an older receiver?); remove it by hand once no receiver uses it", "path", p)
		}
		return
	}
	owner, temps := parseNote(note)
	for _, t := range temps {
		switch err := st.RemoveTemp(ctx, t); {
		case err == nil:
			log.Info("medic: removed the temporary output of an earlier receiver", "path", t, "store", st.String(), "pid", owner)
		case errors.Is(err, fs.ErrNotExist):
		default:
			log.Warn("medic: cannot remove the temporary output of an earlier receiver", "path", t, "store", st.String(), "err", err)
		}
	}
	if err := os.RemoveAll(p); err != nil {
		log.Warn("medic: cannot remove the work directory of an earlier receiver", "path", p, "err", err)
		return
	}
	log.Info("medic: removed the work directory of an earlier receiver", "path", p, "pid", owner)
}

// parseNote reads an owner note: "pid N" and "temp QUOTED" lines.
func parseNote(b []byte) (pid string, temps []string) {
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), " ")
		switch k {
		case "pid":
			pid = v
		case "temp":
			if t, err := strconv.Unquote(v); err == nil {
				temps = append(temps, t)
			}
		}
	}
	return pid, temps
}

// Package benchutil holds what pario's benchmark programs (tools/storebench,
// tools/mountbench, tools/metabench) share: making reads cold, medians,
// size labels, and mounting pario as its own process.
package benchutil

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"golang.org/x/sys/unix"
)

// DropMethod says how DropCaches will make reads cold on this machine.
func DropMethod() string {
	if unix.Access("/proc/sys/vm/drop_caches", unix.W_OK) == nil {
		return "sync + echo 3 > /proc/sys/vm/drop_caches"
	}
	return "posix_fadvise(DONTNEED) on every file under the bench directory (not root)"
}

// DropCaches makes the next read cold: the whole page cache when we may,
// else every file under dir (synced first, so its pages can be dropped).
func DropCaches(dir string) error {
	unix.Sync()
	if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("3\n"), 0); err == nil {
		return nil
	}
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return nil
		}
		defer f.Close()
		_ = f.Sync()
		return unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
	})
}

// Median returns the median of v (0 for none), leaving v as it is.
func Median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// WorkDir returns the absolute path of a benchmark's working directory:
// dir if given, else a new directory tmp/PREFIX-* under the current one
// (the repository's ignored tmp/, on the disk being measured rather than
// a tmpfs /tmp). Unless keep, remove removes it when the run is done.
func WorkDir(dir, prefix string, keep bool) (abs string, remove func(), err error) {
	if dir == "" {
		if err := os.MkdirAll("tmp", 0o755); err != nil {
			return "", nil, err
		}
		if dir, err = os.MkdirTemp("tmp", prefix+"-"); err != nil {
			return "", nil, err
		}
	}
	if abs, err = filepath.Abs(dir); err != nil {
		return "", nil, err
	}
	remove = func() {}
	if !keep {
		remove = func() { os.RemoveAll(abs) }
	}
	return abs, remove, nil
}

package benchutil

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWorkDir(t *testing.T) {
	t.Chdir(t.TempDir())

	dir, remove, err := WorkDir("", "bench", false)
	if err != nil {
		t.Fatal(err)
	}
	if !filepath.IsAbs(dir) || !strings.HasPrefix(filepath.Base(dir), "bench-") || filepath.Base(filepath.Dir(dir)) != "tmp" {
		t.Errorf("new work dir %q, want an absolute tmp/bench-*", dir)
	}
	remove()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("after remove: %v, want it gone", err)
	}

	given := "mine"
	if err := os.Mkdir(given, 0o755); err != nil {
		t.Fatal(err)
	}
	dir, remove, err = WorkDir(given, "bench", true)
	if err != nil {
		t.Fatal(err)
	}
	remove()
	if abs, _ := filepath.Abs(given); dir != abs {
		t.Errorf("given dir came back as %q, want %q", dir, abs)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("kept dir: %v", err)
	}
}

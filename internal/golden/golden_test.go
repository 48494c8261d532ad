package golden

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recorder is a testing.TB that records failures instead of stopping.
type recorder struct {
	testing.TB
	errors []string
	fatal  bool
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, format)
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.errors = append(r.errors, format)
	r.fatal = true
}
func (r *recorder) Fatal(args ...any) { r.fatal = true }

func TestCheck(t *testing.T) {
	path := filepath.Join(t.TempDir(), "report", "a.txt")

	r := &recorder{TB: t}
	Check(r, path, []byte("one\n"), false)
	if !r.fatal || !strings.Contains(r.errors[0], "creates it") {
		t.Fatalf("a missing golden file: %v, want a fatal error saying how to create it", r.errors)
	}

	r = &recorder{TB: t}
	Check(r, path, []byte("one\n"), true)
	if len(r.errors) != 0 {
		t.Fatalf("update: %v", r.errors)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "one\n" {
		t.Fatalf("update wrote %q, %v", b, err)
	}

	r = &recorder{TB: t}
	Check(r, path, []byte("one\n"), false)
	if len(r.errors) != 0 {
		t.Fatalf("same output: %v", r.errors)
	}

	r = &recorder{TB: t}
	Check(r, path, []byte("two\n"), false)
	if len(r.errors) != 1 || r.fatal || !strings.Contains(r.errors[0], "differs") {
		t.Fatalf("different output: %v (fatal %v), want one error saying it differs", r.errors, r.fatal)
	}
}

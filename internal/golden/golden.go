// Package golden compares a test's output with a file kept under testdata
// (a golden file) and rewrites the file when the test runs with its
// package's -update flag, so that a change of output is reviewed as a diff.
package golden

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// Check compares got with the file at path, failing t with both texts if
// they differ; with update it writes got to path instead.
func Check(t testing.TB, path string, got []byte, update bool) {
	t.Helper()
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test PKG -run TEST -update creates it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test PKG -run TEST -update rewrites it); got:\n%s\nwant:\n%s", path, got, want)
	}
}

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSecretCommand: `pario secret` writes a secret the servers accept,
// never over an existing one, and the servers refuse a secret file that
// others may read.
func TestSecretCommand(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "secret")
	run(t, "", "secret", p)
	if st, err := os.Stat(p); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("pario secret: %v %v", st, err)
	}
	if out, err := runErr("", "secret", p); err == nil || !strings.Contains(out, "exists") {
		t.Fatalf("pario secret over an existing file: %v %q", err, out)
	}
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := runErr("", "data", "--name", "d0", "--dir", filepath.Join(dir, "d0"), "--listen", "127.0.0.1:0", "--secret-file", p)
	if err == nil || !strings.Contains(out, p) || !strings.Contains(out, "chmod 600") {
		t.Fatalf("pario data with a 0644 secret: %v %q", err, out)
	}
}

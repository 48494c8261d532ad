package client_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pario/pario/client"
	"github.com/pario/pario/cluster"
	"github.com/pario/pario/internal/testbin"
)

// The report, with real server processes: back up meta.db, create
// /secret-report.txt, restore the backup (after a crash), copy a 1-byte
// file to /newfile.txt: it reads back as its 1 byte, not as the report.
// Then `pario meta` on an empty --dir against these I/O servers refuses to
// start, saying how to recover. Both failed on the code where writes
// created datafiles.
func TestProcessesRestoredMetaDB(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	var logs testbin.LockedBuffer
	p, err := cluster.SpawnProcesses(ctx, cluster.ProcessConfig{Binary: parioBin, Dir: dir, DataServers: 4, Output: &logs})
	if err != nil {
		t.Fatalf("spawn cluster: %v\n%s", err, logs.String())
	}
	defer p.Close()
	db := filepath.Join(dir, "meta", "meta.db")
	put := func(path string, b []byte) {
		t.Helper()
		c := dial(t, p)
		f, err := c.Create(ctx, path, client.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt(b, 0); err != nil {
			t.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	get := func(path string) []byte {
		t.Helper()
		c := dial(t, p)
		f, err := c.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		size, err := f.Size(ctx)
		if err != nil {
			t.Fatal(err)
		}
		b := make([]byte, size)
		if _, err := f.ReadAt(b, 0); err != nil {
			t.Fatal(err)
		}
		return b
	}

	if err := p.Stop("meta"); err != nil {
		t.Fatal(err)
	}
	backup, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.StartMeta(ctx); err != nil {
		t.Fatalf("%v\n%s", err, logs.String())
	}
	put("/secret-report.txt", bytes.Repeat([]byte("CONFIDENTIAL "), 64893/13+1)[:64893])
	if err := p.Kill("meta"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(db, backup, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := p.StartMeta(ctx); err != nil {
		t.Fatalf("%v\n%s", err, logs.String())
	}
	put("/newfile.txt", []byte("x"))
	if got := get("/newfile.txt"); string(got) != "x" {
		t.Fatalf("/newfile.txt reads back %d bytes (%.20q...), want its 1", len(got), got)
	}

	if err := p.Stop("meta"); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "meta")); err != nil {
		t.Fatal(err)
	}
	if err := p.StartMeta(ctx); err == nil {
		t.Fatal("pario meta started on an empty --dir against I/O servers with data")
	}
	for _, w := range []string{"refusing to start", "another cluster incarnation", "--adopt-data"} {
		if !strings.Contains(logs.String(), w) {
			t.Fatalf("pario meta's output does not say %q:\n%s", w, logs.String())
		}
	}
}

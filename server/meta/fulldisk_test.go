package meta

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pario/pario/internal/testenv"
)

// TestRemovesOnAFullDisk: with the disk the metadata server shares with
// the I/O servers filled by data, removes still commit, so that a user
// can free the disk. Under deferred durability the pages of the commits
// since the last checkpoint stay pinned by its anchor (durable.go), so
// each commit grew meta.db into blocks the disk no longer had: `rm` on a
// full disk failed with ENOSPC (fusefs TestFullDiskThroughTheMount, once
// in CI). A commit that finds the disk full now checkpoints and tries
// again.
func TestRemovesOnAFullDisk(t *testing.T) {
	// With a commit synced each time, as a control, freed pages are used
	// again at once.
	for _, mode := range []struct {
		name     string
		interval time.Duration
	}{{"deferred", 0}, {"synced", -1}} {
		t.Run(mode.name, func(t *testing.T) { removesOnAFullDisk(t, mode.interval) })
	}
}

func removesOnAFullDisk(t *testing.T, interval time.Duration) {
	dir := testenv.Tmpfs(t, "16m")
	s, err := Open(filepath.Join(dir, "meta.db"), Options{Servers: 1, SyncInterval: interval})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	const n = 300
	for i := range n {
		okAttr(t)(s.Mknod(ctx, fmt.Sprintf("/f%03d", i), KindFIFO, 0o644, 0))
	}
	// The data: everything else the disk has.
	filler, err := os.Create(filepath.Join(dir, "data"))
	if err != nil {
		t.Fatal(err)
	}
	chunk := bytes.Repeat([]byte{1}, 64<<10)
	for {
		if _, err := filler.Write(chunk); err != nil {
			break
		}
	}
	filler.Close()
	for i := range n {
		if _, err := s.Remove(ctx, fmt.Sprintf("/f%03d", i)); err != nil {
			t.Fatalf("remove %d of %d on the full disk: %v", i+1, n, err)
		}
	}
}

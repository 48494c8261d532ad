package client_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/pario/pario/client"
	"github.com/pario/pario/fsck"
)

// fsck --repair, run again and again with no grace period while clients
// create, write, sync, rename across directories, link and remove files,
// and while an I/O server and then the metadata server are killed and
// restarted, loses none of the files: every one a writer finished reads
// back, and a last fsck finds at most orphans of files that are not (a
// create or remove a restart cut). Before the metadata server named the
// datafiles creates were making ahead of their commit (pools empty: at
// start, after a restart), --repair took them for orphans.
func TestFsckRepairRacesWorkload(t *testing.T) {
	p := spawn(t)
	c := dial(t, p)
	// Workers and restarts stop at ctx's end; each operation itself runs
	// under work, which is not cut short (a remove cut between its commit
	// and its datafiles would leave orphans to explain).
	ctx, cancel := context.WithTimeout(context.Background(), 18*time.Second)
	defer cancel()
	work := context.Background()
	for _, d := range []string{"/a", "/b", "/moved"} {
		if err := c.Mkdir(context.Background(), d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	done := map[string][32]byte{} // path -> sha of a finished, synced file
	var wg, workers sync.WaitGroup
	for w := range 3 {
		workers.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 9))
			for i := 0; ctx.Err() == nil; i++ {
				path := fmt.Sprintf("/%s/w%d-%d", []string{"a", "b"}[w%2], w, i)
				layout := []string{"basic", "simple_stripe:strip_size=4096"}[i%2]
				f, err := c.Create(work, path, client.CreateOptions{Layout: mustLayout(t, layout)})
				if err != nil {
					continue // a server restarting: not a finished file
				}
				b := randomBytes(t, int64(1+rng.IntN(40000)))
				if _, err := f.WriteAt(b, 0); err != nil {
					f.Close()
					continue
				}
				if err := f.Sync(); err != nil {
					f.Close()
					continue
				}
				a := f.Attr()
				f.Close()
				switch rng.IntN(4) {
				case 0:
					np := fmt.Sprintf("/moved/w%d-%d", w, i)
					if err := c.Rename(work, path, np); err != nil {
						continue
					}
					path = np
				case 1:
					if err := c.Remove(work, path); err != nil {
						continue
					}
					continue
				case 2:
					np := path + ".link"
					if _, err := c.Link(work, a.ID, np); err != nil {
						continue
					}
					if err := c.Remove(work, path); err != nil {
						continue
					}
					path = np
				}
				mu.Lock()
				done[path] = sha256.Sum256(b)
				mu.Unlock()
			}
		})
	}
	wg.Go(func() {
		// An I/O server, then the metadata server, restarted mid-run.
		for _, name := range []string{p.File.Data[2].Name, "meta"} {
			select {
			case <-ctx.Done():
				return
			case <-time.After(6 * time.Second):
			}
			if err := p.Kill(name); err != nil {
				t.Errorf("kill %s: %v", name, err)
			}
			var err error
			if name == "meta" {
				err = p.StartMeta(context.Background())
			} else {
				err = p.StartData(context.Background(), 2)
			}
			if err != nil {
				t.Errorf("restart %s: %v", name, err)
			}
		}
	})
	stopped := make(chan struct{})
	go func() { workers.Wait(); close(stopped) }()
	rounds, failed := 0, 0
	for running := true; running; {
		select {
		case <-stopped:
			running = false
		default:
		}
		res, err := c.Fsck(work, client.FsckOptions{Rules: fsck.Rules{Grace: 0, DatafilesAtCreate: true}, Repair: true})
		if err != nil {
			failed++ // the metadata server restarting
			continue
		}
		rounds++
		for _, f := range res.Findings {
			t.Logf("round %d: %v", rounds, f)
		}
	}
	wg.Wait()
	t.Logf("%d fsck rounds (%d failed), %d files", rounds, failed, len(done))
	for path, sum := range done {
		f, err := c.Open(context.Background(), path)
		if err != nil {
			t.Errorf("open %s: %v", path, err)
			continue
		}
		b := readAll(t, f, f.Attr().Size)
		f.Close()
		if got := sha256.Sum256(b); !bytes.Equal(got[:], sum[:]) {
			t.Errorf("%s: %d bytes read back differ", path, len(b))
		}
	}
	res, err := c.Fsck(context.Background(), client.FsckOptions{Rules: fsck.Rules{Grace: 0, DatafilesAtCreate: true}})
	if err != nil {
		t.Fatal(err)
	}
	names := map[uint64]string{}
	for path := range done {
		f, err := c.Open(context.Background(), path)
		if err == nil {
			names[uint64(f.Attr().ID)] = path
			f.Close()
		}
	}
	for _, f := range res.Findings {
		if path, ok := names[f.ID]; f.Kind != fsck.OrphanDatafile || ok {
			t.Errorf("after the run: %v (a finished file: %q)", f, path)
		}
	}
}

package client_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pario/pario/client"
)

// Concurrent creates and removes share the metadata server's commits
// (group commit); a SIGKILL of the metadata server in the middle of them
// loses none that was answered: after a restart every acknowledged create
// is there and every acknowledged remove is gone.
func TestConcurrentNamespaceChangesSurviveMetaKill(t *testing.T) {
	p := spawn(t)
	c := dial(t, p, fastRetries)
	ctx := context.Background()
	const workers = 8
	type outcome struct{ created, removed []string }
	results := make([]outcome, workers)
	for w := range workers {
		if err := c.Mkdir(ctx, fmt.Sprintf("/w%d", w), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var acked atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			out := &results[w]
			for i := 0; ; i++ {
				name := fmt.Sprintf("/w%d/f%d", w, i)
				f, err := c.Create(ctx, name, client.CreateOptions{})
				if err != nil {
					return // the kill
				}
				f.Close()
				out.created = append(out.created, name)
				acked.Add(1)
				if i%2 == 1 {
					if err := c.Remove(ctx, name); err != nil {
						// Unanswered, so it may or may not have happened.
						out.created = out.created[:len(out.created)-1]
						return
					}
					out.removed = append(out.removed, name)
				}
			}
		})
	}
	for deadline := time.Now().Add(30 * time.Second); acked.Load() < 200 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if err := p.Kill("meta"); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if acked.Load() == 0 {
		t.Fatal("no create succeeded before the kill")
	}
	if err := p.StartMeta(ctx); err != nil {
		t.Fatal(err)
	}
	c2 := dial(t, p)
	var creates, removes int
	for _, out := range results {
		gone := map[string]bool{}
		for _, name := range out.removed {
			gone[name] = true
			removes++
			if _, err := c2.Lookup(ctx, name); err == nil {
				t.Errorf("%s: acknowledged remove lost in the crash", name)
			}
		}
		for _, name := range out.created {
			if gone[name] {
				continue
			}
			creates++
			if _, err := c2.Lookup(ctx, name); err != nil {
				t.Errorf("%s: acknowledged create lost in the crash: %v", name, err)
			}
		}
	}
	t.Logf("checked %d acknowledged creates and %d removes", creates, removes)
}

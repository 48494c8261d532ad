package medic_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pario/pario/medic"
	"github.com/pario/pario/medic/medictest"
)

// turnsPlugin ships the output as it is and, regenerating, counts how
// many of its regenerations run at once.
type turnsPlugin struct{}

var turnsRunning, turnsMost atomic.Int64

func (turnsPlugin) Name() string       { return "turns-test" }
func (turnsPlugin) RegenRate() float64 { return 1e6 }

func (turnsPlugin) Encode(ctx context.Context, src medic.Source, meta io.Writer) error {
	return slowPlugin{}.Encode(ctx, src, meta) // the output as it is
}

func (turnsPlugin) Decode(ctx context.Context, meta io.Reader, out io.Writer, _ medic.Env) error {
	n := turnsRunning.Add(1)
	defer turnsRunning.Add(-1)
	for {
		m := turnsMost.Load()
		if n <= m || turnsMost.CompareAndSwap(m, n) {
			break
		}
	}
	select {
	case <-time.After(300 * time.Millisecond):
	case <-ctx.Done():
		return ctx.Err()
	}
	_, err := io.Copy(out, meta)
	return err
}

func init() { medic.Register(turnsPlugin{}) }

// Outputs that arrive together are regenerated MaxRegens at a time, the
// others waiting their turn, and every one is stored. Before, each ran
// at once: as many searches on the receiver as senders.
func TestRegenerationsTakeTurns(t *testing.T) {
	key := medictest.Key(t)
	dest := t.TempDir()
	_, addr := serveConfig(t, medic.ServerConfig{Key: key, Store: medic.DirStore(dest), MaxRegens: 2})
	turnsMost.Store(0)
	const senders = 5
	var wg sync.WaitGroup
	errs := make(chan error, senders)
	for i := range senders {
		p := writeFile(t, fmt.Sprintf("out%d.txt", i), report(100+i))
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := medic.SendFile(context.Background(), p, medic.SendFileOptions{
				Encode:   medic.EncodeOptions{Plugin: "turns-test", Cipher: medic.CipherXChaCha20Poly1305, Key: key},
				Send:     medic.SendOptions{Addr: addr, Key: key},
				SpoolDir: t.TempDir(),
			})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if most := turnsMost.Load(); most != 2 {
		t.Errorf("%d regenerations ran at once with MaxRegens 2", most)
	}
	for i := range senders {
		if _, err := os.Stat(filepath.Join(dest, fmt.Sprintf("out%d.txt", i))); err != nil {
			t.Error(err)
		}
	}
}

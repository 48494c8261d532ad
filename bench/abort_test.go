package bench_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pario/pario/bench"
	"github.com/pario/pario/bench/backend"
)

// stuck is shared by the ranks of TestFailedRankAbortsStuckRanks.
type stuck struct {
	once    sync.Once
	aborted chan struct{}
	code    int
}

// stuckDriver is POSIX whose rank 0 fails to create the file while rank
// 1 waits in the create for it, as ranks of HDF5 wait in a barrier of a
// collective call that a failed rank left early; Abort lets them go.
type stuckDriver struct {
	backend.Driver
	s *stuck
}

func (d *stuckDriver) Open(ctx context.Context, env backend.Env) (backend.Backend, error) {
	be, err := d.Driver.Open(ctx, env)
	if err != nil {
		return nil, err
	}
	return &stuckBackend{Backend: be, rank: env.Params.Rank, s: d.s}, nil
}

type stuckBackend struct {
	backend.Backend
	rank int
	s    *stuck
}

func (b *stuckBackend) Create(ctx context.Context, name string) (backend.File, error) {
	if b.rank == 0 {
		return nil, errors.New("injected: no space left on device")
	}
	select {
	case <-b.s.aborted:
		return nil, errors.New("ended by the abort")
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (b *stuckBackend) Abort(code int) {
	b.s.once.Do(func() { b.s.code = code; close(b.s.aborted) })
}

// A rank that fails while another waits inside the library for it ends
// the job (backend.Aborter) once the ranks have not agreed on the failure
// within Config.OpTimeout: the failed rank waited in the engine's barrier
// and the other in the library, for ever (pario bench -a NC4 and -a HDF5
// -c under mpirun on a full disk hung).
func TestFailedRankAbortsStuckRanks(t *testing.T) {
	s := &stuck{aborted: make(chan struct{})}
	drv := func() backend.Driver {
		posix, err := backend.New("POSIX")
		if err != nil {
			t.Fatal(err)
		}
		return &stuckDriver{Driver: posix, s: s}
	}
	o := opts(t, "POSIX", func(o *bench.Options) { o.Read, o.CheckWrite, o.CheckRead = false, false, false })
	_, _, err := runConfigured(t, 2, o, drv, func(cfg *bench.Config) { cfg.OpTimeout = 100 * time.Millisecond })
	select {
	case <-s.aborted:
	default:
		t.Fatalf("no abort; the run ended with %v", err)
	}
	if s.code != 1 {
		t.Errorf("aborted with status %d, want 1", s.code)
	}
	if err == nil || !strings.Contains(err.Error(), "injected: no space left on device") {
		t.Errorf("rank 0's error %v does not name the failure", err)
	}
}

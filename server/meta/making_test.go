package meta

import (
	"context"
	"slices"
	"testing"

	"github.com/pario/pario/dist"
)

// madeHook is a fakeData that calls after once a datafile is made.
type madeHook struct {
	*fakeData
	after func(srv uint32, id FileID)
}

func (m *madeHook) Create(ctx context.Context, srv uint32, id FileID, inc uint64) error {
	if err := m.fakeData.Create(ctx, srv, id, inc); err != nil {
		return err
	}
	if m.after != nil {
		m.after(srv, id)
	}
	return nil
}

// scannedPooled returns what a whole scan lists as pooled: ID to servers.
func scannedPooled(t *testing.T, s *Store) map[FileID][]uint32 {
	t.Helper()
	out := map[FileID][]uint32{}
	var cookie []byte
	for {
		p, err := s.Scan(ctx, cookie, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, pl := range p.Pooled {
			out[pl.ID] = append(out[pl.ID], pl.Servers...)
		}
		if p.Done {
			return out
		}
		cookie = p.Cookie
	}
}

// A datafile a create (without a pool) or a layout change
// has made, before the commit that names it, is listed as pooled by Scan:
// nothing else names it, and fsck --repair with a short grace period
// removed it as an orphan, losing the file being made. Once the commit
// has landed, it is not listed any more.
func TestScanListsDatafilesMadeAheadOfTheirCommit(t *testing.T) {
	fd := &madeHook{fakeData: newFakeData(4)}
	s := openT(t, Options{Servers: 4, Datafiles: fd})
	var missed []string
	check := func(what string) func(uint32, FileID) {
		return func(srv uint32, id FileID) {
			if !slices.Contains(scannedPooled(t, s)[id], srv) {
				missed = append(missed, what)
			}
		}
	}

	fd.after = check("create")
	a := okAttr(t)(s.Create(ctx, "/f", 0o644, dist.Layout{Dist: "basic"}))
	fd.after = check("layout change")
	okAttr(t)(s.SetLayout(ctx, "/f", dist.Layout{Dist: "simple_stripe", Datafiles: 3}, true))
	fd.after = nil
	if len(missed) > 0 {
		t.Errorf("datafiles made ahead of their commit not listed by Scan: %v", missed)
	}
	if got := scannedPooled(t, s)[a.ID]; len(got) > 0 {
		t.Errorf("file %d, committed, still listed as pooled on %v", a.ID, got)
	}
}

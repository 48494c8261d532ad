package fusefs

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/pario/pario/client"
	"github.com/pario/pario/server/meta"
)

// A page's size batch that fails is asked again once, for the files it
// failed, so that a passing hiccup does not turn every entry of the page
// into a lookup of its own; a second failure leaves them to the kernel's
// lookups (their errors stay), with no third try.
func TestSizesRetriesOnce(t *testing.T) {
	lost := errors.New("I/O server data0: connection lost")
	for _, tc := range []struct {
		name string
		// fails[call] are the IDs that call fails.
		fails    [][]meta.FileID
		calls    int
		asked2nd []meta.FileID // what the second call asks
		failed   []meta.FileID // left to the kernel
	}{
		{"no failure", nil, 1, nil, nil},
		{"batch fails once", [][]meta.FileID{{1, 2, 4}}, 2, []meta.FileID{1, 2, 4}, nil},
		{"one server fails once", [][]meta.FileID{{2}}, 2, []meta.FileID{2}, nil},
		{"fails twice", [][]meta.FileID{{1, 2, 4}, {1, 2, 4}}, 2, []meta.FileID{1, 2, 4}, []meta.FileID{1, 2, 4}},
		{"one file fails twice", [][]meta.FileID{{1, 2, 4}, {4}}, 2, []meta.FileID{1, 2, 4}, []meta.FileID{4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls int
			var asked [][]meta.FileID
			old := usagesOf
			t.Cleanup(func() { usagesOf = old })
			usagesOf = func(_ *client.Client, _ context.Context, attrs []meta.Attr) ([]client.Usage, []error) {
				var ids []meta.FileID
				us, errs := make([]client.Usage, len(attrs)), make([]error, len(attrs))
				for i, a := range attrs {
					ids = append(ids, a.ID)
					if calls < len(tc.fails) && slices.Contains(tc.fails[calls], a.ID) {
						errs[i] = lost
						continue
					}
					us[i] = client.Usage{Size: int64(a.ID) * 100}
				}
				calls++
				asked = append(asked, ids)
				return us, errs
			}
			fsys := &fileSystem{open: map[meta.FileID]*openFile{}, opts: Options{OpTimeout: time.Minute}}
			d := &dirStream{fsys: fsys, dir: &node{fsys: fsys, id: 5}, page: []meta.DirEntry{
				{Name: "a", Attr: meta.Attr{ID: 1, Kind: meta.KindFile}},
				{Name: "d", Attr: meta.Attr{ID: 3, Kind: meta.KindDir}},
				{Name: "b", Attr: meta.Attr{ID: 2, Kind: meta.KindFile}},
				{Name: "c", Attr: meta.Attr{ID: 4, Kind: meta.KindFile}},
			}}
			d.sizes(context.Background())
			if calls != tc.calls {
				t.Fatalf("%d size batches, want %d", calls, tc.calls)
			}
			if tc.calls > 1 && !slices.Equal(asked[1], tc.asked2nd) {
				t.Fatalf("the second batch asked %v, want %v", asked[1], tc.asked2nd)
			}
			for i, e := range d.page {
				if e.Attr.Kind != meta.KindFile {
					continue
				}
				switch failed := slices.Contains(tc.failed, e.Attr.ID); {
				case failed && !errors.Is(d.uerr[i], lost):
					t.Errorf("%s: error %v, want the batch's", e.Name, d.uerr[i])
				case !failed && (d.uerr[i] != nil || d.usage[i].Size != int64(e.Attr.ID)*100):
					t.Errorf("%s: size %d, %v; want %d", e.Name, d.usage[i].Size, d.uerr[i], e.Attr.ID*100)
				}
			}
		})
	}
}

package fusefs_test

import (
	"bytes"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/pario/pario/fusefs"
)

// Several large files written at once through several descriptors, over a
// memory budget far smaller than their write-behind: the writes wait for
// room and complete, the budget never holds more than its size, and it is
// empty again once the files are closed; then, idle, the mount hands its
// free memory back.
func TestMountMemoryBudget(t *testing.T) {
	p := spawn(t)
	const budget = 3 << 20
	m := mount(t, p, fusefs.Options{Memory: budget, WriteBehind: 8 << 20})
	const files, size = 4, 12 << 20
	data := make([][]byte, files)
	for i := range data {
		data[i] = randomBytes(t, size)
	}
	var wg sync.WaitGroup
	for i := range files {
		wg.Go(func() {
			f, err := os.Create(m.path(fmt.Sprint("f", i)))
			if err != nil {
				t.Error(err)
				return
			}
			// A second descriptor on the same file writes the second half.
			g, err := os.OpenFile(f.Name(), os.O_WRONLY, 0)
			if err != nil {
				t.Error(err)
				f.Close()
				return
			}
			for off := 0; off < size/2; off += fusefs.MaxIO {
				if _, err := f.WriteAt(data[i][off:off+fusefs.MaxIO], int64(off)); err != nil {
					t.Error(err)
				}
				o2 := off + size/2
				if _, err := g.WriteAt(data[i][o2:o2+fusefs.MaxIO], int64(o2)); err != nil {
					t.Error(err)
				}
			}
			if err := g.Close(); err != nil {
				t.Errorf("close %s: %v", g.Name(), err)
			}
			if err := f.Close(); err != nil {
				t.Errorf("close %s: %v", f.Name(), err)
			}
		})
	}
	wg.Wait()
	st := m.Stats()
	if st.MemoryUsed != 0 || st.WriteBehind != 0 {
		t.Errorf("after closing every file: %d bytes of the budget and %d of write-behind held, want 0", st.MemoryUsed, st.WriteBehind)
	}
	if st.MemoryPeak > budget || st.MemoryPeak == 0 || st.MemoryBudget != budget {
		t.Errorf("budget %d (want %d), peak %d: want 0 < peak <= budget", st.MemoryBudget, budget, st.MemoryPeak)
	}
	for i := range files {
		if got := readFile(t, m.path(fmt.Sprint("f", i))); !bytes.Equal(got, data[i]) {
			t.Errorf("f%d: read back %d bytes that differ from the %d written", i, len(got), size)
		}
	}
	before := m.Stats().MemoryReleases
	eventually(t, "memory handed back once idle", func() error {
		if n := m.Stats().MemoryReleases; n <= before {
			return fmt.Errorf("%d releases, want more than %d", n, before)
		}
		return nil
	})
}

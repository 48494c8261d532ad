package fsck

import (
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// genStore draws a consistent store: a tree of directories and files
// under the root, every file with its datafiles on distinct servers.
func genStore(t *rapid.T) View {
	servers := rapid.IntRange(1, 5).Draw(t, "servers")
	v := View{Now: now, Inodes: []Inode{dir(RootID)}, Servers: make([]Server, servers)}
	for s := range v.Servers {
		v.Servers[s] = Server{Name: fmt.Sprintf("data%d", s), Now: now}
	}
	dirs := []uint64{RootID}
	n := rapid.IntRange(0, 40).Draw(t, "entries")
	for i := range n {
		id := uint64(i + 2)
		parent := rapid.SampledFrom(dirs).Draw(t, "parent")
		v.Dirents = append(v.Dirents, Dirent{Parent: parent, Name: fmt.Sprintf("e%d", id), Child: id})
		if rapid.Bool().Draw(t, "isDir") {
			v.Inodes = append(v.Inodes, dir(id))
			dirs = append(dirs, id)
			continue
		}
		first := rapid.IntRange(0, servers-1).Draw(t, "first")
		count := rapid.IntRange(1, servers).Draw(t, "count")
		in := Inode{ID: id, Ctime: old}
		for j := range count {
			s := (first + j) % servers
			in.Servers = append(in.Servers, uint32(s))
			v.Servers[s].Datafiles = append(v.Servers[s].Datafiles, df(id, int64(rapid.IntRange(0, 1<<20).Draw(t, "size"))))
		}
		v.Inodes = append(v.Inodes, in)
	}
	v.NextID = uint64(n + 2)
	return v
}

type key struct {
	kind   Kind
	server int
	id     uint64
}

func keys(fs []Finding) []key {
	var out []key
	for _, f := range fs {
		out = append(out, key{f.Kind, f.Server, f.ID})
	}
	slices.SortFunc(out, func(a, b key) int {
		if a.kind != b.kind {
			return int(a.kind) - int(b.kind)
		}
		if a.server != b.server {
			return a.server - b.server
		}
		return int(a.id) - int(b.id)
	})
	return out
}

// A consistent store is clean, under either rule for missing datafiles.
func TestPropertyConsistentStoreIsClean(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v := genStore(t)
		for _, strict := range []bool{false, true} {
			r := Check(v, Rules{Grace: grace, DatafilesAtCreate: strict})
			if !r.Clean() {
				t.Fatalf("consistent store (strict %v): %v", strict, r.Findings)
			}
			if r.Files+r.Dirs != len(v.Inodes) || r.Entries != len(v.Dirents) || r.Young != 0 {
				t.Fatalf("counts %+v for %d inodes, %d entries", r, len(v.Inodes), len(v.Dirents))
			}
		}
	})
}

// Damage of known kinds gives exactly the findings it implies: a lost
// file inode leaves its entry dangling and its datafiles orphans; a lost
// datafile is missing (strict rule only); a lost directory entry makes
// the subtree below it unreachable.
func TestPropertyDamageIsFoundExactly(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v := genStore(t)
		if len(v.Dirents) == 0 {
			return
		}
		var want []Finding
		switch rapid.IntRange(0, 2).Draw(t, "damage") {
		case 0: // lose an inode (a file's, or an empty directory's)
			i := rapid.IntRange(1, len(v.Inodes)-1).Draw(t, "inode")
			in := v.Inodes[i]
			for _, d := range v.Dirents {
				if d.Parent == in.ID {
					return // a directory with entries: those would be unreachable too; covered by case 2
				}
			}
			v.Inodes = slices.Delete(v.Inodes, i, i+1)
			want = append(want, Finding{Kind: DanglingEntry, Server: -1, ID: in.ID})
			for _, s := range in.Servers {
				want = append(want, Finding{Kind: OrphanDatafile, Server: int(s), ID: in.ID})
			}
		case 1: // lose a datafile
			s := rapid.IntRange(0, len(v.Servers)-1).Draw(t, "server")
			dfs := v.Servers[s].Datafiles
			if len(dfs) == 0 {
				return
			}
			j := rapid.IntRange(0, len(dfs)-1).Draw(t, "datafile")
			want = append(want, Finding{Kind: MissingDatafile, Server: s, ID: dfs[j].ID})
			v.Servers[s].Datafiles = slices.Delete(slices.Clone(dfs), j, j+1)
			if r := Check(v, Rules{Grace: grace}); !r.Clean() {
				t.Fatalf("a lost datafile is a hole without the strict rule, got %v", r.Findings)
			}
		case 2: // lose a directory entry: everything below it is unreachable
			j := rapid.IntRange(0, len(v.Dirents)-1).Draw(t, "entry")
			lost := v.Dirents[j].Child
			v.Dirents = slices.Delete(v.Dirents, j, j+1)
			below := map[uint64]bool{lost: true}
			for changed := true; changed; {
				changed = false
				for _, d := range v.Dirents {
					if below[d.Parent] && !below[d.Child] {
						below[d.Child], changed = true, true
					}
				}
			}
			for id := range below {
				want = append(want, Finding{Kind: Unreachable, Server: -1, ID: id})
			}
		}
		got := Check(v, Rules{Grace: grace, DatafilesAtCreate: true})
		if g, w := keys(got.Findings), keys(want); !slices.Equal(g, w) {
			t.Fatalf("findings %v, want %v", g, w)
		}
	})
}

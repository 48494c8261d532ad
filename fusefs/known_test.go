package fusefs

import (
	"context"
	"testing"
	"time"

	"github.com/pario/pario/client"
	"github.com/pario/pario/server/meta"
)

// noopChown answers a chown alone only when every condition holds; each
// case breaks one.
func TestNoopChownConditions(t *testing.T) {
	const id = meta.FileID(7)
	u32 := func(v uint32) *uint32 { return &v }
	owner := meta.Cred{Uid: 1000, Gid: 100}
	root := meta.Cred{}
	cases := []struct {
		name  string
		setup func(fsys *fileSystem, of *openFile)
		ch    meta.AttrChanges
		cred  *meta.Cred
		want  bool
	}{
		{name: "owner, same owner and group", want: true},
		{name: "uid alone", ch: meta.AttrChanges{Uid: u32(1000)}, want: true},
		{name: "another uid", ch: meta.AttrChanges{Uid: u32(1001), Gid: u32(100)}},
		{name: "another gid", ch: meta.AttrChanges{Uid: u32(1000), Gid: u32(101)}},
		{name: "not the owner", cred: &meta.Cred{Uid: 1001, Gid: 100}},
		{name: "no credentials", cred: &meta.Cred{Uid: 12345}, setup: func(fsys *fileSystem, of *openFile) {}},
		{name: "root, not squashed", cred: &root, want: true,
			setup: func(fsys *fileSystem, of *openFile) { fsys.rootIsRoot.Store(true) }},
		{name: "root, squash unknown", cred: &root},
		{name: "setuid to clear", setup: func(fsys *fileSystem, of *openFile) { of.known.a.Mode = 0o4755 }},
		{name: "setgid to clear", setup: func(fsys *fileSystem, of *openFile) { of.known.a.Mode = 0o2750 }},
		{name: "setgid without group exec stays", want: true,
			setup: func(fsys *fileSystem, of *openFile) { of.known.a.Mode = 0o2740 }},
		{name: "a change arrived since the stat", setup: func(fsys *fileSystem, of *openFile) { fsys.note(id) }},
		{name: "a change to another file", want: true, setup: func(fsys *fileSystem, of *openFile) { fsys.note(id + 1) }},
		{name: "an own change in flight", setup: func(fsys *fileSystem, of *openFile) { of.own = 1 }},
		{name: "a write since the stat", setup: func(fsys *fileSystem, of *openFile) { of.writes.Add(1) }},
		{name: "stat too old", setup: func(fsys *fileSystem, of *openFile) {
			of.known.at = time.Now().Add(-2 * freshWindow)
		}},
		{name: "another lease", setup: func(fsys *fileSystem, of *openFile) { fsys.lease.gen++ }},
		{name: "no lease", setup: func(fsys *fileSystem, of *openFile) { fsys.lease.until = time.Time{} }},
		{name: "forgotten (a new open)", setup: func(fsys *fileSystem, of *openFile) { of.forget() }},
		{name: "name gone", setup: func(fsys *fileSystem, of *openFile) { of.unlinked = true; of.f = &client.File{} }},
		{name: "not open here", setup: func(fsys *fileSystem, of *openFile) { delete(fsys.open, id) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fsys := &fileSystem{open: map[meta.FileID]*openFile{}}
			fsys.lease.until = time.Now().Add(time.Minute)
			fsys.lease.gen = 3
			fsys.lease.changed = map[meta.FileID]time.Time{}
			of := &openFile{id: id}
			fsys.open[id] = of
			a := meta.Attr{ID: id, Kind: meta.KindFile, Mode: 0o644, Uid: 1000, Gid: 100}
			fsys.remember(of, a, client.Usage{Size: 5}, time.Now().Add(-time.Millisecond), fsys.leaseGen(), of.notesNow(), 0)
			if tc.setup != nil {
				tc.setup(fsys, of)
			}
			ch := tc.ch
			if ch.Uid == nil && ch.Gid == nil {
				ch = meta.AttrChanges{Uid: u32(1000), Gid: u32(100)}
			}
			ctx := context.Background()
			c := owner
			if tc.cred != nil {
				c = *tc.cred
			}
			if tc.name != "no credentials" {
				ctx = meta.WithCred(ctx, c)
			}
			got, u, ok := fsys.noopChown(ctx, id, ch)
			if ok != tc.want {
				t.Fatalf("noopChown = %v, want %v", ok, tc.want)
			}
			if ok && (got.Uid != 1000 || u.Size != 5) {
				t.Errorf("answered %+v, %+v: not what the stat read", got, u)
			}
		})
	}
}

// What was read while a change came is not remembered; what was read
// before a change is not current after it.
func TestRememberOnlyWhatNoChangeCrossed(t *testing.T) {
	const id = meta.FileID(9)
	fsys := &fileSystem{open: map[meta.FileID]*openFile{}}
	fsys.lease.until = time.Now().Add(time.Minute)
	fsys.lease.gen = 1
	of := &openFile{id: id}
	fsys.open[id] = of
	a := meta.Attr{ID: id, Kind: meta.KindFile, Mode: 0o644}

	notes := of.notesNow()
	fsys.note(id) // arrives while the read is on its way
	fsys.remember(of, a, client.Usage{}, time.Now(), 1, notes, 0)
	if _, ok := fsys.current(of); ok {
		t.Fatal("attributes read across a change were remembered")
	}
	fsys.remember(of, a, client.Usage{}, time.Now(), 1, of.notesNow(), 0)
	if _, ok := fsys.current(of); !ok {
		t.Fatal("attributes read with no change since are not current")
	}
	fsys.note(id)
	if _, ok := fsys.current(of); ok {
		t.Fatal("attributes are current after a change")
	}
	fsys.remember(of, a, client.Usage{}, time.Now(), 0, of.notesNow(), 0)
	if _, ok := fsys.current(of); ok {
		t.Fatal("attributes read without a lease were remembered")
	}
}

// A size READDIRPLUS read is used again only under the same lease, for
// plusMaxAge, with no change to the file since.
func TestRecentSizes(t *testing.T) {
	const id = meta.FileID(11)
	fsys := leasedFS(2)
	r := &fsys.recent
	u := client.Usage{Size: 42}

	r.put(id, u, time.Now(), 2)
	if got, ok := r.get(fsys, id, 2); !ok || got != u {
		t.Fatalf("a size just read: %v, %v", got, ok)
	}
	if _, ok := r.get(fsys, id, 3); ok {
		t.Error("a size read under another lease was used")
	}
	if _, ok := r.get(fsys, id+1, 2); ok {
		t.Error("another file's size was used")
	}
	fsys.lease.changed[id] = time.Now()
	if _, ok := r.get(fsys, id, 2); ok {
		t.Error("a size read before a change was used")
	}
	r.put(id, u, time.Now().Add(-2*plusMaxAge), 2)
	if _, ok := r.get(fsys, id+0, 2); ok {
		t.Error("a size older than plusMaxAge was used")
	}
	r.put(id, u, time.Now(), 0)
	if _, ok := r.get(fsys, id, 0); ok {
		t.Error("a size read without a lease was used")
	}
	for i := range maxRecentSizes + 10 {
		r.put(meta.FileID(100+i), u, time.Now(), 2)
	}
	if len(r.m) > maxRecentSizes {
		t.Errorf("recentSizes holds %d entries, bound %d", len(r.m), maxRecentSizes)
	}
}

// A tracked directory counts its changes like an open file, and the
// mount tracks a bounded number of them.
func TestDirState(t *testing.T) {
	fsys := &fileSystem{open: map[meta.FileID]*openFile{}}
	fsys.lease.until = time.Now().Add(time.Minute)
	fsys.lease.gen = 1
	d := fsys.dirState(5)
	if fsys.dirState(5) != d || fsys.trackedDir(5) != d {
		t.Fatal("a directory's state is not kept")
	}
	n := d.notesNow()
	fsys.note(5)
	if d.notesNow() != n+1 {
		t.Error("a change to a tracked directory was not counted")
	}
	fsys.remember(d, meta.Attr{ID: 5, Kind: meta.KindDir}, client.Usage{}, time.Now(), 1, d.notesNow(), 0)
	if _, ok := fsys.current(d); !ok {
		t.Error("a tracked directory's attributes are not current")
	}
	for i := range maxDirStates + 5 {
		fsys.dirState(meta.FileID(100 + i))
	}
	if len(fsys.dirs) > maxDirStates {
		t.Errorf("%d directories tracked, bound %d", len(fsys.dirs), maxDirStates)
	}
}

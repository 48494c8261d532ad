package fsck

import (
	"errors"
	"reflect"
	"testing"
	"time"
)

const (
	now   = int64(1_800_000_000_000_000_000)
	old   = now - int64(time.Hour)
	grace = 10 * time.Minute
)

var rules = Rules{Grace: grace}

func dir(id uint64) Inode { return Inode{ID: id, Dir: true, Ctime: old} }
func file(id uint64, servers ...uint32) Inode {
	return Inode{ID: id, Servers: servers, Ctime: old}
}
func df(id uint64, size int64) Datafile { return Datafile{ID: id, Size: size, Mtime: old} }

// store is a healthy store: /, /a (dir 2), /a/f (file 3 on servers 0 and
// 1), /g (file 4 on server 1), each datafile present; NextID 5.
func store() View {
	return View{
		NextID: 5, Now: now,
		Inodes: []Inode{dir(1), dir(2), file(3, 0, 1), file(4, 1)},
		Dirents: []Dirent{
			{Parent: 1, Name: "a", Child: 2}, {Parent: 2, Name: "f", Child: 3}, {Parent: 1, Name: "g", Child: 4},
		},
		Servers: []Server{
			{Name: "data0", Now: now, Datafiles: []Datafile{df(3, 100)}},
			{Name: "data1", Now: now, Datafiles: []Datafile{df(3, 50), df(4, 7)}},
		},
	}
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(v *View)
		rules  Rules
		want   []Finding
		young  int
	}{
		{name: "clean", change: func(*View) {}},
		{
			name: "a file with two names and its count; a directory's count is not checked",
			change: func(v *View) {
				v.Inodes[2].Nlink, v.Inodes[3].Nlink, v.Inodes[1].Nlink = 2, 1, 7
				v.Dirents = append(v.Dirents, Dirent{Parent: 1, Name: "h", Child: 3})
			},
		},
		{
			name: "link counts that disagree with the entries",
			change: func(v *View) {
				v.Inodes[2].Nlink, v.Inodes[3].Nlink = 1, 3
				v.Dirents = append(v.Dirents, Dirent{Parent: 1, Name: "h", Child: 3})
			},
			want: []Finding{
				{Kind: WrongLinkCount, Server: -1, ID: 3, Path: "/a/f", Detail: "2 entries name it, its count says 1", Ctime: old},
				{Kind: WrongLinkCount, Server: -1, ID: 4, Path: "/g", Detail: "1 entries name it, its count says 3", Ctime: old},
			},
		},
		{
			name: "a count changed during the scan is not judged",
			change: func(v *View) {
				v.Inodes[2].Nlink, v.Inodes[2].Ctime = 1, now-int64(time.Second)
				v.Dirents = append(v.Dirents, Dirent{Parent: 1, Name: "h", Child: 3})
			},
		},
		{
			name: "a removed file's datafile left on a server that was down",
			change: func(v *View) {
				v.Servers[0].Datafiles = append(v.Servers[0].Datafiles, df(2, 4096), df(1, 1))
			},
			want: []Finding{
				{Kind: OrphanDatafile, Server: 0, Name: "data0", ID: 1, Bytes: 1, Path: "/"}, // the root has no datafiles
				{Kind: OrphanDatafile, Server: 0, Name: "data0", ID: 2, Bytes: 4096, Path: "/a"},
			},
		},
		{
			name: "the ID of a removed file, since reused by nothing",
			change: func(v *View) {
				v.Servers[1].Datafiles = append(v.Servers[1].Datafiles, Datafile{ID: 9, Size: 1 << 20, Mtime: old})
				v.NextID = 10
			},
			want: []Finding{{Kind: OrphanDatafile, Server: 1, Name: "data1", ID: 9, Bytes: 1 << 20}},
		},
		{
			name: "a file's datafile on a server its layout does not name",
			change: func(v *View) {
				v.Servers[0].Datafiles = append(v.Servers[0].Datafiles, df(4, 3))
			},
			want: []Finding{{Kind: OrphanDatafile, Server: 0, Name: "data0", ID: 4, Bytes: 3, Path: "/g"}},
		},
		{
			name: "a young unreferenced datafile is a create in flight, not an orphan",
			change: func(v *View) {
				v.Servers[0].Datafiles = append(v.Servers[0].Datafiles, Datafile{ID: 4, Size: 3, Mtime: now - int64(time.Second)})
			},
			young: 1,
		},
		{
			name: "grace zero judges everything",
			change: func(v *View) {
				v.Servers[0].Datafiles = append(v.Servers[0].Datafiles, Datafile{ID: 4, Size: 3, Mtime: now})
			},
			rules: Rules{},
			want:  []Finding{{Kind: OrphanDatafile, Server: 0, Name: "data0", ID: 4, Bytes: 3, Path: "/g"}},
		},
		{
			name: "an ID the metadata server has not handed out: kept and reported",
			change: func(v *View) {
				v.Servers[1].Datafiles = append(v.Servers[1].Datafiles, df(5, 64893))
			},
			want: []Finding{{Kind: UnknownDatafile, Server: 1, Name: "data1", ID: 5, Bytes: 64893}},
		},
		{
			name: "a file created during the scan is not judged",
			change: func(v *View) {
				v.Dirents = append(v.Dirents, Dirent{Parent: 1, Name: "new", Child: 7})
				v.Inodes = append(v.Inodes, file(8, 0))
				v.Dirents = append(v.Dirents, Dirent{Parent: 1, Name: "new2", Child: 8})
			},
			young: 1,
		},
		{
			name: "an entry that points nowhere",
			change: func(v *View) {
				v.Dirents = append(v.Dirents, Dirent{Parent: 2, Name: "ghost", Child: 4})
				v.Inodes = v.Inodes[:3] // /g's inode is gone; its datafile too
				v.Servers[1].Datafiles = v.Servers[1].Datafiles[:1]
			},
			want: []Finding{
				{Kind: DanglingEntry, Server: -1, ID: 4, Parent: 2, Entry: "ghost", Path: "/a/ghost"},
				{Kind: DanglingEntry, Server: -1, ID: 4, Parent: 1, Entry: "g", Path: "/g"},
			},
		},
		{
			name: "an entry in a directory that has no path",
			change: func(v *View) {
				v.Dirents = append(v.Dirents, Dirent{Parent: 3, Name: "x", Child: 2}) // a file as parent
				v.Dirents = v.Dirents[1:]                                             // /a is no longer linked
				v.Dirents = append(v.Dirents, Dirent{Parent: 2, Name: "nothing", Child: 1})
			},
			want: []Finding{{Kind: Unreachable, Server: -1, ID: 2, Parent: 2, Ctime: old}, {Kind: Unreachable, Server: -1, ID: 3, Parent: 3, Ctime: old}},
		},
		{
			// As a rename of /a into a directory whose entries the scan
			// had read leaves it: the finding names /a, whose ctime the
			// caller re-checks, for the file below it too.
			name: "a directory whose entry the scan did not see",
			change: func(v *View) {
				v.Dirents = v.Dirents[1:]
				v.Inodes[1].Ctime = old + 7
			},
			want: []Finding{{Kind: Unreachable, Server: -1, ID: 2, Parent: 2, Ctime: old + 7}, {Kind: Unreachable, Server: -1, ID: 3, Parent: 2, Ctime: old + 7}},
		},
		{
			name: "inodes no path reaches, a cycle among them",
			change: func(v *View) {
				v.Inodes = append(v.Inodes, dir(5), dir(6))
				v.NextID = 7
				v.Dirents = append(v.Dirents, Dirent{Parent: 5, Name: "six", Child: 6}, Dirent{Parent: 6, Name: "five", Child: 5})
			},
			want: []Finding{{Kind: Unreachable, Server: -1, ID: 5, Parent: 5, Ctime: old}, {Kind: Unreachable, Server: -1, ID: 6, Parent: 6, Ctime: old}},
		},
		{
			name:   "a record that does not decode",
			change: func(v *View) { v.Bad = []string{"inode 9: meta: corrupt attribute record"} },
			want:   []Finding{{Kind: BadRecord, Server: -1, Detail: "inode 9: meta: corrupt attribute record"}},
		},
		{
			name: "today a missing datafile is a hole",
			change: func(v *View) {
				v.Servers[0].Datafiles = nil
			},
		},
		{
			name: "once create makes datafiles, a missing one is lost data",
			change: func(v *View) {
				v.Servers[0].Datafiles = nil
			},
			rules: Rules{Grace: grace, DatafilesAtCreate: true},
			want:  []Finding{{Kind: MissingDatafile, Server: 0, Name: "data0", ID: 3, Index: 0, Path: "/a/f"}},
		},
		{
			name: "a stuffed file needs its first datafile only",
			change: func(v *View) {
				v.Inodes[3] = Inode{ID: 4, Servers: []uint32{1, 0}, Stuffed: true, Ctime: old}
			},
			rules: Rules{Grace: grace, DatafilesAtCreate: true},
		},
		{
			name: "a file created within the grace period may still be making its datafiles",
			change: func(v *View) {
				v.Inodes[3].Ctime = now - int64(time.Second)
				v.Servers[1].Datafiles = v.Servers[1].Datafiles[:1]
			},
			rules: Rules{Grace: grace, DatafilesAtCreate: true},
			young: 1,
		},
		{
			name: "short datafiles are holes, never findings",
			change: func(v *View) {
				v.Servers[0].Datafiles[0].Size = 0
			},
			rules: Rules{Grace: grace, DatafilesAtCreate: true},
		},
		{
			name: "a server that could not be listed is neither judged nor judged against",
			change: func(v *View) {
				v.Servers[0] = Server{Name: "data0", Err: errors.New("connection refused")}
			},
			rules: Rules{Grace: grace, DatafilesAtCreate: true},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := store()
			tc.change(&v)
			r := tc.rules
			if r == (Rules{}) && tc.name != "grace zero judges everything" {
				r = rules
			}
			got := Check(v, r)
			if !reflect.DeepEqual(got.Findings, tc.want) {
				t.Errorf("findings:\n got %v\nwant %v", got.Findings, tc.want)
			}
			if got.Young != tc.young {
				t.Errorf("young = %d, want %d", got.Young, tc.young)
			}
			for _, f := range got.Findings {
				if f.String() == "" || f.Kind.String() == "" {
					t.Errorf("finding %#v prints as nothing", f)
				}
			}
		})
	}
}

func TestReportSummary(t *testing.T) {
	v := store()
	v.Servers[0].Datafiles = append(v.Servers[0].Datafiles, df(2, 4096))
	v.Servers[1].Datafiles = append(v.Servers[1].Datafiles, df(1, 10))
	v.Dirents = append(v.Dirents, Dirent{Parent: 1, Name: "x", Child: 3})
	v.Bad = []string{"b"}
	v.Servers = append(v.Servers, Server{Name: "data2", Err: errors.New("down")})
	r := Check(v, rules)
	if r.Files != 2 || r.Dirs != 2 || r.Entries != 4 || r.Datafiles != 5 || r.DatafileBytes != 100+50+7+4096+10 {
		t.Errorf("counts: %+v", r)
	}
	if r.Reclaimable() != 4106 || r.Count(OrphanDatafile) != 2 || r.Count(BadRecord) != 1 || r.Count(DanglingEntry) != 0 {
		t.Errorf("reclaimable %d, counts %d %d %d", r.Reclaimable(), r.Count(OrphanDatafile), r.Count(BadRecord), r.Count(DanglingEntry))
	}
	if r.Clean() || len(r.Unlisted) != 1 {
		t.Errorf("clean %v, unlisted %q", r.Clean(), r.Unlisted)
	}
	if Check(store(), rules).Clean() != true {
		t.Error("a healthy store is not clean")
	}
	if !OrphanDatafile.Repairable() || !DanglingEntry.Repairable() || MissingDatafile.Repairable() || UnknownDatafile.Repairable() {
		t.Error("only orphans and dangling entries are repaired")
	}
}

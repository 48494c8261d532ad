package meta

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pario/pario/dist"
)

func openAt(t testing.TB, path string, opts Options) *Store {
	t.Helper()
	s, err := Open(path, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func openT(t testing.TB, opts Options) *Store {
	t.Helper()
	return openAt(t, filepath.Join(t.TempDir(), "meta.db"), opts)
}

// errnoOf returns the errno an error carries, 0 for nil; it fails the test
// for an error without one or without a *fs.PathError.
func errnoOf(t testing.TB, err error) syscall.Errno {
	t.Helper()
	if err == nil {
		return 0
	}
	var pe *fs.PathError
	if !errors.As(err, &pe) {
		t.Fatalf("error %v (%T) is not a *fs.PathError", err, err)
	}
	var e syscall.Errno
	if !errors.As(err, &e) {
		t.Fatalf("error %v carries no syscall.Errno", err)
	}
	return e
}

// tb is the part of testing.TB that *rapid.T also has.
type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// okAttr, okDir and okRename return a function that passes its first
// argument through and fails the test on a non-nil error.
func okAttr(t tb) func(Attr, error) Attr { return ok[Attr](t) }

func okDir(t tb) func([]DirEntry, error) []DirEntry { return ok[[]DirEntry](t) }

func okRename(t tb) func(*Attr, error) *Attr { return ok[*Attr](t) }

func ok[T any](t tb) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// resolved is what the store should record for layout l on n servers.
func resolved(t testing.TB, l dist.Layout, n int) dist.Layout {
	t.Helper()
	d, err := l.Build(n)
	if err != nil {
		t.Fatalf("Build(%+v, %d): %v", l, n, err)
	}
	return dist.Layout{Dist: d.Name(), Params: d.Params(), Datafiles: d.Datafiles()}
}

func names(es []DirEntry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Name)
	}
	return out
}

func TestOpenRoot(t *testing.T) {
	ctx := t.Context()
	s := openT(t, Options{Servers: 2})
	root := okAttr(t)(s.Lookup(ctx, "/"))
	if root.ID != RootID || root.Kind != KindDir || root.Mode != 0o755 || root.Mtime == 0 || !root.Layout.IsZero() {
		t.Fatalf("root = %+v", root)
	}
	if es := okDir(t)(s.Readdir(ctx, "/")); len(es) != 0 {
		t.Fatalf("Readdir(/) = %v", es)
	}
	files, dirs, err := s.Stats(ctx)
	if err != nil || files != 0 || dirs != 1 {
		t.Fatalf("Stats = %d, %d, %v", files, dirs, err)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(filepath.Join(dir, "a.db"), Options{}); err == nil || !strings.Contains(err.Error(), "Servers") {
		t.Errorf("Open with Servers=0: %v", err)
	}
	if _, err := Open(filepath.Join(dir, "b.db"), Options{Servers: 2, DefaultLayout: dist.Layout{Dist: "nonesuch"}}); err == nil {
		t.Errorf("Open with a bad default layout succeeded")
	}
	if _, err := Open(filepath.Join(dir, "c.db"), Options{Servers: 2, DefaultLayout: dist.Layout{Dist: dist.SimpleStripe, Datafiles: 3}}); err == nil {
		t.Errorf("Open with a default layout wider than the cluster succeeded")
	}
	if _, err := Open(filepath.Join(dir, "nodir", "x.db"), Options{Servers: 1}); err == nil {
		t.Errorf("Open in a missing directory succeeded")
	}
}

func TestOpenLocked(t *testing.T) {
	old := lockTimeout
	lockTimeout = 100 * time.Millisecond
	defer func() { lockTimeout = old }()
	path := filepath.Join(t.TempDir(), "meta.db")
	openAt(t, path, Options{Servers: 1})
	start := time.Now()
	s2, err := Open(path, Options{Servers: 1})
	if err == nil {
		s2.Close()
		t.Fatal("second Open of a held database succeeded")
	}
	if !strings.Contains(err.Error(), "locked") {
		t.Errorf("error does not say the database is locked: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("second Open took %v", d)
	}
}

// TestNamespace runs one sequence of operations, checking each result.
func TestNamespace(t *testing.T) {
	ctx := t.Context()
	s := openT(t, Options{Servers: 3})
	type step struct {
		op, a, b string
		want     syscall.Errno
	}
	steps := []step{
		{"mkdir", "/a", "", 0},
		{"mkdir", "/a", "", syscall.EEXIST},
		{"create", "/a", "", syscall.EEXIST},
		{"mkdir", "/", "", syscall.EEXIST},
		{"create", "/", "", syscall.EEXIST},
		{"mkdir", "/x/y", "", syscall.ENOENT},
		{"create", "/x/y", "", syscall.ENOENT},
		{"create", "/a/f", "", 0},
		{"create", "/a/f", "", syscall.EEXIST},
		{"mkdir", "/a/f", "", syscall.EEXIST},
		{"mkdir", "/a/f/g", "", syscall.ENOTDIR},
		{"create", "/a/f/g", "", syscall.ENOTDIR},
		{"lookup", "/a/f/g", "", syscall.ENOTDIR},
		{"lookup", "/nope", "", syscall.ENOENT},
		{"lookup", "/nope/deeper", "", syscall.ENOENT},
		{"lookup", "/", "", 0},
		{"lookup", "/a/f", "", 0},
		{"lookup", "//a//f", "", 0},
		{"lookup", "//a//f/", "", syscall.ENOTDIR},
		{"readdir", "/a/f", "", syscall.ENOTDIR},
		{"readdir", "/nope", "", syscall.ENOENT},
		{"readdir", "/a", "", 0},
		{"mkdir", "/b", "", 0},
		{"mkdir", "/b/c", "", 0},
		{"create", "/b/c/f", "", 0},
		{"remove", "/b", "", syscall.ENOTEMPTY},
		{"remove", "/b/c", "", syscall.ENOTEMPTY},
		{"remove", "/", "", syscall.EBUSY},
		{"remove", "/nope", "", syscall.ENOENT},
		{"remove", "/a/f/g", "", syscall.ENOTDIR},
		{"rename", "/", "/z", syscall.EINVAL},
		{"rename", "/a", "/", syscall.EINVAL},
		{"rename", "/b", "/b/c/d", syscall.EINVAL},
		{"rename", "/b", "/b/new", syscall.EINVAL},
		{"rename", "/b", "/b/nodir/new", syscall.ENOENT},
		{"rename", "/nope", "/x", syscall.ENOENT},
		{"rename", "/a/f", "/nodir/f", syscall.ENOENT},
		{"rename", "/a/f", "/a/f/g", syscall.ENOTDIR},
		{"rename", "/a", "/b/c/f", syscall.ENOTDIR},
		{"rename", "/a/f", "/b", syscall.EISDIR},
		{"rename", "/a", "/b", syscall.ENOTEMPTY},
		{"rename", "/b/c", "/b", syscall.ENOTEMPTY},
		{"mkdir", "/e", "", 0},
		{"rename", "/a", "/e", 0}, // directory replaces an empty directory
		{"lookup", "/a", "", syscall.ENOENT},
		{"lookup", "/e/f", "", 0},
		{"rename", "/e/f", "/e/f", 0}, // onto itself: nothing happens
		{"lookup", "/e/f", "", 0},
		{"rename", "/e", "/e", 0},
		{"create", "/e/g", "", 0},
		{"rename", "/e/g", "/e/f", 0}, // file replaces a file
		{"lookup", "/e/g", "", syscall.ENOENT},
		{"rename", "/e/f", "/b/c/f2", 0}, // across directories
		{"rename", "/b/c", "/c", 0},      // a directory with content
		{"lookup", "/c/f2", "", 0},
		{"remove", "/c/f", "", 0},
		{"remove", "/c/f2", "", 0},
		{"remove", "/c", "", 0},
		{"remove", "/b", "", 0},
		{"remove", "/e", "", 0},
		{"remove", "/e", "", syscall.ENOENT},
	}
	for i, st := range steps {
		var err error
		switch st.op {
		case "mkdir":
			_, err = s.Mkdir(ctx, st.a, 0o755)
		case "create":
			_, err = s.Create(ctx, st.a, 0o644, dist.Layout{})
		case "lookup":
			_, err = s.Lookup(ctx, st.a)
		case "readdir":
			_, err = s.Readdir(ctx, st.a)
		case "remove":
			_, err = s.Remove(ctx, st.a)
		case "rename":
			_, err = s.Rename(ctx, st.a, st.b)
		default:
			t.Fatalf("bad op %q", st.op)
		}
		if got := errnoOf(t, err); got != st.want {
			t.Fatalf("step %d: %s %s %s: err = %v (%d), want errno %d (%v)", i, st.op, st.a, st.b, err, got, st.want, st.want)
		}
	}
	if es := okDir(t)(s.Readdir(ctx, "/")); len(es) != 0 {
		t.Fatalf("root not empty at the end: %v", names(es))
	}
	if files, dirs, err := s.Stats(ctx); err != nil || files != 0 || dirs != 1 {
		t.Fatalf("Stats = %d, %d, %v", files, dirs, err)
	}
}

func TestErrorShape(t *testing.T) {
	ctx := t.Context()
	s := openT(t, Options{Servers: 1})
	_, err := s.Lookup(ctx, "/missing/x")
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Op != "lookup" || pe.Path != "/missing/x" {
		t.Fatalf("Lookup error = %#v", err)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("errors.Is(%v, fs.ErrNotExist) = false", err)
	}
	okAttr(t)(s.Mkdir(ctx, "/d", 0o755))
	_, err = s.Mkdir(ctx, "/d", 0o755)
	if !errors.Is(err, fs.ErrExist) || !strings.Contains(err.Error(), "mkdir /d") {
		t.Errorf("Mkdir error = %v", err)
	}
	okAttr(t)(s.Create(ctx, "/d/f", 0o644, dist.Layout{}))
	_, err = s.Rename(ctx, "/d/f", "/d/f/x")
	if !errors.As(err, &pe) || pe.Path != "/d/f/x" || pe.Op != "rename" {
		t.Errorf("Rename error = %#v", err)
	}
	_, err = s.GetByID(ctx, 12345)
	if !errors.Is(err, fs.ErrNotExist) || !errors.As(err, &pe) || pe.Op != "getbyid" {
		t.Errorf("GetByID error = %v", err)
	}
}

func TestAttrsAndTimes(t *testing.T) {
	ctx := t.Context()
	s := openT(t, Options{Servers: 2})
	before := time.Now().UnixNano()
	d := okAttr(t)(s.Mkdir(ctx, "/d", 0o40751)) // non-permission bits are dropped
	if d.Kind != KindDir || d.Mode != 0o751 || d.ID <= RootID || d.Mtime < before || d.Ctime != d.Mtime {
		t.Fatalf("Mkdir = %+v", d)
	}
	root := okAttr(t)(s.Lookup(ctx, "/"))
	if root.Mtime < d.Mtime || root.Ctime < d.Mtime {
		t.Errorf("root times not updated by mkdir: %+v vs %+v", root, d)
	}
	f := okAttr(t)(s.Create(ctx, "/d/f", 0o640, dist.Layout{}))
	if f.Kind != KindFile || f.Mode != 0o640 || f.ID <= d.ID || f.Size != 0 || f.Stuffed {
		t.Fatalf("Create = %+v", f)
	}
	if got := okAttr(t)(s.Lookup(ctx, "/d/f")); !reflect.DeepEqual(got, f) {
		t.Fatalf("Lookup = %+v, want %+v", got, f)
	}
	if got := okAttr(t)(s.GetByID(ctx, f.ID)); !reflect.DeepEqual(got, f) {
		t.Fatalf("GetByID = %+v, want %+v", got, f)
	}
	d2 := okAttr(t)(s.Lookup(ctx, "/d"))
	if d2.Mtime < f.Mtime {
		t.Errorf("parent mtime %d before child create %d", d2.Mtime, f.Mtime)
	}

	// Readdir sorted, with attributes.
	for _, n := range []string{"zeta", "alpha", "Mid", "beta"} {
		okAttr(t)(s.Create(ctx, "/d/"+n, 0o644, dist.Layout{}))
	}
	okAttr(t)(s.Mkdir(ctx, "/d/sub", 0o755))
	es := okDir(t)(s.Readdir(ctx, "/d"))
	if want := []string{"Mid", "alpha", "beta", "f", "sub", "zeta"}; !slices.Equal(names(es), want) {
		t.Fatalf("Readdir = %v, want %v", names(es), want)
	}
	for _, e := range es {
		if got := okAttr(t)(s.Lookup(ctx, "/d/"+e.Name)); !reflect.DeepEqual(got, e.Attr) {
			t.Errorf("Readdir attr of %s = %+v, Lookup = %+v", e.Name, e.Attr, got)
		}
	}

	// SetAttr.
	mode, mtime, size := uint32(0o100600), int64(12345), int64(288664)
	got := okAttr(t)(s.SetAttr(ctx, "/d/f", AttrChanges{Mode: &mode, Mtime: &mtime, Size: &size}))
	if got.Mode != 0o600 || got.Mtime != 12345 || got.Size != 288664 || got.Ctime < f.Ctime || got.ID != f.ID {
		t.Fatalf("SetAttr = %+v", got)
	}
	if again := okAttr(t)(s.SetAttr(ctx, "/d/f", AttrChanges{})); !reflect.DeepEqual(again, got) {
		t.Fatalf("empty SetAttr changed %+v to %+v", got, again)
	}
	neg := int64(-1)
	if _, err := s.SetAttr(ctx, "/d/f", AttrChanges{Size: &neg}); errnoOf(t, err) != syscall.EINVAL {
		t.Errorf("negative size: %v", err)
	}
	if _, err := s.SetAttr(ctx, "/d", AttrChanges{Size: &size}); errnoOf(t, err) != syscall.EISDIR {
		t.Errorf("size on a directory: %v", err)
	}
	if _, err := s.SetAttr(ctx, "/d/none", AttrChanges{Mode: &mode}); errnoOf(t, err) != syscall.ENOENT {
		t.Errorf("SetAttr on a missing file: %v", err)
	}
	dm := uint32(0o700)
	if a := okAttr(t)(s.SetAttr(ctx, "/", AttrChanges{Mode: &dm})); a.Mode != 0o700 || a.ID != RootID {
		t.Errorf("SetAttr(/) = %+v", a)
	}

	// Rename keeps the ID; GetByID follows it; Remove returns the attrs.
	okRename(t)(s.Rename(ctx, "/d/f", "/d/sub/g"))
	moved := okAttr(t)(s.GetByID(ctx, f.ID))
	if moved.Size != 288664 || moved.Ctime < got.Ctime {
		t.Errorf("after rename GetByID = %+v", moved)
	}
	if l := okAttr(t)(s.Lookup(ctx, "/d/sub/g")); l.ID != f.ID {
		t.Errorf("renamed file has ID %d, want %d", l.ID, f.ID)
	}
	zeta := okAttr(t)(s.Lookup(ctx, "/d/zeta"))
	replaced := okRename(t)(s.Rename(ctx, "/d/sub/g", "/d/zeta"))
	if replaced == nil || replaced.ID != zeta.ID || !reflect.DeepEqual(replaced.Servers, zeta.Servers) {
		t.Errorf("Rename replaced = %+v, want %+v", replaced, zeta)
	}
	if _, err := s.GetByID(ctx, zeta.ID); errnoOf(t, err) != syscall.ENOENT {
		t.Errorf("replaced file still reachable by ID: %v", err)
	}
	if r := okRename(t)(s.Rename(ctx, "/d/zeta", "/d/zeta2")); r != nil {
		t.Errorf("rename to a new name replaced %+v", r)
	}
	okAttr(t)(s.Mkdir(ctx, "/empty", 0o755))
	if r := okRename(t)(s.Rename(ctx, "/d/sub", "/empty")); r == nil || r.Kind != KindDir {
		t.Errorf("directory over empty directory replaced %+v", r)
	}
	rm := okAttr(t)(s.Remove(ctx, "/d/zeta2"))
	if rm.ID != f.ID || rm.Kind != KindFile {
		t.Errorf("Remove = %+v", rm)
	}
	if _, err := s.GetByID(ctx, f.ID); errnoOf(t, err) != syscall.ENOENT {
		t.Errorf("removed file reachable by ID: %v", err)
	}
	files, dirs, err := s.Stats(ctx)
	if err != nil || files != 3 || dirs != 3 { // Mid alpha beta; / /d /empty
		es, _ := s.Readdir(ctx, "/d")
		t.Errorf("Stats = %d files, %d dirs, %v (/d: %v)", files, dirs, err, names(es))
	}
}

// Mode 0 is mode 0, as open(O_CREAT, 0) and mkdir(d, 0) make.
func TestModeZero(t *testing.T) {
	ctx := t.Context()
	s := openT(t, Options{Servers: 1})
	if z := okAttr(t)(s.Mkdir(ctx, "/zero", 0)); z.Mode != 0 {
		t.Errorf("Mkdir mode 0 = %o", z.Mode)
	}
	if z := okAttr(t)(s.Create(ctx, "/zero/f", 0, dist.Layout{})); z.Mode != 0 {
		t.Errorf("Create mode 0 = %o", z.Mode)
	}
}

func TestBadPaths(t *testing.T) {
	ctx := t.Context()
	s := openT(t, Options{Servers: 1})
	okAttr(t)(s.Mkdir(ctx, "/a", 0o755))
	long := "/" + strings.Repeat("x", MaxNameLen+1)
	huge := strings.Repeat("/"+strings.Repeat("y", 99), 41) // 4100 bytes
	bad := []string{"", "a", "a/b", "/a/./b", "/a/../b", "/.", "/..", "/a/.", "./a", "/a\x00b", long, huge}
	for _, p := range bad {
		// Over the limits is ENAMETOOLONG, as POSIX names it; the rest EINVAL.
		want := syscall.EINVAL
		if p == long || p == huge {
			want = syscall.ENAMETOOLONG
		}
		ops := map[string]func() error{
			"lookup":    func() error { _, err := s.Lookup(ctx, p); return err },
			"mkdir":     func() error { _, err := s.Mkdir(ctx, p, 0o755); return err },
			"create":    func() error { _, err := s.Create(ctx, p, 0o644, dist.Layout{}); return err },
			"readdir":   func() error { _, err := s.Readdir(ctx, p); return err },
			"remove":    func() error { _, err := s.Remove(ctx, p); return err },
			"rename":    func() error { _, err := s.Rename(ctx, p, "/b"); return err },
			"rename2":   func() error { _, err := s.Rename(ctx, "/a", p); return err },
			"setattr":   func() error { _, err := s.SetAttr(ctx, p, AttrChanges{}); return err },
			"setlayout": func() error { _, err := s.SetLayout(ctx, p, dist.Layout{}, true); return err },
		}
		for op, fn := range ops {
			err := fn()
			if errnoOf(t, err) != want {
				t.Errorf("%s(%.60q): err = %.200v, want %v", op, p, err, want)
				continue
			}
			var pe *fs.PathError
			if errors.As(err, &pe); pe.Path != p {
				t.Errorf("%s(%.60q): error names path %.60q", op, p, pe.Path)
			}
		}
	}
	// Longest legal forms.
	okName := "/" + strings.Repeat("n", MaxNameLen)
	okAttr(t)(s.Create(ctx, okName, 0o644, dist.Layout{}))
	okAttr(t)(s.Lookup(ctx, okName))
	if _, err := s.Create(ctx, okName+"x", 0o644, dist.Layout{}); errnoOf(t, err) != syscall.ENAMETOOLONG {
		t.Errorf("256-byte name: %v", err)
	}
	// Slashes are cleaned: these all name /a/b.
	okAttr(t)(s.Mkdir(ctx, "//a//b/", 0o755))
	for _, p := range []string{"/a/b", "/a/b/", "//a/b", "/a//b//"} {
		if _, err := s.Lookup(ctx, p); err != nil {
			t.Errorf("Lookup(%q): %v", p, err)
		}
	}
	if got := names(okDir(t)(s.Readdir(ctx, "/a/"))); !slices.Equal(got, []string{"b"}) {
		t.Errorf("Readdir(/a/) = %v", got)
	}
	// Names may hold any byte but '/' and NUL.
	for _, n := range []string{"...", ".x", "x.", " ", "ü", "a\nb", "\xff"} {
		if _, err := s.Create(ctx, "/a/"+n, 0o644, dist.Layout{}); err != nil {
			t.Errorf("Create(%q): %v", n, err)
		}
	}
}

func TestLayoutInheritance(t *testing.T) {
	ctx := t.Context()
	const servers = 4
	s := openT(t, Options{Servers: servers})
	ss := func(strip int, n int) dist.Layout {
		return dist.Layout{Dist: dist.SimpleStripe, Params: fmt.Sprintf("strip_size=%d", strip), Datafiles: n}
	}
	check := func(path string, want dist.Layout) {
		t.Helper()
		a := okAttr(t)(s.Create(ctx, path, 0o644, dist.Layout{}))
		if a.Layout != want || len(a.Servers) != want.Datafiles {
			t.Fatalf("Create(%s): layout %+v servers %v, want %+v", path, a.Layout, a.Servers, want)
		}
	}
	// No defaults anywhere: simple_stripe, 64 KiB, all servers.
	check("/f", ss(65536, servers))
	if got := okAttr(t)(s.Lookup(ctx, "/f")).Layout; got != resolved(t, dist.Layout{Dist: dist.SimpleStripe}, servers) {
		t.Fatalf("fallback layout %+v", got)
	}

	okAttr(t)(s.Mkdir(ctx, "/a", 0o755))
	okAttr(t)(s.Mkdir(ctx, "/a/b", 0o755))
	a := okAttr(t)(s.SetLayout(ctx, "/a", ss(1<<20, 2), false))
	if a.Layout != ss(1<<20, 2) {
		t.Fatalf("SetLayout(/a) = %+v", a.Layout)
	}
	// A directory default with 0 datafiles stays 0 ("all servers").
	okAttr(t)(s.Mkdir(ctx, "/all", 0o755))
	if l := okAttr(t)(s.SetLayout(ctx, "/all", dist.Layout{Dist: dist.SimpleStripe}, false)).Layout; l != ss(65536, 0) {
		t.Fatalf("SetLayout(/all) = %+v", l)
	}
	check("/all/f", ss(65536, servers))

	check("/a/f", ss(1<<20, 2))
	check("/a/b/f", ss(1<<20, 2))                                      // nearest ancestor with a default
	okAttr(t)(s.Mkdir(ctx, "/a/b/c", 0o755))                           // made after the default was set
	check("/a/b/c/f", ss(1<<20, 2))                                    // ... inherits too
	if got := okAttr(t)(s.Lookup(ctx, "/a/b")); !got.Layout.IsZero() { // nothing copied
		t.Fatalf("/a/b got layout %+v", got.Layout)
	}

	// Hints override; a hint with only a datafile count narrows the inherited one.
	h := okAttr(t)(s.Create(ctx, "/a/b/basic", 0o644, dist.Layout{Dist: dist.Basic}))
	if h.Layout != resolved(t, dist.Layout{Dist: dist.Basic}, servers) || len(h.Servers) != 1 {
		t.Fatalf("basic hint: %+v", h)
	}
	h = okAttr(t)(s.Create(ctx, "/a/b/three", 0o644, dist.Layout{Datafiles: 3}))
	if h.Layout != ss(1<<20, 3) {
		t.Fatalf("datafile-count hint: %+v", h.Layout)
	}
	h = okAttr(t)(s.Create(ctx, "/a/b/small", 0o644, ss(4096, 0)))
	if h.Layout != ss(4096, servers) {
		t.Fatalf("strip hint: %+v", h.Layout)
	}

	// A nearer default wins; clearing it falls back to /a's.
	okAttr(t)(s.SetLayout(ctx, "/a/b", ss(8192, 0), false))
	check("/a/b/g", ss(8192, servers))
	check("/a/b/c/g", ss(8192, servers))
	if l := okAttr(t)(s.SetLayout(ctx, "/a/b", dist.Layout{}, false)).Layout; !l.IsZero() {
		t.Fatalf("cleared layout = %+v", l)
	}
	check("/a/b/k", ss(1<<20, 2))

	// The root's default acts as the file system default.
	okAttr(t)(s.SetLayout(ctx, "/", dist.Layout{Dist: dist.Basic}, false))
	check("/r", resolved(t, dist.Layout{Dist: dist.Basic}, servers))
	check("/a/b/m", ss(1<<20, 2))

	// Renaming a directory changes what it inherits.
	okRename(t)(s.Rename(ctx, "/a/b", "/b"))
	check("/b/n", resolved(t, dist.Layout{Dist: dist.Basic}, servers))

	// Invalid layouts are EINVAL and change nothing.
	for _, l := range []dist.Layout{
		{Dist: "nonesuch"},
		{Dist: dist.SimpleStripe, Datafiles: servers + 1},
		{Dist: dist.SimpleStripe, Params: "strip_size=0"},
		{Dist: dist.SimpleStripe, Params: "bogus=1"},
		{Params: "strip_size=4096"}, // parameters without a name
	} {
		if _, err := s.SetLayout(ctx, "/a", l, false); errnoOf(t, err) != syscall.EINVAL {
			t.Errorf("SetLayout(/a, %+v): %v", l, err)
		}
		if _, err := s.Create(ctx, "/a/bad", 0o644, l); errnoOf(t, err) != syscall.EINVAL {
			t.Errorf("Create with hints %+v: %v", l, err)
		}
	}
	if _, err := s.Create(ctx, "/a/bad", 0o644, dist.Layout{Datafiles: servers + 1}); errnoOf(t, err) != syscall.EINVAL {
		t.Errorf("Create with too many datafiles: %v", err)
	}
	if _, err := s.Lookup(ctx, "/a/bad"); errnoOf(t, err) != syscall.ENOENT {
		t.Errorf("failed create left an entry: %v", err)
	}
	if l := okAttr(t)(s.Lookup(ctx, "/a")).Layout; l != ss(1<<20, 2) {
		t.Errorf("failed SetLayout changed /a to %+v", l)
	}
	if _, err := s.SetLayout(ctx, "/nope", dist.Layout{}, false); errnoOf(t, err) != syscall.ENOENT {
		t.Errorf("SetLayout on a missing path: %v", err)
	}
}

func TestServerDefaultLayout(t *testing.T) {
	ctx := t.Context()
	def := dist.Layout{Dist: dist.SimpleStripe, Params: "strip_size=131072", Datafiles: 2}
	s := openT(t, Options{Servers: 3, DefaultLayout: def})
	okAttr(t)(s.Mkdir(ctx, "/d", 0o755))
	if a := okAttr(t)(s.Create(ctx, "/d/f", 0o644, dist.Layout{})); a.Layout != def {
		t.Fatalf("server default: %+v", a.Layout)
	}
	okAttr(t)(s.SetLayout(ctx, "/", dist.Layout{Dist: dist.Basic}, false))
	if a := okAttr(t)(s.Create(ctx, "/d/g", 0o644, dist.Layout{})); a.Layout.Dist != dist.Basic {
		t.Fatalf("root default did not override the server default: %+v", a.Layout)
	}
}

func TestSetLayoutFile(t *testing.T) {
	ctx := t.Context()
	s := openT(t, Options{Servers: 4, Stuffing: true})
	okAttr(t)(s.Create(ctx, "/x", 0o644, dist.Layout{}))
	f := okAttr(t)(s.Create(ctx, "/f", 0o644, dist.Layout{})) // second create: first server 1
	if f.Servers[0] != 1 || !f.Stuffed {
		t.Fatalf("Create = %+v", f)
	}
	_, err := s.SetLayout(ctx, "/f", dist.Layout{Dist: dist.Basic}, false)
	if errnoOf(t, err) != syscall.EBUSY || !strings.Contains(err.Error(), "layout of a file with data cannot change") {
		t.Fatalf("SetLayout on a file with data: %v", err)
	}
	if _, err := s.SetLayout(ctx, "/f", dist.Layout{}, true); errnoOf(t, err) != syscall.EINVAL {
		t.Fatalf("clearing a file's layout: %v", err)
	}
	l := dist.Layout{Dist: dist.SimpleStripe, Params: "strip_size=4096", Datafiles: 3}
	a := okAttr(t)(s.SetLayout(ctx, "/f", l, true))
	if a.Layout != l || !slices.Equal(a.Servers, []uint32{1, 2, 3}) || a.Stuffed || a.ID != f.ID {
		t.Fatalf("SetLayout on an empty file = %+v", a)
	}
	if got := okAttr(t)(s.Lookup(ctx, "/f")); !reflect.DeepEqual(got, a) {
		t.Fatalf("Lookup after SetLayout = %+v, want %+v", got, a)
	}
	a = okAttr(t)(s.SetLayout(ctx, "/f", dist.Layout{Dist: dist.SimpleStripe}, true))
	if !slices.Equal(a.Servers, []uint32{1, 2, 3, 0}) || a.Layout.Datafiles != 4 {
		t.Fatalf("SetLayout to all servers = %+v", a)
	}
	if _, err := s.SetLayout(ctx, "/f", dist.Layout{Dist: dist.SimpleStripe, Datafiles: 5}, true); errnoOf(t, err) != syscall.EINVAL {
		t.Fatalf("too wide: %v", err)
	}
}

func TestRoundRobin(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "meta.db")
	const servers = 3
	s, err := Open(path, Options{Servers: servers})
	if err != nil {
		t.Fatal(err)
	}
	two := dist.Layout{Dist: dist.SimpleStripe, Datafiles: 2}
	var k uint32
	create := func(s *Store, name string, hints dist.Layout, n int) {
		t.Helper()
		a := okAttr(t)(s.Create(ctx, name, 0o644, hints))
		want := make([]uint32, n)
		for i := range want {
			want[i] = (k + uint32(i)) % servers
		}
		if !slices.Equal(a.Servers, want) {
			t.Fatalf("create #%d %s: Servers = %v, want %v", k, name, a.Servers, want)
		}
		k++
	}
	for i := range 5 {
		create(s, fmt.Sprintf("/f%d", i), dist.Layout{}, servers)
		okAttr(t)(s.Mkdir(ctx, fmt.Sprintf("/d%d", i), 0o755)) // does not advance the counter
	}
	create(s, "/two", two, 2)
	create(s, "/basic", dist.Layout{Dist: dist.Basic}, 1)
	if _, err := s.Create(ctx, "/bad", 0o644, dist.Layout{Dist: "nonesuch"}); err == nil {
		t.Fatal("bad create succeeded")
	} // a failed create does not advance it either
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// The counter survives a restart.
	s = openAt(t, path, Options{Servers: servers})
	create(s, "/after", two, 2)
	create(s, "/after2", dist.Layout{}, servers)
}

func TestStuffing(t *testing.T) {
	ctx := t.Context()
	s := openT(t, Options{Servers: 4, Stuffing: true})
	f := okAttr(t)(s.Create(ctx, "/f", 0o644, dist.Layout{}))
	if !f.Stuffed || len(f.Servers) != 4 || f.Layout.Datafiles != 4 {
		t.Fatalf("stuffed create = %+v", f)
	}
	u := okAttr(t)(s.Unstuff(ctx, f.ID))
	if u.Stuffed || !slices.Equal(u.Servers, f.Servers) || u.Layout != f.Layout {
		t.Fatalf("Unstuff = %+v", u)
	}
	if again := okAttr(t)(s.Unstuff(ctx, f.ID)); !reflect.DeepEqual(again, u) {
		t.Fatalf("second Unstuff = %+v, want %+v", again, u)
	}
	if got := okAttr(t)(s.Lookup(ctx, "/f")); got.Stuffed {
		t.Fatalf("Lookup after Unstuff = %+v", got)
	}
	// One datafile: nothing to stuff.
	if b := okAttr(t)(s.Create(ctx, "/b", 0o644, dist.Layout{Dist: dist.Basic})); b.Stuffed {
		t.Errorf("basic file stuffed: %+v", b)
	}
	// Stuffing keeps datafile 0's data in place, so a layout whose first
	// bytes live elsewhere is not stuffed.
	vs := okAttr(t)(s.Create(ctx, "/vs", 0o644, dist.Layout{Dist: dist.Varstrip, Params: "strips=1:100;0:100"}))
	if vs.Stuffed || vs.Layout.Datafiles != 2 || len(vs.Servers) != 2 {
		t.Errorf("varstrip starting on datafile 1: %+v", vs)
	}
	vs = okAttr(t)(s.Create(ctx, "/vs0", 0o644, dist.Layout{Dist: dist.Varstrip, Params: "strips=0:100;1:100"}))
	if !vs.Stuffed || vs.Layout.Datafiles != 2 {
		t.Errorf("varstrip starting on datafile 0: %+v", vs)
	}
	d := okAttr(t)(s.Mkdir(ctx, "/d", 0o755))
	if _, err := s.Unstuff(ctx, d.ID); errnoOf(t, err) != syscall.EISDIR {
		t.Errorf("Unstuff(dir): %v", err)
	}
	if _, err := s.Unstuff(ctx, 9999); errnoOf(t, err) != syscall.ENOENT {
		t.Errorf("Unstuff(unknown): %v", err)
	}

	off := openT(t, Options{Servers: 4})
	if f := okAttr(t)(off.Create(ctx, "/f", 0o644, dist.Layout{})); f.Stuffed {
		t.Errorf("stuffing off but file stuffed: %+v", f)
	}
	one := openT(t, Options{Servers: 1, Stuffing: true})
	if f := okAttr(t)(one.Create(ctx, "/f", 0o644, dist.Layout{})); f.Stuffed {
		t.Errorf("one server but file stuffed: %+v", f)
	}
}

// snapshot walks the whole namespace into path -> Attr.
func snapshot(t tb, s *Store) map[string]Attr {
	ctx := context.Background() // rapid.T has no Context
	t.Helper()
	out := map[string]Attr{"/": okAttr(t)(s.Lookup(ctx, "/"))}
	var walk func(dir string)
	walk = func(dir string) {
		for _, e := range okDir(t)(s.Readdir(ctx, dir)) {
			p := strings.TrimSuffix(dir, "/") + "/" + e.Name
			out[p] = e.Attr
			if e.Attr.Kind == KindDir {
				walk(p)
			}
		}
	}
	walk("/")
	return out
}

func TestDurability(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "meta.db")
	opts := Options{Servers: 3, Stuffing: true}
	s, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	okAttr(t)(s.Mkdir(ctx, "/a", 0o700))
	okAttr(t)(s.SetLayout(ctx, "/a", dist.Layout{Dist: dist.SimpleStripe, Params: "strip_size=4096", Datafiles: 2}, false))
	f := okAttr(t)(s.Create(ctx, "/a/f", 0o600, dist.Layout{}))
	size := int64(99)
	okAttr(t)(s.SetAttr(ctx, "/a/f", AttrChanges{Size: &size}))
	okAttr(t)(s.Unstuff(ctx, f.ID))
	okAttr(t)(s.Create(ctx, "/a/g", 0o600, dist.Layout{}))
	okRename(t)(s.Rename(ctx, "/a/g", "/g"))
	for d := range 10 {
		dir := fmt.Sprintf("/d%d", d)
		okAttr(t)(s.Mkdir(ctx, dir, 0o755))
		for i := range 100 {
			okAttr(t)(s.Create(ctx, fmt.Sprintf("%s/f%03d", dir, i), 0o644, dist.Layout{}))
		}
	}
	before := snapshot(t, s)
	if len(before) != 1+1+2+10+1000 {
		t.Fatalf("snapshot has %d entries", len(before))
	}
	files, dirs, _ := s.Stats(ctx)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Lookup(ctx, "/"); err == nil {
		t.Error("Lookup on a closed store succeeded")
	}

	s = openAt(t, path, opts)
	after := snapshot(t, s)
	if !reflect.DeepEqual(before, after) {
		for p, a := range before {
			if b, ok := after[p]; !ok || !reflect.DeepEqual(a, b) {
				t.Errorf("%s: before %+v, after %+v (present %v)", p, a, b, ok)
			}
		}
		t.Fatalf("namespace changed across reopen: %d entries before, %d after", len(before), len(after))
	}
	if a := after["/a/f"]; a.Size != 99 || a.Stuffed || a.Layout.Datafiles != 2 {
		t.Errorf("/a/f after reopen: %+v", a)
	}
	if f2, d2, _ := s.Stats(ctx); f2 != files || d2 != dirs || f2 != 1002 || d2 != 12 {
		t.Errorf("Stats after reopen = %d, %d; before %d, %d", f2, d2, files, dirs)
	}
	// IDs are never reused.
	var maxID FileID
	for _, a := range after {
		maxID = max(maxID, a.ID)
	}
	if n := okAttr(t)(s.Create(ctx, "/new", 0o644, dist.Layout{})); n.ID <= maxID {
		t.Errorf("new ID %d not above %d", n.ID, maxID)
	}
}

func TestConcurrent(t *testing.T) {
	ctx := t.Context()
	s := openT(t, Options{Servers: 4})
	const workers, each = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, workers*each*2)
	for w := range workers {
		wg.Go(func() {
			dir := fmt.Sprintf("/w%d", w)
			if _, err := s.Mkdir(ctx, dir, 0o755); err != nil {
				errs <- err
				return
			}
			for i := range each {
				if _, err := s.Create(ctx, fmt.Sprintf("%s/f%d", dir, i), 0o644, dist.Layout{}); err != nil {
					errs <- err
				}
				if _, err := s.Readdir(ctx, "/"); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	snap := snapshot(t, s)
	seen := map[FileID]string{}
	for p, a := range snap {
		if q, dup := seen[a.ID]; dup {
			t.Errorf("ID %d used by %s and %s", a.ID, p, q)
		}
		seen[a.ID] = p
	}
	if len(snap) != 1+workers*(1+each) {
		t.Errorf("%d entries, want %d", len(snap), 1+workers*(1+each))
	}
	// Round robin over all creates: each server is first equally often.
	first := make([]int, 4)
	for _, a := range snap {
		if a.Kind == KindFile {
			first[a.Servers[0]]++
		}
	}
	for i, n := range first {
		if n != workers*each/4 {
			t.Errorf("server %d is first for %d files, want %d", i, n, workers*each/4)
		}
	}
}

// A request whose caller has gone is not executed: every method fails with
// the context's error, naming the op, and the namespace stays as it was.
func TestStoreCanceledContext(t *testing.T) {
	s := openT(t, Options{Servers: 2, Stuffing: true})
	live := t.Context()
	f := okAttr(t)(s.Create(live, "/f", 0o644, dist.Layout{}))
	okAttr(t)(s.Mkdir(live, "/d", 0o755))
	before := snapshot(t, s)

	ctx, cancel := context.WithCancel(live)
	cancel()
	mode := uint32(0o600)
	ops := map[string]func() error{
		"lookup":    func() error { _, err := s.Lookup(ctx, "/f"); return err },
		"getbyid":   func() error { _, err := s.GetByID(ctx, f.ID); return err },
		"mkdir":     func() error { _, err := s.Mkdir(ctx, "/e", 0o755); return err },
		"create":    func() error { _, err := s.Create(ctx, "/g", 0o644, dist.Layout{}); return err },
		"readdir":   func() error { _, err := s.Readdir(ctx, "/"); return err },
		"remove":    func() error { _, err := s.Remove(ctx, "/f"); return err },
		"rename":    func() error { _, err := s.Rename(ctx, "/f", "/h"); return err },
		"setlayout": func() error { _, err := s.SetLayout(ctx, "/d", dist.DefaultLayout(), true); return err },
		"unstuff":   func() error { _, err := s.Unstuff(ctx, f.ID); return err },
		"setattr":   func() error { _, err := s.SetAttr(ctx, "/f", AttrChanges{Mode: &mode}); return err },
		"stats":     func() error { _, _, err := s.Stats(ctx); return err },
	}
	for op, fn := range ops {
		err := fn()
		if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), op) {
			t.Errorf("%s under a canceled context: %v, want context.Canceled naming the op", op, err)
		}
	}
	if after := snapshot(t, s); !reflect.DeepEqual(after, before) {
		t.Errorf("namespace changed under a canceled context:\nbefore %v\nafter  %v", before, after)
	}
}

// Atime: set at create, by an access (relatime's update, which leaves
// ctime) and by utimens (which moves ctime); nanoseconds are kept.
func TestAtime(t *testing.T) {
	ctx := t.Context()
	s := openT(t, Options{Servers: 1})
	f := okAttr(t)(s.Create(ctx, "/f", 0o644, dist.Layout{}))
	if f.Atime != f.Mtime || f.Atime == 0 {
		t.Fatalf("Create: atime %d, mtime %d", f.Atime, f.Mtime)
	}
	read := f.Mtime + 123456789
	a := okAttr(t)(s.SetAttr(ctx, "/f", AttrChanges{Atime: &read, Access: true}))
	if a.Atime != read || a.Ctime != f.Ctime || a.Mtime != f.Mtime {
		t.Errorf("access: %+v, want atime %d and ctime, mtime unchanged", a, read)
	}
	set := int64(1577934245123456789) // 2020-01-02 03:04:05.123456789
	a = okAttr(t)(s.SetAttr(ctx, "/f", AttrChanges{Atime: &set}))
	if a.Atime != set || a.Ctime <= f.Ctime || a.Mtime != f.Mtime {
		t.Errorf("utimens atime: %+v, want atime %d, ctime moved, mtime unchanged", a, set)
	}
	if got := okAttr(t)(s.Lookup(ctx, "/f")); got.Atime != set {
		t.Errorf("stored atime %d, want %d", got.Atime, set)
	}
	mode := uint32(0o600)
	if _, err := s.SetAttr(ctx, "/f", AttrChanges{Atime: &read, Mode: &mode, Access: true}); errnoOf(t, err) != syscall.EINVAL {
		t.Errorf("access with a mode change: %v, want EINVAL", err)
	}
}

// A trailing slash asks for a directory, as POSIX path resolution says:
// every op on "f/" of a file is ENOTDIR (rm f/ used to remove file f), a
// name with one that does not exist cannot become a file (cp x d/ used to
// create file d), and a directory takes one anywhere.
func TestTrailingSlash(t *testing.T) {
	ctx := t.Context()
	s := openT(t, Options{Servers: 2})
	okAttr(t)(s.Mkdir(ctx, "/d", 0o755))
	f := okAttr(t)(s.Create(ctx, "/d/f", 0o644, dist.Layout{}))
	okAttr(t)(s.Symlink(ctx, "/d", "/l"))
	for _, tc := range []struct {
		name string
		err  error
		want syscall.Errno
	}{
		{"lookup file/", func() error { _, err := s.Lookup(ctx, "/d/f/"); return err }(), syscall.ENOTDIR},
		{"lookup file//", func() error { _, err := s.Lookup(ctx, "/d/f//"); return err }(), syscall.ENOTDIR},
		{"lookup link/", func() error { _, err := s.Lookup(ctx, "/l/"); return err }(), syscall.ENOTDIR},
		{"remove file/", func() error { _, err := s.Remove(ctx, "/d/f/"); return err }(), syscall.ENOTDIR},
		{"setattr file/", func() error { _, err := s.SetAttr(ctx, "/d/f/", AttrChanges{}); return err }(), syscall.ENOTDIR},
		{"setlayout file/", func() error { _, err := s.SetLayout(ctx, "/d/f/", dist.Layout{}, true); return err }(), syscall.ENOTDIR},
		{"create file/ over a file", func() error { _, err := s.Create(ctx, "/d/f/", 0o644, dist.Layout{}); return err }(), syscall.ENOTDIR},
		{"create new/", func() error { _, err := s.Create(ctx, "/d/new/", 0o644, dist.Layout{}); return err }(), syscall.EISDIR},
		{"mknod new/", func() error { _, err := s.Mknod(ctx, "/d/new/", KindFIFO, 0o644, 0); return err }(), syscall.ENOENT},
		{"symlink new/", func() error { _, err := s.Symlink(ctx, "/d", "/d/new/"); return err }(), syscall.ENOENT},
		{"link new/", func() error { _, err := s.Link(ctx, f.ID, "/d/new/"); return err }(), syscall.ENOENT},
		{"rename file/", func() error { _, err := s.Rename(ctx, "/d/f/", "/d/g"); return err }(), syscall.ENOTDIR},
		{"rename to new/", func() error { _, err := s.Rename(ctx, "/d/f", "/d/g/"); return err }(), syscall.ENOTDIR},
		{"create in missing/", func() error { _, err := s.Create(ctx, "/nodir/x/", 0o644, dist.Layout{}); return err }(), syscall.ENOENT},
		{"lookup dir/", func() error { _, err := s.Lookup(ctx, "/d/"); return err }(), 0},
		{"mkdir new/", func() error { _, err := s.Mkdir(ctx, "/d/e/", 0o755); return err }(), 0},
		{"rename dir/ to dir2/", func() error { _, err := s.Rename(ctx, "/d/e/", "/d/e2/"); return err }(), 0},
		{"remove dir/", func() error { _, err := s.Remove(ctx, "/d/e2/"); return err }(), 0},
	} {
		if got := errnoOf(t, tc.err); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, tc.err, tc.want)
		}
	}
	// Nothing was made or lost by the refused ops.
	if got := names(okDir(t)(s.Readdir(ctx, "/d"))); !slices.Equal(got, []string{"f"}) {
		t.Fatalf("/d holds %v, want [f]", got)
	}
}

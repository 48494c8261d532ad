package errorfs

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/pario/pario/vfs"
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestRules checks which calls each kind of rule fails.
func TestRules(t *testing.T) {
	for _, c := range []struct {
		name string
		rule Rule
		want string // for the 5 syncs of a/f, b/f, a/f, a/g, a/f: x fails
	}{
		{"every sync", Rule{Op: OpSync}, "xxxxx"},
		{"every op", Rule{Op: OpAny}, "xxxxx"},
		{"other op", Rule{Op: OpWrite}, "....."},
		{"one file", Rule{Op: OpSync, Path: "a/f"}, "x.x.x"},
		{"glob", Rule{Op: OpSync, Path: "*/f"}, "xxx.x"},
		{"glob dir", Rule{Op: OpSync, Path: "a/*"}, "x.xxx"},
		{"no match", Rule{Op: OpSync, Path: "c/*"}, "....."},
		{"nth", Rule{Op: OpSync, Path: "a/f", Nth: 2}, "..x.."},
		{"nth and after", Rule{Op: OpSync, Path: "a/f", Nth: 2, AndAfter: true}, "..x.x"},
		{"nth of all", Rule{Op: OpSync, Nth: 4}, "...x."},
		{"nth beyond", Rule{Op: OpSync, Nth: 9}, "....."},
	} {
		t.Run(c.name, func(t *testing.T) {
			mem := vfs.NewMem()
			must(t, mem.Mkdir("a", 0o700))
			must(t, mem.Mkdir("b", 0o700))
			rule := c.rule
			e := Wrap(mem)
			files := map[string]vfs.File{}
			for _, n := range []string{"a/f", "b/f", "a/g"} {
				f, err := e.OpenFile(n, os.O_RDWR|os.O_CREATE, 0o600)
				must(t, err)
				files[n] = f
			}
			e.Add(&rule)
			got := ""
			for _, n := range []string{"a/f", "b/f", "a/f", "a/g", "a/f"} {
				err := files[n].Sync()
				switch {
				case err == nil:
					got += "."
				case errors.Is(err, ErrInjected):
					got += "x"
					var pe *fs.PathError
					if !errors.As(err, &pe) || pe.Path != n || pe.Op != "sync" {
						t.Fatalf("error %v does not name the sync of %s", err, n)
					}
				default:
					t.Fatal(err)
				}
			}
			if got != c.want {
				t.Fatalf("syncs failed %q, want %q", got, c.want)
			}
			if inj := strings.Count(got, "x"); e.Injected(&rule) != inj {
				t.Fatalf("Injected = %d, want %d", e.Injected(&rule), inj)
			}
			if c.rule.Op == OpSync && c.rule.Path == "" && e.Hits(&rule) != 5 {
				t.Fatalf("Hits = %d, want 5", e.Hits(&rule))
			}
		})
	}
}

// TestInjectedNotPerformed: a failed call leaves the wrapped FS as it was,
// except the part of a short write; the error is the rule's, marked.
func TestInjectedNotPerformed(t *testing.T) {
	mem := vfs.NewMem()
	e := Wrap(mem)
	f, err := e.OpenFile("f", os.O_RDWR|os.O_CREATE, 0o600)
	must(t, err)
	must(t, e.SyncDir("."))

	e.Add(&Rule{Op: OpWrite, Err: syscall.ENOSPC, ShortWrite: 3})
	n, err := f.WriteAt([]byte("abcdef"), 10)
	if n != 3 || !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "no space left on device (injected)") {
		t.Fatalf("short write = %d, %v", n, err)
	}
	e.Clear()
	b := make([]byte, 13)
	if n, _ := f.ReadAt(b, 0); n != 13 || string(b[10:]) != "abc" {
		t.Fatalf("after a short write: %d, %q", n, b)
	}

	e.Add(&Rule{Op: OpSync})
	if err := f.Sync(); !errors.Is(err, ErrInjected) {
		t.Fatalf("Sync: %v", err)
	}
	if fi, _ := mem.CrashClone().OpenFile("f", os.O_RDONLY, 0); fi != nil {
		if st, _ := fi.Stat(); st.Size() != 0 {
			t.Fatal("an injected Sync synced")
		}
	}
	e.Clear()

	for _, c := range []struct {
		op   Op
		call func() error
		gone func() bool // reports whether the call happened anyway
	}{
		{OpMkdir, func() error { return e.Mkdir("d", 0o700) },
			func() bool { _, err := mem.ReadDir("d"); return err == nil }},
		{OpRemove, func() error { return e.Remove("f") },
			func() bool { _, err := mem.OpenFile("f", os.O_RDONLY, 0); return err != nil }},
		{OpOpen, func() error { _, err := e.OpenFile("g", os.O_RDWR|os.O_CREATE, 0o600); return err },
			func() bool { _, err := mem.OpenFile("g", os.O_RDONLY, 0); return err == nil }},
		{OpTruncate, func() error { return f.Truncate(0) },
			func() bool { st, _ := f.Stat(); return st.Size() == 0 }},
		{OpLock, func() error { _, err := e.Lock("LOCK"); return err },
			func() bool { _, err := mem.OpenFile("LOCK", os.O_RDONLY, 0); return err == nil }},
	} {
		r := &Rule{Op: c.op}
		e.Add(r)
		if err := c.call(); !errors.Is(err, ErrInjected) {
			t.Fatalf("%s: %v", c.op, err)
		}
		e.Clear()
		if c.gone() {
			t.Fatalf("injected %s was performed", c.op)
		}
		if err := c.call(); err != nil {
			t.Fatalf("%s without the rule: %v", c.op, err)
		}
	}

	// Close closes even when it reports an injected error.
	e.Add(&Rule{Op: OpClose})
	if err := f.Close(); !errors.Is(err, ErrInjected) {
		t.Fatalf("Close: %v", err)
	}
	e.Clear()
	if _, err := f.ReadAt(b, 0); !errors.Is(err, fs.ErrClosed) {
		t.Fatalf("read after an injected Close: %v", err)
	}
}

// TestOpenRootPaths: an OpenRoot child shares the rules, and its paths are
// relative to the wrapped FS, so one pattern sees every level.
func TestOpenRootPaths(t *testing.T) {
	mem := vfs.NewMem()
	must(t, mem.Mkdir("df", 0o700))
	must(t, mem.Mkdir("df/ab", 0o700))
	r := &Rule{Op: OpSyncDir, Path: "df/ab"}
	w := &Rule{Op: OpOpen, Path: "df/ab/*"}
	e := Wrap(mem, r, w)
	df, err := e.OpenRoot("df")
	must(t, err)
	sh, err := df.OpenRoot("ab")
	must(t, err)
	if err := sh.SyncDir("."); !errors.Is(err, ErrInjected) || !strings.Contains(err.Error(), "syncdir df/ab:") {
		t.Fatalf("SyncDir of the shard: %v", err)
	}
	if err := df.SyncDir("ab"); !errors.Is(err, ErrInjected) {
		t.Fatalf("SyncDir of the shard from df: %v", err)
	}
	must(t, df.SyncDir("."))
	if _, err := sh.OpenFile("x", os.O_RDWR|os.O_CREATE, 0o600); !errors.Is(err, ErrInjected) ||
		!strings.Contains(err.Error(), "df/ab/x") {
		t.Fatalf("open in the shard: %v", err)
	}
	if e.Hits(r) != 2 || e.Hits(w) != 1 {
		t.Fatalf("hits %d, %d", e.Hits(r), e.Hits(w))
	}
	for _, op := range []Op{OpAny, OpSync, OpClose, Op(99)} {
		if op.String() == "" {
			t.Fatal("empty op name")
		}
	}
}

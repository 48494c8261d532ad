package meta

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"pgregory.net/rapid"

	"github.com/pario/pario/dist"
)

// model is the reference namespace: a map from clean path to entry.
type model map[string]modelEntry

type modelEntry struct {
	kind Kind
	id   FileID
}

func parentOf(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i == 0 {
		return "/"
	}
	return p[:i]
}

// checkParents is the errno for reaching p's parent: every proper
// ancestor must exist and be a directory.
func (m model) checkParents(p string) syscall.Errno {
	comps := strings.Split(p[1:], "/")
	for i := 1; i < len(comps); i++ {
		e, ok := m["/"+strings.Join(comps[:i], "/")]
		if !ok {
			return syscall.ENOENT
		}
		if e.kind != KindDir {
			return syscall.ENOTDIR
		}
	}
	return 0
}

func (m model) isEmptyDir(p string) bool {
	for q := range m {
		if q != p && parentOf(q) == p {
			return false
		}
	}
	return true
}

func (m model) add(p string, kind Kind) syscall.Errno {
	if p == "/" {
		return syscall.EEXIST
	}
	if e := m.checkParents(p); e != 0 {
		return e
	}
	if _, ok := m[p]; ok {
		return syscall.EEXIST
	}
	return 0 // the caller records the entry with the store's ID
}

func (m model) remove(p string) (modelEntry, syscall.Errno) {
	if p == "/" {
		return modelEntry{}, syscall.EBUSY
	}
	if e := m.checkParents(p); e != 0 {
		return modelEntry{}, e
	}
	e, ok := m[p]
	if !ok {
		return modelEntry{}, syscall.ENOENT
	}
	if e.kind == KindDir && !m.isEmptyDir(p) {
		return modelEntry{}, syscall.ENOTEMPTY
	}
	delete(m, p)
	return e, 0
}

func (m model) rename(o, n string) (*modelEntry, syscall.Errno) {
	if o == "/" || n == "/" {
		return nil, syscall.EINVAL
	}
	if e := m.checkParents(o); e != 0 {
		return nil, e
	}
	src, ok := m[o]
	if !ok {
		return nil, syscall.ENOENT
	}
	if e := m.checkParents(n); e != 0 {
		return nil, e
	}
	if o == n {
		return nil, 0
	}
	if src.kind == KindDir && strings.HasPrefix(n, o+"/") {
		return nil, syscall.EINVAL
	}
	var replaced *modelEntry
	if dst, ok := m[n]; ok && dst.id == src.id {
		return nil, 0 // two names of one file
	} else if ok {
		switch {
		case src.kind == KindDir && dst.kind != KindDir:
			return nil, syscall.ENOTDIR
		case src.kind != KindDir && dst.kind == KindDir:
			return nil, syscall.EISDIR
		case dst.kind == KindDir && !m.isEmptyDir(n):
			return nil, syscall.ENOTEMPTY
		}
		delete(m, n)
		replaced = &dst
	}
	moved := map[string]modelEntry{}
	for q, e := range m {
		if q == o || strings.HasPrefix(q, o+"/") {
			moved[n+q[len(o):]] = e
			delete(m, q)
		}
	}
	for q, e := range moved {
		m[q] = e
	}
	return replaced, 0
}

// batchOp is one operation of ApplyBatch on the model, with its checks
// in the store's order (txn.batchCheck: txn.batchEntry, then the
// removal's or the change's own): the directory by ID, the name in it, the expected
// ID, then, for a removal, the kind. An attribute change leaves the
// model's names alone.
func (m model) batchOp(op BatchOp) syscall.Errno {
	p, e, errno := m.batchEntry(op)
	switch {
	case errno != 0:
		return errno
	case op.SetAttr != nil:
		return 0
	case !op.Rmdir && e.kind == KindDir:
		return syscall.EISDIR
	case op.Rmdir && e.kind != KindDir:
		return syscall.ENOTDIR
	case op.Rmdir && !m.isEmptyDir(p):
		return syscall.ENOTEMPTY
	}
	delete(m, p)
	return 0
}

// batchEntry finds the entry a batch operation names.
func (m model) batchEntry(op BatchOp) (string, modelEntry, syscall.Errno) {
	// The batch names the directory by ID, as it was when drawn: a file
	// there since unlinked may live on under another name (ENOTDIR, not
	// ENOENT); a directory has one name, so its path is found by its ID.
	parent, kind, ok := "", Kind(0), false
	for q, e := range m {
		if e.id == op.Dir {
			parent, kind, ok = q, e.kind, true
			break
		}
	}
	switch {
	case !ok:
		return "", modelEntry{}, syscall.ENOENT
	case kind != KindDir:
		return "", modelEntry{}, syscall.ENOTDIR
	}
	p := filepath.Join(parent, op.Name)
	e, ok := m[p]
	switch {
	case !ok:
		return "", modelEntry{}, syscall.ENOENT
	case op.Self != 0 && op.Self != e.id:
		return "", modelEntry{}, syscall.ESTALE
	}
	return p, e, 0
}

// names counts the paths naming id.
func (m model) names(id FileID) uint32 {
	var n uint32
	for _, e := range m {
		if e.id == id {
			n++
		}
	}
	return n
}

// nlink is the link count of entry e at p: its names, or for a
// directory 2 + its subdirectories.
func (m model) nlink(p string, e modelEntry) uint32 {
	if e.kind != KindDir {
		return m.names(e.id)
	}
	n := uint32(2)
	for q, c := range m {
		if q != p && c.kind == KindDir && parentOf(q) == p {
			n++
		}
	}
	return n
}

// modelPaths are the paths the property test uses: "/" and up to three
// levels of the names a, b, c.
var modelPaths = func() []string {
	out := []string{"/"}
	level := []string{""}
	for range 3 {
		var next []string
		for _, p := range level {
			for _, n := range []string{"a", "b", "c"} {
				next = append(next, p+"/"+n)
			}
		}
		out = append(out, next...)
		level = next
	}
	return out
}()

// TestModel runs random sequences of mkdir/create/rename/remove (and
// restarts) against the store and the model, comparing every result and
// the whole namespace after every step.
func TestModel(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	run := 0
	rapid.Check(t, func(rt *rapid.T) {
		run++
		path := filepath.Join(dir, fmt.Sprintf("model%d.db", run))
		opts := Options{Servers: 3}
		open := func() *Store {
			s, err := Open(path, opts)
			if err != nil {
				rt.Fatalf("Open: %v", err)
			}
			s.db.NoSync = true // speed only: durability is tested elsewhere
			return s
		}
		s := open()
		defer func() { s.Close() }()
		m := model{"/": {KindDir, RootID}}
		pathGen := rapid.SampledFrom(modelPaths)

		errno := func(err error) syscall.Errno {
			if err == nil {
				return 0
			}
			var e syscall.Errno
			if !errors.As(err, &e) {
				rt.Fatalf("error without errno: %v", err)
			}
			return e
		}
		expect := func(what string, got error, want syscall.Errno) {
			if g := errno(got); g != want {
				rt.Fatalf("%s: err = %v, want errno %v", what, got, want)
			}
		}

		rt.Repeat(map[string]func(*rapid.T){
			"mkdir": func(rt *rapid.T) {
				p := pathGen.Draw(rt, "path")
				a, err := s.Mkdir(ctx, p, 0o755)
				want := m.add(p, KindDir)
				expect("mkdir "+p, err, want)
				if want == 0 {
					m[p] = modelEntry{KindDir, a.ID}
				}
			},
			"create": func(rt *rapid.T) {
				p := pathGen.Draw(rt, "path")
				a, err := s.Create(ctx, p, 0o644, dist.Layout{})
				want := m.add(p, KindFile)
				expect("create "+p, err, want)
				if want == 0 {
					m[p] = modelEntry{KindFile, a.ID}
				}
			},
			"symlink": func(rt *rapid.T) {
				p := pathGen.Draw(rt, "path")
				a, err := s.Symlink(ctx, "target", p)
				want := m.add(p, KindSymlink)
				expect("symlink "+p, err, want)
				if want == 0 {
					m[p] = modelEntry{KindSymlink, a.ID}
				}
			},
			"link": func(rt *rapid.T) {
				o, n := pathGen.Draw(rt, "old"), pathGen.Draw(rt, "new")
				e, ok := m[o]
				if !ok {
					return
				}
				_, err := s.Link(ctx, e.id, n)
				var want syscall.Errno
				switch {
				case n == "/":
					want = syscall.EEXIST
				case e.kind == KindDir:
					want = syscall.EPERM
				default:
					want = m.add(n, e.kind)
				}
				expect("link "+o+" "+n, err, want)
				if want == 0 {
					m[n] = e
				}
			},
			"remove": func(rt *rapid.T) {
				p := pathGen.Draw(rt, "path")
				a, err := s.Remove(ctx, p)
				e, want := m.remove(p)
				expect("remove "+p, err, want)
				if want == 0 && (a.ID != e.id || a.Kind != e.kind || a.Nlink != m.names(e.id) && e.kind != KindDir) {
					rt.Fatalf("remove %s returned %+v, model has %+v with %d names left", p, a, e, m.names(e.id))
				}
			},
			"rename": func(rt *rapid.T) {
				o, n := pathGen.Draw(rt, "old"), pathGen.Draw(rt, "new")
				r, err := s.Rename(ctx, o, n)
				want, errno := m.rename(o, n)
				expect("rename "+o+" "+n, err, errno)
				switch {
				case (r == nil) != (want == nil):
					rt.Fatalf("rename %s %s replaced %+v, model %+v", o, n, r, want)
				case r != nil && (r.ID != want.id || r.Kind != want.kind || r.Kind != KindDir && r.Nlink != m.names(r.ID)):
					rt.Fatalf("rename %s %s replaced %+v, model %+v", o, n, *r, *want)
				}
			},
			// A delegation holder's batch (ApplyBatch): each unlink, rmdir
			// or mode change by directory ID, name and expected ID, right
			// or wrong, in order, as the model applies them one by one;
			// each entry changed and still there has the last mode set.
			"batch": func(rt *rapid.T) {
				n := rapid.IntRange(1, 4).Draw(rt, "ops")
				ops := make([]BatchOp, n)
				paths := make([]string, n)
				for i := range ops {
					p := rapid.SampledFrom(modelPaths[1:]).Draw(rt, "path")
					paths[i] = p
					op := BatchOp{Name: p[strings.LastIndexByte(p, '/')+1:], Dir: 1 << 40}
					switch rapid.IntRange(0, 2).Draw(rt, "kind") {
					case 1:
						op.Rmdir = true
					case 2:
						op.SetAttr = &BatchAttrs{Mode: new(uint32(rapid.IntRange(0, 0o777).Draw(rt, "mode"))), Ctime: 1}
					}
					if d, ok := m[parentOf(p)]; ok {
						op.Dir = d.id
					}
					switch rapid.IntRange(0, 2).Draw(rt, "self") {
					case 0:
						op.Self = m[p].id // 0 (no check) when absent
					case 1:
						op.Self = m[p].id + 1
					}
					ops[i] = op
				}
				errs, err := s.ApplyBatch(ctx, ops)
				if err != nil || len(errs) != n {
					rt.Fatalf("ApplyBatch(%+v) = %v, %v", ops, errs, err)
				}
				modes := map[FileID]uint32{}
				for i, op := range ops {
					_, e, _ := m.batchEntry(op)
					want := m.batchOp(op)
					expect(fmt.Sprintf("batch op %d %+v (%s)", i, op, paths[i]), errs[i], want)
					if want == 0 && op.SetAttr != nil {
						modes[e.id] = *op.SetAttr.Mode
					}
				}
				for q, e := range m {
					if mode, ok := modes[e.id]; ok {
						a, err := s.Lookup(ctx, q)
						if err != nil || a.Mode != mode {
							rt.Fatalf("%s after the batch: mode %o (%v), want %o", q, a.Mode, err, mode)
						}
					}
				}
			},
			"reopen": func(rt *rapid.T) {
				if err := s.Close(); err != nil {
					rt.Fatal(err)
				}
				s = open()
			},
			"": func(rt *rapid.T) {
				snap := snapshot(rt, s)
				if len(snap) != len(m) {
					rt.Fatalf("store has %d entries, model %d", len(snap), len(m))
				}
				var files, dirs int64
				counted := map[FileID]bool{}
				for p, e := range m {
					a, ok := snap[p]
					if !ok || a.ID != e.id || a.Kind != e.kind {
						rt.Fatalf("%s: store %+v (present %v), model %+v", p, a, ok, e)
					}
					if want := m.nlink(p, e); a.Nlink != want {
						rt.Fatalf("%s: nlink %d, model %d", p, a.Nlink, want)
					}
					if e.kind == KindDir {
						dirs++
					} else if !counted[e.id] {
						files++
						counted[e.id] = true
					}
				}
				f, d, err := s.Stats(ctx)
				if err != nil || f != files || d != dirs {
					rt.Fatalf("Stats = %d, %d, %v; model %d, %d", f, d, err, files, dirs)
				}
			},
		})
	})
}

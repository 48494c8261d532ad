package medic

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/pario/pario/client"
)

// Store is where the storage site keeps regenerated outputs. Begin opens a
// temporary file next to the final name; Commit moves it into place
// atomically, Abort removes it: nothing partial is ever left under name.
type Store interface {
	Begin(ctx context.Context, name string) (Pending, error)
	// Check refuses, at the offer, a name the output could not be
	// stored under: an existing directory, or one under an existing
	// file. Begin and Commit would fail only after the transfer and the
	// regeneration, with the temporary file's name.
	Check(ctx context.Context, name string) error
	// RemoveTemp removes a temporary file that Pending.Temp named, left
	// behind by a receiver that died before Commit or Abort. It refuses a
	// name that is not one of the store's temporary files.
	RemoveTemp(ctx context.Context, temp string) error
	String() string
}

// Pending is an output being regenerated.
type Pending interface {
	Write(p []byte) (int, error)
	// Commit syncs the data and renames it to its final name, which it
	// returns.
	Commit(ctx context.Context) (string, error)
	// Abort removes the temporary file.
	Abort()
	// Temp names the temporary file, relative to the store (see
	// Store.RemoveTemp).
	Temp() string
}

// CleanName checks a destination name sent by a peer: a relative,
// clean, slash-separated path that stays inside the store.
func CleanName(name string) (string, error) {
	if name == "" || strings.ContainsRune(name, 0) || strings.HasPrefix(name, "/") || strings.Contains(name, "\\") {
		return "", fmt.Errorf("bad destination name %q: want a relative path", name)
	}
	c := path.Clean(name)
	if c != name || c == "." || c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("bad destination name %q: want a clean relative path inside the destination", name)
	}
	for _, el := range strings.Split(c, "/") {
		if strings.HasPrefix(el, ".medic-") {
			return "", fmt.Errorf("bad destination name %q: names starting with .medic- are reserved", name)
		}
	}
	return c, nil
}

// checkPlace walks name's components in a store with kind (what a path
// is: exists, is a directory) and refuses a name that is a directory or
// lies under something that is not one. shown is how a path of the store
// is named in the error.
func checkPlace(name string, kind func(p string) (exists, dir bool, err error), shown func(p string) string) error {
	els := strings.Split(name, "/")
	for i := range els {
		p := strings.Join(els[:i+1], "/")
		exists, dir, err := kind(p)
		switch {
		case err != nil:
			return fmt.Errorf("destination %q: %w", name, err)
		case !exists:
			return nil // made by Begin
		case i < len(els)-1 && !dir:
			return fmt.Errorf("destination %q: %s is a file at the receiver, not a directory: send with --as another name", name, shown(p))
		case i == len(els)-1 && dir:
			return fmt.Errorf("destination %q: %s is a directory at the receiver: send with --as another name (a file in it, say)", name, shown(p))
		}
	}
	return nil
}

// checkTemp checks that temp, relative to a store, names one of the
// store's temporary files (.medic-NAME.RANDOM.tmp).
func checkTemp(temp string) error {
	base := path.Base(temp)
	if temp == "" || path.IsAbs(temp) || path.Clean(temp) != temp || temp == ".." || strings.HasPrefix(temp, "../") ||
		!strings.HasPrefix(base, ".medic-") || !strings.HasSuffix(base, ".tmp") {
		return fmt.Errorf("%q is not a temporary file of a medic store", temp)
	}
	return nil
}

func tmpSuffix() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// DirStore keeps outputs in a local directory.
func DirStore(dir string) Store { return dirStore(dir) }

type dirStore string

func (d dirStore) String() string { return string(d) }

func (d dirStore) Begin(_ context.Context, name string) (Pending, error) {
	name, err := CleanName(name)
	if err != nil {
		return nil, err
	}
	final := filepath.Join(string(d), filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(filepath.Dir(final), ".medic-"+filepath.Base(final)+".*.tmp")
	if err != nil {
		return nil, err
	}
	return &dirPending{f: f, final: final, temp: path.Join(path.Dir(name), filepath.Base(f.Name()))}, nil
}

func (d dirStore) Check(_ context.Context, name string) error {
	name, err := CleanName(name)
	if err != nil {
		return err
	}
	full := func(p string) string { return filepath.Join(string(d), filepath.FromSlash(p)) }
	return checkPlace(name, func(p string) (bool, bool, error) {
		st, err := os.Stat(full(p))
		if errors.Is(err, fs.ErrNotExist) {
			return false, false, nil
		}
		if err != nil {
			return false, false, err
		}
		return true, st.IsDir(), nil
	}, full)
}

func (d dirStore) RemoveTemp(_ context.Context, temp string) error {
	if err := checkTemp(temp); err != nil {
		return err
	}
	return os.Remove(filepath.Join(string(d), filepath.FromSlash(temp)))
}

type dirPending struct {
	f     *os.File
	final string
	temp  string
}

func (p *dirPending) Temp() string { return p.temp }

func (p *dirPending) Write(b []byte) (int, error) { return p.f.Write(b) }

func (p *dirPending) Commit(context.Context) (string, error) {
	if err := p.f.Chmod(0o644); err != nil {
		p.Abort()
		return "", err
	}
	if err := p.f.Sync(); err != nil {
		p.Abort()
		return "", err
	}
	if err := p.f.Close(); err != nil {
		os.Remove(p.f.Name())
		return "", err
	}
	if err := os.Rename(p.f.Name(), p.final); err != nil {
		os.Remove(p.f.Name())
		return "", err
	}
	if d, err := os.Open(filepath.Dir(p.final)); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return p.final, nil
}

func (p *dirPending) Abort() {
	p.f.Close()
	os.Remove(p.f.Name())
}

// ParioStore keeps outputs in a directory of a pario file store.
func ParioStore(c *client.Client, dir string) Store { return &parioStore{c: c, dir: dir} }

type parioStore struct {
	c   *client.Client
	dir string
}

func (s *parioStore) String() string { return "pario:" + s.dir }

func (s *parioStore) Begin(ctx context.Context, name string) (Pending, error) {
	name, err := CleanName(name)
	if err != nil {
		return nil, err
	}
	final := path.Join(s.dir, name)
	if err := s.c.MkdirAll(ctx, path.Dir(final), 0o755); err != nil {
		return nil, fmt.Errorf("pario mkdir %s: %w", path.Dir(final), err)
	}
	tmp := path.Join(path.Dir(final), ".medic-"+path.Base(final)+"."+tmpSuffix()+".tmp")
	f, err := s.c.Create(ctx, tmp, client.CreateOptions{Mode: client.DefaultFileMode, Exclusive: true})
	if err != nil {
		return nil, fmt.Errorf("pario create %s: %w", tmp, err)
	}
	return &parioPending{s: s, f: f, tmp: tmp, final: final, ctx: ctx}, nil
}

func (s *parioStore) Check(ctx context.Context, name string) error {
	name, err := CleanName(name)
	if err != nil {
		return err
	}
	return checkPlace(name, func(p string) (bool, bool, error) {
		a, err := s.c.Lookup(ctx, path.Join(s.dir, p))
		if errors.Is(err, fs.ErrNotExist) {
			return false, false, nil
		}
		if err != nil {
			return false, false, err
		}
		return true, a.IsDir(), nil
	}, func(p string) string { return "pario:" + path.Join(s.dir, p) })
}

func (s *parioStore) RemoveTemp(ctx context.Context, temp string) error {
	if err := checkTemp(temp); err != nil {
		return err
	}
	return s.c.Remove(ctx, path.Join(s.dir, temp))
}

type parioPending struct {
	s          *parioStore
	f          *client.File
	tmp, final string
	off        int64
	ctx        context.Context
}

func (p *parioPending) Write(b []byte) (int, error) {
	n, err := p.f.WriteAtContext(p.ctx, b, p.off)
	p.off += int64(n)
	return n, err
}

func (p *parioPending) Commit(ctx context.Context) (string, error) {
	if err := p.f.SyncContext(ctx); err != nil {
		p.Abort()
		return "", err
	}
	if err := p.s.c.Rename(ctx, p.tmp, p.final); err != nil {
		p.Abort()
		return "", fmt.Errorf("pario rename %s: %w", p.final, err)
	}
	return "pario:" + p.final, nil
}

func (p *parioPending) Temp() string {
	return strings.TrimPrefix(p.tmp, strings.TrimSuffix(p.s.dir, "/")+"/")
}

func (p *parioPending) Abort() {
	_ = p.s.c.Remove(context.Background(), p.tmp)
}

package data

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"
)

// identityName is the file, in the data directory, that records the name
// of the I/O server whose datafiles it holds.
const identityName = "SERVER"

// ErrWrongServer is returned (wrapped) by Open of a data directory that
// belongs to another I/O server of the cluster.
var ErrWrongServer = errors.New("data directory of another I/O server")

// checkIdentity records name as the directory's server the first time a
// named server opens it, and refuses another name after that. Every I/O
// server of a cluster holds datafiles under the same IDs (a file's ID on
// each server it is striped over), so data1's directory served as data0
// would answer reads of every file's first strips with its second ones',
// and take writes into them, with nothing to notice it: the incarnation
// is the cluster's, the same on every server.
func (s *Store) checkIdentity(name string) error {
	if name == "" {
		return nil
	}
	s.name = name
	if strings.ContainsAny(name, "\n\x00") || len(name) > 255 {
		return fmt.Errorf("I/O server name %q: not a name", name)
	}
	f, err := s.root.OpenFile(identityName, os.O_RDONLY, 0)
	if err == nil {
		var b [512]byte
		n, rerr := f.ReadAt(b[:], 0)
		f.Close()
		if rerr != nil && !errors.Is(rerr, io.EOF) {
			return fmt.Errorf("%s: %w", identityName, rerr)
		}
		if got := strings.TrimSuffix(string(b[:n]), "\n"); got != name {
			return fmt.Errorf("%w: %s says it holds the datafiles of I/O server %q, not of %q (start each server on its own --dir; if the cluster file renamed the server, write its new name into %s)",
				ErrWrongServer, identityName, got, name, identityName)
		}
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: %w", identityName, err)
	}
	// Written whole under a temporary name and renamed, so a crash leaves
	// no record or the whole one.
	tmp := identityName + ".tmp"
	w, err := s.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("%s: %w", identityName, err)
	}
	_, err = w.WriteAt([]byte(name+"\n"), 0)
	if err == nil {
		err = w.Sync()
	}
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = s.root.Rename(tmp, identityName)
	}
	if err == nil {
		err = syncDir(s.root)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", identityName, err)
	}
	return nil
}

// nameError is a claim by a metadata server that knows this server under
// another name: errno ENXIO, matching ErrWrongServer.
type nameError string

func (e nameError) Error() string   { return string(e) }
func (e nameError) Unwrap() []error { return []error{ErrWrongServer, syscall.ENXIO} }

// CheckName refuses a claim for the server named name (the metadata
// server's cluster file's name for the address it dialled) when this
// server runs under another name: the cluster file's names and addresses
// disagree with the servers', and the metadata server would take this
// server's datafiles for those of the server it means. An empty name (a
// caller that does not know it), or a store opened without one, is not
// checked.
func (s *Store) CheckName(name string) error {
	if name == "" || s.name == "" || name == s.name {
		return nil
	}
	return nameError(fmt.Sprintf("this address serves I/O server %q (data directory %s), not %q: the cluster file's names and addresses disagree with the servers'", s.name, s.dir, name))
}

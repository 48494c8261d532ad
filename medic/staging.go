package medic

import (
	"bufio"
	"crypto/sha256"
	"encoding"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/pario/pario/units"
)

// staged is a container being received into the staging directory:
// ID.part holds its bytes, and ID.sum the SHA-256 state of the bytes as
// they arrived over the network, up to an offset, saved whenever the
// receiver acknowledges. So at the end the receiver can tell where a
// container that does not match its transfer id went wrong: if what
// arrived over the network does not match, it changed in transit; if
// that matches but the staged file does not, it changed in staging.
type staged struct {
	part, sum string
	f         *os.File
	w         *bufio.Writer
	h         hash.Hash // of the bytes received, [0, off)
	off       int64
	// fromDisk: the first bytes were hashed from the part file, for want
	// of a saved state (a part from an older receiver), so where they went
	// wrong cannot be told.
	fromDisk bool
}

// openStaged opens (or creates) the staging files of transfer idh of size
// bytes and returns it positioned where the transfer resumes: at the
// saved state's offset (bytes past it were never acknowledged and are
// cut off), or without one at the end of the part.
func openStaged(dir, idh string, size int64) (*staged, error) {
	s := &staged{part: filepath.Join(dir, idh+".part"), sum: filepath.Join(dir, idh+".sum"), h: sha256.New()}
	f, err := os.OpenFile(s.part, os.O_RDWR|os.O_CREATE, 0o600)
	if errors.Is(err, fs.ErrNotExist) {
		// The receiver made the staging area when it started; removed
		// since (with --dir, say), it is made again, or every transfer
		// would fail until a restart.
		if err = os.MkdirAll(dir, 0o700); err == nil {
			f, err = os.OpenFile(s.part, os.O_RDWR|os.O_CREATE, 0o600)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("staging area %s: %w", dir, err)
	}
	s.f = f
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	n := st.Size()
	if off, ok := s.loadSum(); ok && off <= n && off <= size {
		n = off
	} else {
		s.h.Reset()
		if n > size {
			n = 0
		}
		if _, err := io.Copy(s.h, io.NewSectionReader(f, 0, n)); err != nil {
			f.Close()
			return nil, fmt.Errorf("staged part %s: %w", s.part, err)
		}
		s.fromDisk = n > 0
	}
	if err := f.Truncate(n); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.Seek(n, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	s.off, s.w = n, bufio.NewWriterSize(f, 1<<20)
	return s, nil
}

// loadSum restores the saved hash state and returns its offset.
func (s *staged) loadSum() (int64, bool) {
	b, err := os.ReadFile(s.sum)
	if err != nil || len(b) < 8 {
		return 0, false
	}
	off := int64(binary.LittleEndian.Uint64(b))
	if off < 0 || s.h.(encoding.BinaryUnmarshaler).UnmarshalBinary(b[8:]) != nil {
		return 0, false
	}
	return off, true
}

// write stages bytes that arrived over the network.
func (s *staged) write(p []byte) error {
	if _, err := s.w.Write(p); err != nil {
		return fmt.Errorf("staging %s: %w", s.part, err)
	}
	s.h.Write(p)
	s.off += int64(len(p))
	return nil
}

// checkpoint writes the staged bytes out and saves the hash state: a
// later transfer resumes from here.
func (s *staged) checkpoint() error {
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("staging %s: %w", s.part, err)
	}
	state, err := s.h.(encoding.BinaryMarshaler).MarshalBinary()
	if err != nil {
		return err
	}
	return os.WriteFile(s.sum, append(binary.LittleEndian.AppendUint64(nil, uint64(s.off)), state...), 0o600)
}

// received is the SHA-256 of the bytes received (all of them once the
// whole container arrived).
func (s *staged) received() []byte { return s.h.Sum(nil) }

func (s *staged) close() { s.f.Close() }

// diskFull reports whether err is a full disk or quota: what a staging
// area that cannot take more bytes answers.
func diskFull(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// roomFor says whether the file system of dir has need bytes free for an
// unprivileged writer (with a margin for the checkpoints' files), or why
// not; a file system that cannot tell is taken to have room. Transfers
// under way may still take the room (the check reserves nothing): the
// writes' ENOSPC then answers, as before.
func roomFor(dir string, need int64) error {
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err != nil || fs.Bsize <= 0 {
		return nil
	}
	free := int64(fs.Bavail) * int64(fs.Bsize)
	const margin = 64 << 10
	if need+margin <= free {
		return nil
	}
	return fmt.Errorf("staging area %s is full (%w): %s free, this container needs %s more; free space there and send again",
		dir, syscall.ENOSPC, units.FormatBytes(free), units.FormatBytes(need))
}

// errnoOf is the system's error inside err (no space left on device,
// say), or err itself: for a message that names the file once.
func errnoOf(err error) error {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno
	}
	return err
}

// remove drops the staged container.
func (s *staged) remove() {
	s.f.Close()
	os.Remove(s.part)
	os.Remove(s.sum)
}

// expireStaged removes the staged parts (ID.part and ID.sum) that no
// transfer has touched for StagingTTL and that no connection is
// receiving now, logging each.
func (s *Server) expireStaged() {
	es, err := os.ReadDir(s.cfg.StagingDir)
	if err != nil {
		s.cfg.Logger.Warn("medic: cannot look for expired staged parts", "dir", s.cfg.StagingDir, "err", err)
		return
	}
	seen := map[string]bool{}
	for _, e := range es {
		idh, ok := strings.CutSuffix(e.Name(), ".part")
		if !ok {
			idh, ok = strings.CutSuffix(e.Name(), ".sum") // one whose part is gone
		}
		if !ok || e.IsDir() || seen[idh] {
			continue
		}
		seen[idh] = true
		part := filepath.Join(s.cfg.StagingDir, idh+".part")
		sum := filepath.Join(s.cfg.StagingDir, idh+".sum")
		// Under the lock a transfer takes before it opens its part, so
		// that one resumed and cut since the look above is not taken
		// for untouched.
		s.mu.Lock()
		newest := time.Time{}
		for _, p := range []string{part, sum} {
			if fi, err := os.Stat(p); err == nil && fi.ModTime().After(newest) {
				newest = fi.ModTime()
			}
		}
		if s.active[idh] || time.Since(newest) < s.cfg.StagingTTL {
			s.mu.Unlock()
			continue
		}
		var errs []error
		for _, p := range []string{part, sum} {
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
		s.mu.Unlock()
		if err := errors.Join(errs...); err != nil {
			s.cfg.Logger.Warn("medic: cannot remove an expired staged part", "path", part, "err", err)
			continue
		}
		s.cfg.Logger.Info("medic: removed a staged part no send resumed", "path", part, "untouched_since", newest.Format(time.RFC3339))
	}
}

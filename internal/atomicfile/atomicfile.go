// Package atomicfile writes a file that appears under its name only once
// it is complete: it is written under a temporary name beside the final
// one and renamed into place by Commit; Abort, a failure or a crash leaves
// the name as it was. A full disk or an interrupt so never leaves a
// truncated report or output under the name its reader looks for, and an
// older complete file under that name stays whole until the new one is.
package atomicfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// File is a file being written for its final name.
type File struct {
	*os.File
	final string
	// direct: the final name exists and is not a regular file (a FIFO,
	// /dev/stdout), which is written as it is and cannot be renamed over.
	direct bool
}

// Create makes the temporary file for path, beside it, with the mode
// os.Create gives (0666 less the umask).
func Create(path string) (*File, error) {
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o666)
		if err != nil {
			return nil, err
		}
		return &File{File: f, final: path, direct: true}, nil
	}
	for range 10 {
		var suffix [6]byte
		_, _ = rand.Read(suffix[:])
		tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+"."+hex.EncodeToString(suffix[:])+".tmp")
		f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, renamed(err, path)
		}
		return &File{File: f, final: path}, nil
	}
	return nil, &fs.PathError{Op: "create", Path: path, Err: fs.ErrExist}
}

// Final is the name the file is written for.
func (f *File) Final() string { return f.final }

// Write names the final file, not the temporary one, in errors.
func (f *File) Write(b []byte) (int, error) {
	n, err := f.File.Write(b)
	return n, renamed(err, f.final)
}

// Commit closes the file (if its writer has not) and renames it into
// place; if either fails, the temporary file is removed and the final
// name is left as it was.
func (f *File) Commit() error {
	err := f.Close()
	if errors.Is(err, os.ErrClosed) {
		err = nil
	}
	if f.direct {
		return err
	}
	if err == nil {
		if err = os.Rename(f.Name(), f.final); err == nil {
			return nil
		}
	}
	os.Remove(f.Name())
	return renamed(err, f.final)
}

// Abort closes and removes the temporary file.
func (f *File) Abort() {
	f.Close()
	if !f.direct {
		os.Remove(f.Name())
	}
}

// renamed puts the final name in err's path, so that an error says which
// file the user asked for failed.
func renamed(err error, path string) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		pe.Path = path
	}
	return err
}

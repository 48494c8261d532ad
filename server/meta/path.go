package meta

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"
)

// Limits on paths, as on Linux.
const (
	MaxNameLen = 255  // bytes in one path component
	MaxPathLen = 4096 // bytes in a whole path
)

// splitPath validates an absolute slash path and returns its components;
// "/" gives none. Repeated and trailing slashes are skipped (what a
// trailing one asks for is checked by txn.trailingSlash). The error wraps
// ENAMETOOLONG for a path or component over the limits (as POSIX names it)
// and EINVAL for anything else, and says what is wrong; the caller adds the
// operation and path.
func splitPath(p string) ([]string, error) {
	switch {
	case p == "":
		return nil, fmt.Errorf("empty path: %w", syscall.EINVAL)
	case p[0] != '/':
		return nil, fmt.Errorf("path is not absolute: %w", syscall.EINVAL)
	case len(p) > MaxPathLen:
		return nil, fmt.Errorf("path longer than %d bytes: %w", MaxPathLen, syscall.ENAMETOOLONG)
	case strings.IndexByte(p, 0) >= 0:
		return nil, fmt.Errorf("path contains a NUL byte: %w", syscall.EINVAL)
	}
	var comps []string
	for c := range strings.SplitSeq(p, "/") {
		switch {
		case c == "":
			continue
		case c == "." || c == "..":
			return nil, fmt.Errorf("path has a %q component: %w", c, syscall.EINVAL)
		case len(c) > MaxNameLen:
			return nil, fmt.Errorf("path component longer than %d bytes: %w", MaxNameLen, syscall.ENAMETOOLONG)
		}
		comps = append(comps, c)
	}
	return comps, nil
}

// wrapErr turns an internal error into the *fs.PathError every public method
// returns. Errors that already are *fs.PathError pass through.
func wrapErr(op, path string, err error) error {
	if err == nil {
		return nil
	}
	if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
		return err
	}
	return &fs.PathError{Op: op, Path: path, Err: err}
}

// Package filekind names the type of a file in the words an error
// message needs ("is a named pipe, not a regular file"), so that every
// command that wants a regular file says what it got the same way.
package filekind

import "io/fs"

// Of names m's file type with its article: "a regular file", "a
// directory", "a symbolic link", "a named pipe", "a socket", "a character
// device", "a block device", or "a special file".
func Of(m fs.FileMode) string {
	switch t := m.Type(); {
	case t == 0:
		return "a regular file"
	case t&fs.ModeDir != 0:
		return "a directory"
	case t&fs.ModeSymlink != 0:
		return "a symbolic link"
	case t&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case t&fs.ModeSocket != 0:
		return "a socket"
	case t&fs.ModeCharDevice != 0:
		return "a character device"
	case t&fs.ModeDevice != 0:
		return "a block device"
	}
	return "a special file"
}

package filekind

import (
	"io/fs"
	"testing"
)

func TestOf(t *testing.T) {
	for m, want := range map[fs.FileMode]string{
		0o644:                             "a regular file",
		fs.ModeDir | 0o755:                "a directory",
		fs.ModeSymlink | 0o777:            "a symbolic link",
		fs.ModeNamedPipe:                  "a named pipe",
		fs.ModeSocket:                     "a socket",
		fs.ModeDevice | fs.ModeCharDevice: "a character device",
		fs.ModeDevice:                     "a block device",
		fs.ModeIrregular:                  "a special file",
	} {
		if got := Of(m); got != want {
			t.Errorf("Of(%v) = %q, want %q", m, got, want)
		}
	}
}

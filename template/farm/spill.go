package farm

import (
	"bytes"
	"fmt"
	"io"
	"os"
)

// spillAt is how much of one run's output a LOG keeps in memory; the rest
// goes to a scratch file.
const spillAt = 1 << 20

// spill holds one run's output for a LOG until it is appended whole: in
// memory while it is small (log lines, the usual case), in a scratch file
// once it passes spillAt, so that a command printing gigabytes does not
// need them in memory.
type spill struct {
	mem  bytes.Buffer
	file *os.File
	n    int64
}

func (s *spill) Write(p []byte) (int, error) {
	if s.file == nil && s.mem.Len()+len(p) <= spillAt {
		s.n += int64(len(p))
		return s.mem.Write(p)
	}
	if s.file == nil {
		f, err := os.CreateTemp("", "pario-log-*")
		if err != nil {
			return 0, fmt.Errorf("farm: scratch file for a run's output: %w", err)
		}
		s.file = f
		if _, err := f.Write(s.mem.Bytes()); err != nil {
			return 0, fmt.Errorf("farm: scratch file %s: %w", f.Name(), err)
		}
		s.mem = bytes.Buffer{}
	}
	n, err := s.file.Write(p)
	s.n += int64(n)
	if err != nil {
		err = fmt.Errorf("farm: scratch file %s: %w", s.file.Name(), err)
	}
	return n, err
}

// source is what was written, to read from offset 0, and its size.
func (s *spill) source() (io.ReaderAt, int64) {
	if s.file != nil {
		return s.file, s.n
	}
	return bytes.NewReader(s.mem.Bytes()), s.n
}

// Close removes the scratch file, if there is one.
func (s *spill) Close() {
	if s.file != nil {
		s.file.Close()
		os.Remove(s.file.Name())
	}
}

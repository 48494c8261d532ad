package bench

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// reportFile is a report written by rank 0 (-O summaryFile, the per-rank
// CSVs): into a temporary file beside its name, renamed into place when
// the run succeeds and removed when it fails or is interrupted, so that a
// full disk or a Ctrl-C never leaves a truncated report under the name
// asked for. A name that exists and is not a regular file (/dev/stdout,
// a FIFO) is written directly.
type reportFile struct {
	*os.File
	final string // "" when written directly
}

func createReportFile(path string) (*reportFile, error) {
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o666)
		if err != nil {
			return nil, err
		}
		return &reportFile{File: f}, nil
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			pe.Path = path
		}
		return nil, err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	return &reportFile{File: f, final: path}, nil
}

// finish closes the file and, when keep, moves it into place; otherwise
// (or when that fails) it removes the temporary file.
func (r *reportFile) finish(keep bool) error {
	err := r.Close()
	if r.final == "" {
		return err
	}
	if keep && err == nil {
		if err = os.Rename(r.Name(), r.final); err == nil {
			return nil
		}
	}
	os.Remove(r.Name())
	if !keep {
		return nil
	}
	return err
}

// Write names the report, not its temporary file, in errors.
func (r *reportFile) Write(b []byte) (int, error) {
	n, err := r.File.Write(b)
	var pe *fs.PathError
	if err != nil && r.final != "" && errors.As(err, &pe) {
		pe.Path = r.final
	}
	return n, err
}

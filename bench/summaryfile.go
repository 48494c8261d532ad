package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// Reading the JSON summary (-O summaryFormat=JSON) back, beside the
// jsonReporter that writes it (output.go): `pario bench sweep` and `pario
// tune calibrate` run `pario bench` in another process and read its
// summary file, and the calibration also reads IOR's, which has the same
// keys. Only the fields readers use are here; pointers mark those whose
// absence a reader must tell from zero.

// SummaryFile is a JSON summary as read back.
type SummaryFile struct {
	// Tests is nil when the document has no "tests" key: not a summary.
	Tests   *[]SummaryTest `json:"tests"`
	Summary []SummaryOp    `json:"summary"`
}

// SummaryTest is one entry of "tests": the run's parameters and one
// result per phase and repetition.
type SummaryTest struct {
	Parameters struct {
		TransferSize int64 `json:"transferSize"`
		BlockSize    int64 `json:"blockSize"`
		SegmentCount int64 `json:"segmentCount"`
	} `json:"Parameters"`
	Options struct {
		Tasks int `json:"tasks"`
		// Backend is what the back end describes of itself (pario:
		// "layout", "I/O servers").
		Backend map[string]string `json:"backend"`
	} `json:"Options"`
	Results []SummaryResult `json:"Results"`
}

// SummaryResult is one phase of one repetition.
type SummaryResult struct {
	Access    string   `json:"access"` // "write", "read", "remove"
	BwMiB     *float64 `json:"bwMiB"`
	XferKiB   *float64 `json:"xferKiB"`
	TotalTime *float64 `json:"totalTime"`
	AggBytes  int64    `json:"aggBytes"`
}

// SummaryOp is one line of "summary": an operation over the repetitions.
type SummaryOp struct {
	Operation string  `json:"operation"`
	BwMeanMIB float64 `json:"bwMeanMIB"`
	BwStdMIB  float64 `json:"bwStdMIB"`
}

// ParseSummary decodes a JSON summary. Its errors are encoding/json's
// (a *json.SyntaxError or *json.UnmarshalTypeError, wrapped), so a caller
// can say where the document is wrong.
func ParseSummary(b []byte) (*SummaryFile, error) {
	var f SummaryFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("bench: JSON summary: %w", err)
	}
	return &f, nil
}

// ReadSummary reads and decodes the JSON summary at path.
func ReadSummary(path string) (*SummaryFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f, err := ParseSummary(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// Bandwidth returns the mean and standard deviation (MiB/s) of the
// summary's operation op ("write", "read"); ok is false when the run did
// not measure it.
func (f *SummaryFile) Bandwidth(op string) (mean, sd float64, ok bool) {
	for _, s := range f.Summary {
		if s.Operation == op {
			return s.BwMeanMIB, s.BwStdMIB, true
		}
	}
	return 0, 0, false
}

// SummaryArgs are the `pario bench` arguments that write the JSON summary
// to path.
func SummaryArgs(path string) []string {
	return []string{"-O", "summaryFormat=JSON", "-O", "summaryFile=" + path}
}

// ExecError is a `pario bench` process that failed.
type ExecError struct {
	Err error // from exec: the exit status, say
	// Last is the last line it printed: where pario puts the reason.
	Last string
}

func (e *ExecError) Error() string { return fmt.Sprintf("%v: %s", e.Err, e.Last) }

func (e *ExecError) Unwrap() error { return e.Err }

// Exec runs exe with args (a pario binary: [global flags] bench ...) and
// returns what it printed, stdout and stderr together. A failed run is an
// *ExecError, or ctx's error when ctx ended it.
func Exec(ctx context.Context, exe string, args []string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, exe, args...)
	// Once ctx has killed it, do not wait for children (a run's rank
	// processes) that still hold its output open.
	cmd.WaitDelay = time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err == nil {
		return out.Bytes(), nil
	}
	if ctx.Err() != nil {
		return out.Bytes(), ctx.Err()
	}
	msg := strings.TrimSpace(out.String())
	if j := strings.LastIndex(msg, "\n"); j >= 0 {
		msg = msg[j+1:]
	}
	return out.Bytes(), &ExecError{Err: err, Last: msg}
}

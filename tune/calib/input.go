package calib

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"

	"github.com/pario/pario/bench"
	"github.com/pario/pario/dist"
	"github.com/pario/pario/units"
)

// Layout supplies what a results file may not say: the strip size and the
// number of targets of the measured file. Zero fields are unknown.
type Layout struct {
	Strip   int64
	Targets int
}

// Where ReadFile finds a point's layout, first match wins:
//
//  1. pario bench JSON: Options.backend.layout ("strip_size=...",
//     "num_datafiles=...") and Options.backend["I/O servers"]; a layout
//     without strip_size has dist.DefaultStripSize.
//  2. the file's name: "strip<SIZE>" or "strip-<SIZE>" / "strip_<SIZE>" /
//     "strip=<SIZE>" (also "stripe"), and "servers<N>", "osts<N>",
//     "ost<N>", "count<N>" alike; e.g. ior-strip1m-ost1.json.
//  3. the defaults passed in (the command's --strip-size, --targets).
//
// The number of targets defaults to 1 (one target, as the paper's
// calibration); the strip size has no default.
var (
	stripRE   = regexp.MustCompile(`(?i)(?:^|[^a-z])stripe?(?:[-_=]|-size[-_=]?|_size[-_=]?)?(\d+[kmgKMG]?)(?:[^a-z0-9]|$)`)
	targetsRE = regexp.MustCompile(`(?i)(?:^|[^a-z])(?:servers|osts?|count)[-_=]?(\d+)(?:[^a-z0-9]|$)`)
)

// InputError is a results file that cannot be used; it names the file and,
// where known, the line or field.
type InputError struct {
	File  string
	Where string // "line 3", "tests[0].Results[1].totalTime", ...
	Err   error
}

func (e *InputError) Error() string {
	if e.Where != "" {
		return fmt.Sprintf("calibrate: %s: %s: %v", e.File, e.Where, e.Err)
	}
	return fmt.Sprintf("calibrate: %s: %v", e.File, e.Err)
}

func (e *InputError) Unwrap() error { return e.Err }

// ReadFile reads measured points from an IOR or pario bench JSON result
// (-O summaryFormat=JSON) or from a CSV file with the header
// strip,transfer,servers,size,seconds (one repetition a line; sizes in
// bytes or with k, m, g suffixes). Only write results are used.
func ReadFile(path string, def Layout) ([]Point, error) {
	// O_NONBLOCK: a FIFO nobody writes reads as empty instead of hanging
	// in open (a pipe with a writer still waits for its data).
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, &InputError{File: path, Err: err}
	}
	b, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		return nil, &InputError{File: path, Err: err}
	}
	return Parse(path, b, def)
}

// Parse reads measured points from the contents b of the results file at
// path, as ReadFile does; path names the file in errors and may carry the
// layout in its name.
func Parse(path string, b []byte, def Layout) ([]Point, error) {
	trimmed := bytes.TrimSpace(b)
	if len(trimmed) == 0 {
		return nil, &InputError{File: path, Err: errors.New("empty file")}
	}
	if trimmed[0] == '{' {
		return parseJSON(path, b, def)
	}
	return parseCSV(path, b)
}

func parseJSON(path string, b []byte, def Layout) ([]Point, error) {
	doc, err := bench.ParseSummary(b)
	if err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line := 1 + bytes.Count(b[:min(int(se.Offset), len(b))], []byte("\n"))
			return nil, &InputError{File: path, Where: fmt.Sprintf("line %d", line), Err: fmt.Errorf("not valid JSON: %v", se)}
		}
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, &InputError{File: path, Where: te.Field, Err: fmt.Errorf("want a %s, got a JSON %s", te.Type, te.Value)}
		}
		return nil, &InputError{File: path, Err: errors.Unwrap(err)}
	}
	if doc.Tests == nil {
		return nil, &InputError{File: path, Where: "tests", Err: errors.New("missing: not an IOR or pario bench JSON result (-O summaryFormat=JSON)")}
	}
	name := filepath.Base(path)
	var out []Point
	for ti, t := range *doc.Tests {
		where := fmt.Sprintf("tests[%d]", ti)
		lay := def
		fromName := layoutFromName(name)
		if fromName.Strip > 0 {
			lay.Strip = fromName.Strip
		}
		if fromName.Targets > 0 {
			lay.Targets = fromName.Targets
		}
		if be := t.Options.Backend; be != nil {
			if s, ok := be["I/O servers"]; ok {
				if n, err := strconv.Atoi(strings.TrimSpace(s)); err == nil && n > 0 {
					lay.Targets = n
				}
			}
			if l, ok := be["layout"]; ok {
				s, n, err := parseLayout(l)
				if err != nil {
					return nil, &InputError{File: path, Where: where + ".Options.backend.layout", Err: err}
				}
				if s > 0 {
					lay.Strip = s
				}
				if n > 0 && (lay.Targets == 0 || n < lay.Targets) {
					lay.Targets = n
				}
			}
		}
		if lay.Strip <= 0 {
			return nil, &InputError{File: path, Where: where, Err: errors.New("no strip size: not in the results (an IOR file) nor in the file name (e.g. ior-strip1m.json); give --strip-size")}
		}
		if lay.Targets <= 0 {
			lay.Targets = 1
		}
		pt := Point{Strip: lay.Strip, Targets: lay.Targets, Transfer: t.Parameters.TransferSize, Source: path}
		for ri, r := range t.Results {
			if !strings.EqualFold(r.Access, "write") {
				continue
			}
			rw := fmt.Sprintf("%s.Results[%d]", where, ri)
			if r.TotalTime == nil {
				return nil, &InputError{File: path, Where: rw + ".totalTime", Err: errors.New("missing")}
			}
			if !(*r.TotalTime > 0) {
				return nil, &InputError{File: path, Where: rw + ".totalTime", Err: fmt.Errorf("%v is not a positive time", *r.TotalTime)}
			}
			size := r.AggBytes
			// Products in floating point: a product past int64 (a
			// corrupt or hostile file) is an error naming its factors,
			// not a wrapped negative that reads as "missing".
			if size <= 0 && r.BwMiB != nil {
				f := math.Round(*r.BwMiB * MiB * *r.TotalTime)
				if f >= math.MaxInt64 {
					return nil, &InputError{File: path, Where: rw, Err: fmt.Errorf("bwMiB %g x totalTime %g is %.3g bytes, more than a file holds", *r.BwMiB, *r.TotalTime, f)}
				}
				size = int64(f)
			}
			if size <= 0 {
				p := t.Parameters
				f := float64(p.BlockSize) * float64(max(p.SegmentCount, 1)) * float64(max(t.Options.Tasks, 1))
				if f >= math.MaxInt64 {
					return nil, &InputError{File: path, Where: where + ".Parameters", Err: fmt.Errorf("blockSize %d x segmentCount %d x tasks %d is %.3g bytes, more than a file holds", p.BlockSize, p.SegmentCount, t.Options.Tasks, f)}
				}
				size = int64(f)
			}
			if size <= 0 {
				return nil, &InputError{File: path, Where: rw, Err: errors.New("no file size: neither aggBytes, bwMiB nor Parameters.blockSize")}
			}
			if pt.Transfer <= 0 && r.XferKiB != nil {
				pt.Transfer = int64(math.Round(*r.XferKiB * 1024))
			}
			if pt.Size == 0 {
				pt.Size = size
			}
			pt.Times = append(pt.Times, *r.TotalTime)
		}
		if len(pt.Times) == 0 {
			continue
		}
		if pt.Transfer <= 0 {
			return nil, &InputError{File: path, Where: where + ".Parameters.transferSize", Err: errors.New("missing or not positive")}
		}
		out = append(out, pt)
	}
	if len(out) == 0 {
		return nil, &InputError{File: path, Where: "tests[].Results", Err: errors.New("no write result (run the benchmark with -w)")}
	}
	return out, nil
}

// parseLayout reads strip_size and num_datafiles from a layout string;
// a simple_stripe or twod_stripe layout without strip_size has the default.
func parseLayout(l string) (strip int64, n int, err error) {
	l = strings.TrimSpace(l)
	if l == "" || l == "default" {
		return dist.DefaultStripSize, 0, nil
	}
	name, params, _ := strings.Cut(l, ":")
	for _, kv := range strings.Split(params, ",") {
		k, v, _ := strings.Cut(kv, "=")
		switch strings.TrimSpace(k) {
		case "strip_size":
			s, err := units.ParseSize(strings.TrimSpace(v))
			if err != nil {
				return 0, 0, fmt.Errorf("strip_size: %w", err)
			}
			strip = s
		case "num_datafiles":
			c, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || c <= 0 {
				return 0, 0, fmt.Errorf("num_datafiles %q is not a positive count", v)
			}
			n = c
		}
	}
	if strip == 0 {
		switch name {
		case "simple_stripe", "twod_stripe":
			strip = dist.DefaultStripSize
		default:
			return 0, 0, fmt.Errorf("layout %q has no strip size the calibration understands (want simple_stripe)", l)
		}
	}
	return strip, n, nil
}

func layoutFromName(name string) Layout {
	var l Layout
	if m := stripRE.FindStringSubmatch(name); m != nil {
		if s, err := units.ParseSize(m[1]); err == nil {
			l.Strip = s
		}
	}
	if m := targetsRE.FindStringSubmatch(name); m != nil {
		l.Targets, _ = strconv.Atoi(m[1])
	}
	return l
}

// CSVHeader is the header of a CSV results file.
var CSVHeader = []string{"strip", "transfer", "servers", "size", "seconds"}

func parseCSV(path string, b []byte) ([]Point, error) {
	r := csv.NewReader(bytes.NewReader(b))
	r.TrimLeadingSpace = true
	r.Comment = '#'
	head, err := r.Read()
	if err != nil {
		return nil, &InputError{File: path, Where: "line 1", Err: fmt.Errorf("not a JSON result nor a CSV file: %v", err)}
	}
	for i := range head {
		head[i] = strings.ToLower(strings.TrimSpace(head[i]))
	}
	if strings.Join(head, ",") != strings.Join(CSVHeader, ",") {
		return nil, &InputError{File: path, Where: "line 1", Err: fmt.Errorf("not a JSON result (IOR or pario bench -O summaryFormat=JSON) nor a CSV file with the header %s", strings.Join(CSVHeader, ","))}
	}
	var pts []Point
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			// FieldPos panics after an error: the line is the error's.
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return nil, &InputError{File: path, Where: fmt.Sprintf("line %d", pe.Line), Err: pe.Err}
			}
			return nil, &InputError{File: path, Err: err}
		}
		line, _ := r.FieldPos(0)
		where := fmt.Sprintf("line %d", line)
		var pt Point
		pt.Source = path
		for i, dst := range []*int64{&pt.Strip, &pt.Transfer, nil, &pt.Size} {
			if dst == nil {
				continue
			}
			v, err := units.ParseSize(strings.TrimSpace(rec[i]))
			if err != nil {
				return nil, &InputError{File: path, Where: where + ", " + CSVHeader[i], Err: err}
			}
			*dst = v
		}
		n, err := strconv.Atoi(strings.TrimSpace(rec[2]))
		if err != nil || n < 1 {
			return nil, &InputError{File: path, Where: where + ", servers", Err: fmt.Errorf("%q is not a positive count", rec[2])}
		}
		pt.Targets = n
		s, err := strconv.ParseFloat(strings.TrimSpace(rec[4]), 64)
		if err != nil || !(s > 0) || math.IsInf(s, 0) {
			return nil, &InputError{File: path, Where: where + ", seconds", Err: fmt.Errorf("%q is not a positive time", rec[4])}
		}
		pt.Times = []float64{s}
		pts = append(pts, pt)
	}
	if len(pts) == 0 {
		return nil, &InputError{File: path, Err: errors.New("no data line after the header")}
	}
	return pts, nil
}

package estimate

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// A Block is one piece of I/O of a job: when it arrived at the file system
// and how long the system took to serve it, both in seconds.
type Block struct {
	Job     string
	Arrival float64 // seconds: since the Unix epoch for timestamps, else as given
	Service float64
}

// A Skip is a line of a log that was read but not used, and why.
type Skip struct {
	Line   int
	Reason string
}

// A Log is what a reader took from one log.
type Log struct {
	Format  string // "csv" or "sacct"
	Blocks  []Block
	Skipped []Skip
}

// Format names.
const (
	FormatCSV   = "csv"
	FormatSacct = "sacct"
)

// CheckFormat checks a format name Read takes: csv, sacct, auto or "".
func CheckFormat(format string) error {
	switch format {
	case FormatCSV, FormatSacct, "", "auto":
		return nil
	}
	return fmt.Errorf("format %q: want csv, sacct or auto", format)
}

// Read reads a log in format, or, for format "" or "auto", in the format
// its first line announces: sacct's header is separated by '|'.
func Read(r io.Reader, format string) (Log, error) {
	if err := CheckFormat(format); err != nil {
		return Log{}, err
	}
	switch format {
	case FormatCSV:
		return ReadCSV(r)
	case FormatSacct:
		return ReadSacct(r)
	}
	br := bufio.NewReader(r)
	first, err := firstLine(br)
	if err != nil {
		return Log{}, err
	}
	if strings.Contains(first, "|") {
		return ReadSacct(br)
	}
	return ReadCSV(br)
}

// firstLine peeks at the first line of the log's first 4 KiB that is not
// blank or a comment ("" if there is none: the reader then decides).
func firstLine(br *bufio.Reader) (string, error) {
	b, err := br.Peek(4096)
	if len(b) == 0 {
		if errors.Is(err, io.EOF) {
			return "", errors.New("the log is empty")
		}
		return "", err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "#") {
			return t, nil
		}
	}
	return "", nil
}

// The CSV log: a header naming the columns, then one block a line.
//
//	# comments and blank lines are ignored
//	job,arrival,service
//	A,0,4.2
//	A,1.5,0.8
//
// job names the job the block belongs to; arrival is seconds (a number) or
// a time (RFC 3339, or 2006-01-02T15:04:05 read as UTC); service is the
// block's service time in seconds. Instead of service, a column end (the
// same kinds of value as arrival) gives service = end - arrival. Columns
// may come in any order; other columns are ignored.

// ReadCSV reads the CSV log described above.
func ReadCSV(r io.Reader) (Log, error) {
	cr := csv.NewReader(r)
	cr.Comment = '#'
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	log := Log{Format: FormatCSV}
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return log, errors.New("csv: the log is empty: want a header job,arrival,service")
	}
	if err != nil {
		return log, fmt.Errorf("csv: %w", err)
	}
	col := columns(header)
	job, okJob := col["job"]
	arrival, okArr := col["arrival"]
	service, okSvc := col["service"]
	end, okEnd := col["end"]
	if !okJob || !okArr || (!okSvc && !okEnd) {
		return log, fmt.Errorf("csv: line 1: header %q: want the columns job, arrival and service (or end)", strings.Join(header, ","))
	}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return log, fmt.Errorf("csv: %w", err)
		}
		// After an error FieldPos panics: ask only for a record read.
		line, _ := cr.FieldPos(0)
		field := func(i int, name string) (string, error) {
			if i >= len(rec) {
				return "", fmt.Errorf("csv: line %d: no %s (%d fields)", line, name, len(rec))
			}
			return strings.TrimSpace(rec[i]), nil
		}
		b := Block{}
		if b.Job, err = field(job, "job"); err != nil {
			return log, err
		}
		s, err := field(arrival, "arrival")
		if err != nil {
			return log, err
		}
		if b.Arrival, err = parseTime(s); err != nil {
			return log, fmt.Errorf("csv: line %d, arrival: %w", line, err)
		}
		if okSvc {
			s, err := field(service, "service")
			if err != nil {
				return log, err
			}
			if b.Service, err = parseSeconds(s); err != nil {
				return log, fmt.Errorf("csv: line %d, service: %w", line, err)
			}
		} else {
			s, err := field(end, "end")
			if err != nil {
				return log, err
			}
			e, err := parseTime(s)
			if err != nil {
				return log, fmt.Errorf("csv: line %d, end: %w", line, err)
			}
			if b.Service = e - b.Arrival; b.Service < 0 {
				return log, fmt.Errorf("csv: line %d: end %s is before arrival", line, s)
			}
		}
		log.Blocks = append(log.Blocks, b)
	}
	return log, nil
}

// columns maps lower-cased, trimmed column names to their index.
func columns(header []string) map[string]int {
	m := make(map[string]int, len(header))
	for i, h := range header {
		h = strings.ToLower(strings.TrimSpace(strings.TrimPrefix(h, "\ufeff")))
		if _, dup := m[h]; !dup {
			m[h] = i
		}
	}
	return m
}

// parseSeconds reads a finite, non-negative number of seconds.
func parseSeconds(s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%q is not a number of seconds", s)
	}
	if v < 0 {
		return 0, fmt.Errorf("%q is negative", s)
	}
	return v, nil
}

// timeLayouts are the times parseTime accepts besides plain seconds;
// sacct prints the second, without a zone.
var timeLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05"}

// parseTime reads seconds or a time, as seconds since the Unix epoch.
func parseTime(s string) (float64, error) {
	if v, err := parseSeconds(s); err == nil {
		return v, nil
	}
	for _, l := range timeLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return float64(t.UnixNano()) / 1e9, nil
		}
	}
	return 0, fmt.Errorf("%q is neither seconds nor a time like 2010-06-01T12:00:00", s)
}

// ReadSacct reads the output of sacct -P (or -p) with a header, e.g.
//
//	sacct -P -a -S 2010-06-01 -E 2010-07-01 -o JobID,Start,End
//
// JobID, Start and End must be among the columns; others are ignored.
// Every row is a block of the job named by its JobID up to the first '.'
// (123 for 123.0 and 123.batch; array tasks 123_4 are jobs of their own),
// arriving at Start and served for End - Start. Of a job's rows, its
// numbered steps are its blocks; without any, its batch step; without
// that, the allocation's row. The extern step is never used: like the
// allocation and the batch step it spans the whole job. Rows not yet
// started or ended (Unknown, None, empty) are skipped, and the skip says
// so. sacct prints local times without a zone; they are read as UTC, which
// changes no difference between them except across a daylight saving
// change.
func ReadSacct(r io.Reader) (Log, error) {
	log := Log{Format: FormatSacct}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	line := 0
	var col map[string]int
	type row struct {
		kind  int // 0 numbered step, 1 batch, 2 allocation
		block Block
	}
	rows := map[string][]row{}
	var order []string
	for sc.Scan() {
		line++
		text := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(text) == "" {
			continue
		}
		fields := strings.Split(text, "|")
		if col == nil {
			col = columns(fields)
			for _, c := range []string{"jobid", "start", "end"} {
				if _, ok := col[c]; !ok {
					return log, fmt.Errorf("sacct: line %d: header %q has no %s column: run sacct -P -o JobID,Start,End", line, text, c)
				}
			}
			continue
		}
		get := func(name string) string {
			if i := col[name]; i < len(fields) {
				return strings.TrimSpace(fields[i])
			}
			return ""
		}
		id := get("jobid")
		if id == "" {
			return log, fmt.Errorf("sacct: line %d: no JobID", line)
		}
		job, step, hasStep := strings.Cut(id, ".")
		kind := 2
		switch {
		case !hasStep:
		case step == "batch":
			kind = 1
		case step == "extern":
			continue
		default:
			kind = 0
		}
		start, end := get("start"), get("end")
		if !known(start) || !known(end) {
			log.Skipped = append(log.Skipped, Skip{line, fmt.Sprintf("%s: not started or not ended (Start %q, End %q)", id, start, end)})
			continue
		}
		s, err := parseTime(start)
		if err != nil {
			return log, fmt.Errorf("sacct: line %d, Start: %w", line, err)
		}
		e, err := parseTime(end)
		if err != nil {
			return log, fmt.Errorf("sacct: line %d, End: %w", line, err)
		}
		if e < s {
			return log, fmt.Errorf("sacct: line %d: %s ends (%s) before it starts (%s)", line, id, end, start)
		}
		if _, seen := rows[job]; !seen {
			order = append(order, job)
		}
		rows[job] = append(rows[job], row{kind, Block{Job: job, Arrival: s, Service: e - s}})
	}
	if err := sc.Err(); err != nil {
		return log, fmt.Errorf("sacct: line %d: %w", line+1, err)
	}
	if col == nil {
		return log, errors.New("sacct: the log is empty: want a header like JobID|Start|End")
	}
	for _, job := range order {
		best := 3
		for _, r := range rows[job] {
			best = min(best, r.kind)
		}
		for _, r := range rows[job] {
			if r.kind == best {
				log.Blocks = append(log.Blocks, r.block)
			}
		}
	}
	return log, nil
}

// known reports whether a sacct time is a time, not a placeholder.
func known(s string) bool {
	switch strings.ToLower(s) {
	case "", "unknown", "none", "n/a":
		return false
	}
	return true
}

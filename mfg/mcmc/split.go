package mcmc

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/pario/pario/mfg"
)

// Split turns the parallel file of p's analysis (size bytes in r) back
// into the serial files a MrBayes user expects, created with create and
// named after base (FileName). It first checks the whole file against
// p's map byte by byte: the size, every header and trailer (the ID taken
// from the file's first header), and every line: its generation, a single
// newline at its end, spaces only as padding. A file it cannot account
// for is refused before any output is created. p's Seed, Procs and
// Chains play no part. It stops with ctx's error when ctx is done.
func Split(ctx context.Context, p Params, r io.ReaderAt, size int64, base string, create func(name string) (io.WriteCloser, error)) error {
	if err := CheckSplit(p, base); err != nil {
		return err
	}
	p.Procs, p.Chains = 1, 1
	id, err := readID(r)
	if err != nil {
		return err
	}
	p.FileID = id
	m, err := mfg.New(p.Desc())
	if err != nil {
		return fmt.Errorf("mcmc: split: %w", err)
	}
	if size != m.Size() {
		return invalid("split: the file has %d bytes, %d runs of %d taxa (%s, %d generations, sample frequency %d) make %d",
			size, p.Runs, p.Taxa, p.Format, p.Gens, p.SampleFreq, m.Size())
	}
	want := [2][2]string{
		{tHeader(p.Format, p.Taxa, id), pHeader(p.Format, id)},
		{p.TTrailer(), ""},
	}
	if err := eachPiece(ctx, m, r, func(pc mfg.Piece, b []byte) error {
		return check(p, m, pc, b, want)
	}); err != nil {
		return err
	}
	files := make([]io.WriteCloser, 0, 2)
	cur := -1
	closeCur := func() error {
		var err error
		for _, f := range files {
			if e := f.Close(); e != nil && err == nil {
				err = fmt.Errorf("mcmc: split: close: %w", e)
			}
		}
		files = files[:0]
		return err
	}
	err = eachPiece(ctx, m, r, func(pc mfg.Piece, b []byte) error {
		if pc.Run != cur {
			if err := closeCur(); err != nil {
				return err
			}
			cur = pc.Run
			for s := range 2 {
				name := FileName(base, p.Runs, pc.Run, s)
				f, err := create(name)
				if err != nil {
					return fmt.Errorf("mcmc: split: %s: %w", name, err)
				}
				files = append(files, f)
			}
		}
		if _, err := files[pc.Section].Write(b); err != nil {
			return fmt.Errorf("mcmc: split: write %s: %w", FileName(base, p.Runs, pc.Run, pc.Section), err)
		}
		return nil
	})
	if cerr := closeCur(); err == nil {
		err = cerr
	}
	return err
}

// readID reads the ID of the file's first header ("#NEXUS\n[ID: N]\n").
func readID(r io.ReaderAt) (uint64, error) {
	var head [64]byte
	n, err := r.ReadAt(head[:], 0)
	if err != nil && err != io.EOF {
		return 0, fmt.Errorf("mcmc: split: read the first header: %w", err)
	}
	rest, ok := bytes.CutPrefix(head[:n], []byte("#NEXUS\n[ID: "))
	num, _, found := bytes.Cut(rest, []byte("]\n"))
	id, perr := strconv.ParseUint(string(num), 10, 64)
	if !ok || !found || perr != nil {
		return 0, invalid("split: the file does not start with a .t header (#NEXUS, [ID: N]): %q", head[:min(n, 24)])
	}
	return id, nil
}

// CheckSplit says what is wrong with the parameters of a split (p's Seed,
// Procs and Chains play no part) or the base of its files' names, before
// any file is read.
func CheckSplit(p Params, base string) error {
	p.Procs, p.Chains = 1, 1
	if err := p.Validate(); err != nil {
		return err
	}
	if base == "" || strings.HasSuffix(base, "/") {
		return invalid("split: -o %q: want the base of the files' names, such as %srun", base, base)
	}
	return nil
}

// eachPiece calls fn with every piece of the map and its bytes, in file
// order. The map's pieces tile the file, so it is read front to back in
// large reads (a line at a time was a round trip per line on a store).
func eachPiece(ctx context.Context, m *mfg.Map, r io.ReaderAt, fn func(mfg.Piece, []byte) error) error {
	br := bufio.NewReaderSize(io.NewSectionReader(r, 0, m.Size()), 1<<20)
	var buf []byte
	var at int64
	for pc := range m.All() {
		if err := ctx.Err(); err != nil {
			return err
		}
		if pc.Off != at {
			return fmt.Errorf("mcmc: split: %s is not at offset %d: the map does not tile the file", pc, at)
		}
		buf = slices.Grow(buf[:0], int(pc.Len))[:pc.Len]
		if _, err := io.ReadFull(br, buf); err != nil {
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				err = fmt.Errorf("the file ended: %w", io.ErrUnexpectedEOF)
			}
			return fmt.Errorf("mcmc: split: read %s: %w", pc, err)
		}
		at += pc.Len
		if err := fn(pc, buf); err != nil {
			return err
		}
	}
	return nil
}

// check says whether b is what piece pc must hold.
func check(p Params, m *mfg.Map, pc mfg.Piece, b []byte, want [2][2]string) error {
	switch pc.Kind {
	case mfg.Header, mfg.Trailer:
		w := want[0][pc.Section]
		if pc.Kind == mfg.Trailer {
			w = want[1][pc.Section]
		}
		if string(b) != w {
			return invalid("split: %s at offset %d is not the %s %s expected (%d bytes): %.40q", pc.Kind, pc.Off, m.Desc().Sections[pc.Section].Name, pc.Kind, len(w), b)
		}
		return nil
	case mfg.Records:
		gen := m.Gen(pc.First)
		var prefix []byte
		if pc.Section == SectionT {
			prefix = p.treePrefix(nil, gen)
		} else {
			prefix = strconv.AppendInt(nil, gen, 10)
			prefix = append(prefix, '\t')
		}
		line := bytes.TrimRight(b[:len(b)-1], " ")
		switch {
		case b[len(b)-1] != '\n':
			return invalid("split: run %d %s line of generation %d at offset %d does not end in a newline", pc.Run, m.Desc().Sections[pc.Section].Name, gen, pc.Off)
		case bytes.IndexByte(b, 0) >= 0:
			return invalid("split: run %d %s line of generation %d at offset %d holds NUL bytes: never written?", pc.Run, m.Desc().Sections[pc.Section].Name, gen, pc.Off)
		case bytes.IndexByte(b[:len(b)-1], '\n') >= 0:
			return invalid("split: run %d %s line of generation %d at offset %d holds a newline before its end", pc.Run, m.Desc().Sections[pc.Section].Name, gen, pc.Off)
		case !bytes.HasPrefix(line, prefix):
			return invalid("split: run %d %s line at offset %d does not start with %q: %.40q", pc.Run, m.Desc().Sections[pc.Section].Name, pc.Off, prefix, b)
		case pc.Section == SectionT && !bytes.HasSuffix(line, []byte(");")):
			return invalid("split: run %d tree of generation %d at offset %d does not end with \");\"", pc.Run, gen, pc.Off)
		}
		return nil
	}
	return invalid("split: unexpected %s", pc)
}

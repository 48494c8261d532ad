package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/pario/pario/rank"
	"github.com/pario/pario/template"
	"github.com/pario/pario/template/annot"
	"github.com/pario/pario/template/dock"
)

// cost models the compute step: a molecule's CPU time is the granularity
// times its size over the mean size (the seed's granularities are
// averages). The time is waited, not spent on this machine's two cores,
// so that each rank has a processor of its own, as each of the seed's
// workstations did; the I/O, segmentation, coordination and the compute
// step's data transformation (dock.Process with Work rounds) are real.
type cost struct {
	Granularity time.Duration // per molecule of mean size
	MeanBytes   float64
	Work        int // dock.Process rounds per element: real CPU, 0 in the figures
}

// meter is one process's modelled processor.
type meter struct {
	cost
	// owed is modelled time not yet waited; negative when a sleep
	// overshot (by a timer's slack, or a loaded machine's scheduling
	// delay), so that overshoots do not add up over the thousands of
	// chains a run computes: over a run the waits total the modelled time
	// plus one overshoot, not one per chain.
	owed time.Duration
}

func (c cost) meter() *meter { return &meter{cost: c} }

// compute processes atoms (a chain, or the trailing E), appending their
// output to out, and waits their modelled time.
func (m *meter) compute(out []byte, atoms [][]byte) []byte {
	var n int
	for _, a := range atoms {
		out = dock.Process(out, a, m.Work)
		n += len(a)
	}
	m.owed += time.Duration(float64(m.Granularity) * float64(n) / m.MeanBytes)
	if m.owed > 0 {
		start := time.Now()
		time.Sleep(m.owed)
		m.owed -= time.Since(start)
	}
	return out
}

// sequential is the seed's figure 3: one process reading the input with
// buffered (stdio) reads, computing and writing each molecule, then
// rereading the output for Stats.
func sequential(in, out string, c cost, prefixed bool) (time.Duration, error) {
	start := time.Now()
	f, err := os.Open(in)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	o, err := os.Create(out)
	if err != nil {
		return 0, err
	}
	defer o.Close()
	r, w := bufio.NewReader(f), bufio.NewWriter(o)
	m := c.meter()
	for {
		mol, err := readMolecule(r, prefixed)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, fmt.Errorf("%s: %w", in, err)
		}
		if _, err := w.Write(computeMolecule(nil, mol, m)); err != nil {
			return 0, err
		}
	}
	if err := w.Flush(); err != nil {
		return 0, err
	}
	if err := stats(out, 0); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// readMolecule reads one B the way figure 5's code does: N, then atom
// after atom.
func readMolecule(r *bufio.Reader, prefixed bool) (dock.Molecule, error) {
	var hdr [4]byte
	if prefixed {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return dock.Molecule{}, err
		}
	}
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return dock.Molecule{}, err
	}
	n := int(binary.LittleEndian.Uint32(hdr[:]))
	mol := dock.Molecule{N: n}
	for range 4*n + 1 {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return mol, fmt.Errorf("atom's M: %w", io.ErrUnexpectedEOF)
		}
		m := int(binary.LittleEndian.Uint32(hdr[:]))
		if m > dock.MaxM {
			return mol, fmt.Errorf("atom with M = %d: %w", m, dock.ErrFormat)
		}
		a := make([]byte, 4+5*m)
		copy(a, hdr[:])
		if _, err := io.ReadFull(r, a[4:]); err != nil {
			return mol, fmt.Errorf("atom's elements: %w", io.ErrUnexpectedEOF)
		}
		mol.Atoms = append(mol.Atoms, a)
	}
	return mol, nil
}

// computeMolecule is ComputeMolecule: the header, each C E D E chain,
// the trailing E.
func computeMolecule(out []byte, mol dock.Molecule, m *meter) []byte {
	out = dock.OutHeader(out, mol.N)
	for i := 0; i+4 <= len(mol.Atoms); i += 4 {
		out = m.compute(out, mol.Atoms[i:i+4])
	}
	return m.compute(out, mol.Atoms[len(mol.Atoms)-1:])
}

// stats is the Stats pass over the output; want > 0 checks that many
// molecules came out (each analysed precisely once).
func stats(out string, want int) error {
	data, err := os.ReadFile(out)
	if err != nil {
		return err
	}
	n, _, err := dock.Stats(data)
	if err != nil {
		return fmt.Errorf("%s: %w", out, err)
	}
	if want > 0 && n != want {
		return fmt.Errorf("%s: %d molecules in the output, want %d", out, n, want)
	}
	return nil
}

// parallel is the annotated program on 1+cm+cede ranks: rank 0 is main
// (the parent of fin and fout, computing nothing, as the seed's extra
// process for main); ranks 1..cm run ComputeMolecule; with cede > 0 each
// ComputeMolecule rank leads a group (rank.Comm.Split) whose other ranks
// run ComputeCEDE over its molecule's chains, a newspaper of newspapers.
// The ann file says what fin and fout are (newspaper or log output).
func parallel(ctx context.Context, ann *annot.File, in, out string, cm, cede int, c cost, molecules int) (time.Duration, error) {
	if err := os.WriteFile(out, nil, 0o644); err != nil {
		return 0, err
	}
	var took time.Duration
	err := rank.RunLocal(ctx, 1+cm+cede, func(ctx context.Context, comm *rank.Comm) error {
		g, err := template.NewGroup(ctx, comm)
		if err != nil {
			return err
		}
		defer g.Close(ctx)
		f, err := os.Open(in)
		if err != nil {
			return err
		}
		defer f.Close()
		o, err := os.OpenFile(out, os.O_RDWR, 0)
		if err != nil {
			return err
		}
		defer o.Close()
		fin, err := lookup(ann, "fin", "ComputeMolecule")
		if err != nil {
			return err
		}
		fout, err := lookup(ann, "fout", "ComputeMolecule")
		if err != nil {
			return err
		}
		sin, err := g.Open(ctx, fin, f, template.Bounds{})
		if err != nil {
			return err
		}
		defer sin.Close()
		sout, err := g.Open(ctx, fout, o, template.Bounds{})
		if err != nil {
			return err
		}
		defer sout.Close()
		var sub *rank.Comm
		var sg *template.Group
		if cede > 0 {
			me := comm.Rank()
			color := 0 // main alone
			switch {
			case me >= 1 && me <= cm:
				color = me
			case me > cm:
				color = 1 + (me-cm-1)%cm
			}
			if sub, err = comm.Split(ctx, color, me); err != nil {
				return err
			}
			defer sub.Close()
			if sg, err = template.NewGroup(ctx, sub); err != nil {
				return err
			}
			defer sg.Close(ctx)
		}
		if err := comm.Barrier(ctx); err != nil {
			return err
		}
		start := time.Now()
		switch {
		case comm.Rank() == 0:
		case sub != nil:
			err = composed(ctx, ann, f, sin, sout, sub, sg, c)
		default:
			err = worker(ctx, sin, sout, c)
		}
		if err != nil {
			return err
		}
		// fclose(fin); rewind(fout): every result is in the file.
		if err := comm.Barrier(ctx); err != nil {
			return err
		}
		if comm.Rank() == 0 {
			if err := stats(out, molecules); err != nil {
				return err
			}
			took = time.Since(start)
		}
		return nil
	})
	return took, err
}

func lookup(ann *annot.File, stream, fn string) (annot.Annotation, error) {
	if a, ok := ann.Lookup(stream, fn); ok {
		return a, nil
	}
	return annot.Annotation{}, fmt.Errorf("%s: no annotation for stream %s, function %s", ann.Name, stream, fn)
}

// worker is a ComputeMolecule process: molecule after molecule from the
// input newspaper, its output to fout as a newspaper segment of unknown
// extent, or appended to a log.
func worker(ctx context.Context, sin, sout *template.Stream, c cost) error {
	m := c.meter()
	for {
		sg, err := sin.Next(ctx)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		mol, err := readSegment(sg, sin)
		if err != nil {
			return err
		}
		if err := writeOut(ctx, sout, sg.Index, mol, m); err != nil {
			return err
		}
	}
}

func readSegment(sg *template.Segment, sin *template.Stream) (dock.Molecule, error) {
	rec := make([]byte, sg.Extent)
	if _, err := sg.ReadAt(rec, 0); err != nil {
		return dock.Molecule{}, fmt.Errorf("molecule %d at %d: %w", sg.Index, sg.Base, err)
	}
	if sin.Annotation().SegFunc == "BLen" {
		rec = rec[4:]
	}
	return dock.Parse(rec)
}

// writeOut writes one molecule's output as the sequential code does,
// a write per chain, through fout's template.
func writeOut(ctx context.Context, sout *template.Stream, index int, mol dock.Molecule, m *meter) error {
	a := sout.Annotation()
	if a.Template == annot.Log {
		// The sequential code's writes, each through the log: under
		// block transactions ComputeMolecule's writes are one
		// transaction, holding the log from its first write to its last.
		block := a.Tx == annot.Block
		if block {
			if err := sout.Begin(ctx); err != nil {
				return err
			}
		}
		if _, err := sout.Append(ctx, dock.OutHeader(nil, mol.N)); err != nil {
			return err
		}
		for i := 0; i < len(mol.Atoms); i += 4 {
			if _, err := sout.Append(ctx, m.compute(nil, mol.Atoms[i:min(i+4, len(mol.Atoms))])); err != nil {
				return err
			}
		}
		if block {
			return sout.End(ctx)
		}
		return nil
	}
	sc, err := sout.Scratch(index)
	if err != nil {
		return err
	}
	if _, err := sc.Write(computeMolecule(nil, mol, m)); err != nil {
		sc.Discard()
		return err
	}
	_, err = sc.Close(ctx)
	return err
}

// composed is one group of figure 9: its rank 0 (ComputeMolecule) takes a
// molecule and tells the group; the others (ComputeCEDE) take its chains
// from a second-level newspaper (fin's ComputeCEDE line, CEDESize) over
// the molecule; rank 0 gathers their results, adds the trailing E and
// places the molecule's output in fout. The second level of fout is this
// gather: a ComputeCEDE result goes to its ComputeMolecule process, not
// to the file.
func composed(ctx context.Context, ann *annot.File, f *os.File, sin, sout *template.Stream, sub *rank.Comm, sg *template.Group, c cost) error {
	lv2, err := lookup(ann, "fin", "ComputeCEDE")
	if err != nil {
		return err
	}
	m := c.meter()
	for {
		var msg []byte
		var seg *template.Segment
		if sub.Rank() == 0 {
			seg, err = sin.Next(ctx)
			switch {
			case errors.Is(err, io.EOF):
			case err != nil:
				return err
			default:
				msg = binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, uint64(seg.Base)), uint64(seg.Extent))
			}
		}
		if msg, err = sub.Broadcast(ctx, 0, msg); err != nil {
			return err
		}
		if len(msg) == 0 {
			return nil
		}
		base, extent := int64(binary.LittleEndian.Uint64(msg)), int64(binary.LittleEndian.Uint64(msg[8:]))
		view := section{f: f, base: base, extent: extent}
		inner, err := sg.Open(ctx, lv2, view, template.Bounds{Min: 4, Max: extent})
		if err != nil {
			return err
		}
		var mine []byte
		// With no ComputeCEDE ranks in the group, rank 0 does the chains.
		if sub.Rank() > 0 || sub.Size() == 1 {
			for {
				chain, err := inner.Next(ctx)
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					inner.Close()
					return err
				}
				rec := make([]byte, chain.Extent)
				if _, err := chain.ReadAt(rec, 0); err != nil {
					inner.Close()
					return err
				}
				atoms, err := splitAtoms(rec)
				if err != nil {
					inner.Close()
					return err
				}
				// Tagged with the chain's index, so that rank 0 puts
				// the molecule's output back in the sequential order.
				res := m.compute(nil, atoms)
				mine = binary.LittleEndian.AppendUint32(mine, uint32(chain.Index))
				mine = binary.LittleEndian.AppendUint32(mine, uint32(len(res)))
				mine = append(mine, res...)
			}
		}
		inner.Close()
		parts, err := sub.Gather(ctx, 0, mine)
		if err != nil {
			return err
		}
		if sub.Rank() != 0 {
			continue
		}
		rec := make([]byte, extent)
		if _, err := view.ReadAt(rec, 0); err != nil {
			return err
		}
		mol, err := dock.Parse(rec)
		if err != nil {
			return err
		}
		sc, err := sout.Scratch(seg.Index)
		if err != nil {
			return err
		}
		chains := make([][]byte, mol.N)
		for _, p := range parts {
			for len(p) >= 8 {
				i, n := binary.LittleEndian.Uint32(p), binary.LittleEndian.Uint32(p[4:])
				if int(i) >= mol.N || int(n) > len(p)-8 {
					return fmt.Errorf("molecule %d: chain result %d of %d bytes does not fit", seg.Index, i, n)
				}
				chains[i], p = p[8:8+n], p[8+n:]
			}
		}
		body := dock.OutHeader(nil, mol.N)
		for i, ch := range chains {
			if ch == nil {
				return fmt.Errorf("molecule %d: chain %d was not computed", seg.Index, i)
			}
			body = append(body, ch...)
		}
		body = m.compute(body, mol.Atoms[len(mol.Atoms)-1:])
		if _, err := sc.Write(body); err != nil {
			sc.Discard()
			return err
		}
		if _, err := sc.Close(ctx); err != nil {
			return err
		}
	}
}

// splitAtoms cuts a chain into its atoms.
func splitAtoms(rec []byte) ([][]byte, error) {
	var atoms [][]byte
	for len(rec) >= 4 {
		size := 4 + 5*int(binary.LittleEndian.Uint32(rec))
		if size > len(rec) || size < 4 {
			return nil, fmt.Errorf("chain: atom of %d bytes in %d: %w", size, len(rec), dock.ErrFormat)
		}
		atoms = append(atoms, rec[:size])
		rec = rec[size:]
	}
	return atoms, nil
}

// section is a molecule's bytes as a file of their own, read only.
type section struct {
	f            io.ReaderAt
	base, extent int64
}

func (s section) ReadAt(p []byte, off int64) (int, error) {
	return io.NewSectionReader(s.f, s.base, s.extent).ReadAt(p, off)
}

func (s section) WriteAt(p []byte, off int64) (int, error) {
	return 0, fmt.Errorf("dockexp: molecule at %d is read only", s.base)
}

package template

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pario/pario/rank"
	"github.com/pario/pario/template/annot"
)

// program is one compiled program whose output behaviour comes from the
// annotation file named by $PARIO_ANNOTATIONS, read when it runs: item i
// is computed by rank i%size, rank 0 being slow, and written to stream
// fout of function main.
func program(t *testing.T, out string, items int) {
	t.Helper()
	runRanks(t, nRanks, out, nil, func(ctx context.Context, g *Group, f File) error {
		af, err := LoadAnnotations("")
		if err != nil {
			return err
		}
		a, ok := af.Lookup("fout", "main")
		if !ok {
			return errors.New("no annotation for fout in main")
		}
		s, err := g.Open(ctx, a, f, Bounds{})
		if err != nil {
			return err
		}
		defer s.Close()
		me, n := g.Comm().Rank(), g.Comm().Size()
		if me == 0 {
			time.Sleep(50 * time.Millisecond)
		}
		for i := me; i < items; i += n {
			r := record(i%n, i/n)
			switch a.Template {
			case annot.Log:
				_, err = s.Append(ctx, r)
			case annot.Newspaper:
				var sc *Scratch
				if sc, err = s.Scratch(i); err == nil {
					sc.Write(r)
					_, err = sc.Close(ctx)
				}
			default:
				err = fmt.Errorf("this program has no use for a %s", a.Template)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// TestAnnotationChangesBehaviour: the same program, three annotation
// lines, three behaviours, no rebuild.
func TestAnnotationChangesBehaviour(t *testing.T) {
	const items = 4 * nRanks
	var seq bytes.Buffer
	for i := range items {
		seq.Write(record(i%nRanks, i/nRanks))
	}
	dir := t.TempDir()
	annFile := filepath.Join(dir, "io.ann")
	t.Setenv(EnvAnnotations, annFile)
	for i, tc := range []struct {
		line    string
		ordered bool
	}{
		{"fout NEWSPAPER rc wo b main=0", true},
		{"fout LOG rc wc a main=0", false},
		{"fout LOG rc wo a main=0", true},
		{"fout NEWSPAPER rc wc b main=0", false},
	} {
		if err := os.WriteFile(annFile, []byte("# changed between runs\nfin NEWSPAPER ro wo b main=FASTA\n"+tc.line+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, fmt.Sprintf("out%d", i))
		program(t, out, items)
		got, _ := os.ReadFile(out)
		recs := parseRecords(t, got)
		if len(recs) != items {
			t.Fatalf("%s: %d records, want %d", tc.line, len(recs), items)
		}
		if same := bytes.Equal(got, seq.Bytes()); same != tc.ordered {
			t.Errorf("%s: output identical to the sequential one: %v, want %v\n%s", tc.line, same, tc.ordered, got)
		}
	}
}

// TestNewspaperOfNewspapers: the seed's composition. Level 1 cuts the file
// into length-prefixed blocks, handed to groups of two ranks (rank.Split);
// inside a group, level 2 cuts its block into lines, handed to the group's
// ranks. Every line is processed exactly once.
func TestNewspaperOfNewspapers(t *testing.T) {
	levels, err := annot.Parse("io.ann", []byte(`
fin NEWSPAPER ro wo b Molecule=LenPrefix32
fin NEWSPAPER ro wo b CEDE=Lines
`))
	if err != nil {
		t.Fatal(err)
	}
	lv := levels.Levels("fin")
	var file bytes.Buffer
	var want []string
	for b := range 9 {
		var blk bytes.Buffer
		for l := range 1 + b%4 {
			line := fmt.Sprintf("block %d line %d\n", b, l)
			blk.WriteString(line)
			want = append(want, line)
		}
		binary.Write(&file, binary.LittleEndian, uint32(blk.Len()))
		file.Write(blk.Bytes())
	}
	in := filepath.Join(t.TempDir(), "in")
	os.WriteFile(in, file.Bytes(), 0o644)

	var mu sync.Mutex
	seen := map[string]int{}
	err = rank.RunLocal(testCtx(t), nRanks, func(ctx context.Context, c *rank.Comm) error {
		g, err := NewGroup(ctx, c)
		if err != nil {
			return err
		}
		defer g.Close(ctx)
		f, err := os.Open(in)
		if err != nil {
			return err
		}
		defer f.Close()
		top, err := g.Open(ctx, lv[0], f, Bounds{})
		if err != nil {
			return err
		}
		defer top.Close()
		sub, err := c.Split(ctx, c.Rank()/2, c.Rank())
		if err != nil {
			return err
		}
		defer sub.Close()
		sg, err := NewGroup(ctx, sub)
		if err != nil {
			return err
		}
		defer sg.Close(ctx)
		for {
			// The group's rank 0 takes a block and tells its group.
			var msg []byte
			if sub.Rank() == 0 {
				b, err := top.Next(ctx)
				switch {
				case errors.Is(err, io.EOF):
				case err != nil:
					return err
				default:
					msg = binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, uint64(b.Base)), uint64(b.Extent))
				}
			}
			if msg, err = sub.Broadcast(ctx, 0, msg); err != nil {
				return err
			}
			if len(msg) == 0 {
				return nil
			}
			blk := &Segment{Base: int64(binary.LittleEndian.Uint64(msg)), Extent: int64(binary.LittleEndian.Uint64(msg[8:])), f: f, stream: "fin"}
			// The block is itself a newspaper: its lines after the
			// 4-byte length.
			inner, err := sg.Open(ctx, lv[1], blk.View(), Bounds{Min: 4, Max: blk.Extent})
			if err != nil {
				return err
			}
			for {
				line, err := inner.Next(ctx)
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					return err
				}
				b := make([]byte, line.Extent)
				if _, err := line.ReadAt(b, 0); err != nil {
					return err
				}
				mu.Lock()
				seen[string(b)]++
				mu.Unlock()
			}
			inner.Close()
			if err := sub.Barrier(ctx); err != nil {
				return err
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range want {
		if seen[w] != 1 {
			t.Errorf("line %q processed %d times", strings.TrimSpace(w), seen[w])
		}
	}
	if len(seen) != len(want) {
		t.Errorf("%d distinct lines, want %d", len(seen), len(want))
	}
}

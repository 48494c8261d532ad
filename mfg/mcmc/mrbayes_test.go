package mcmc

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pario/pario/internal/testenv"
)

// A real MrBayes 3.2.7 run (Debian's mb) on a matrix of Matrix: its .t and
// .p files have the headers and field layout pario mcmc's 3.2.7 format
// writes, its lines fit the fixed widths, and packed (padded) into an MFG
// parallel file they split back unchanged.
func TestRealMrBayes(t *testing.T) {
	mb, err := exec.LookPath("mb")
	if err != nil {
		testenv.SkipOrFail(t, "no mb (Debian package mrbayes): %v", err)
		return
	}
	p := Params{Runs: 2, Chains: 2, Procs: 1, Taxa: 12, Gens: 40, SampleFreq: 10, SwapFreq: 1, Seed: 3, Format: MB327}
	dir := t.TempDir()
	var nex bytes.Buffer
	if err := Matrix(context.Background(), &nex, p.Taxa, 40, p.Seed, &p); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "in.nex"), nex.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, mb, "in.nex")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("mb: %v\n%s", err, out)
	}
	m := mustMap(t, p)
	var packed []byte
	var id uint64
	for r := range p.Runs {
		var padded [2][]byte
		for s, ext := range []string{".t", ".p"} {
			b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("in.nex.run%d%s", r+1, ext)))
			if err != nil {
				t.Fatal(err)
			}
			text := string(b)
			if r == 0 && s == 0 {
				if _, err := fmt.Sscanf(text, "#NEXUS\n[ID: %d]", &id); err != nil {
					t.Fatalf("mb's t file does not start with an ID: %q", text[:min(len(text), 40)])
				}
				p.FileID = id
			}
			head := p.Header(s)
			if !strings.HasPrefix(text, head) {
				t.Fatalf("run %d %s: mb's header\n%s\nis not pario mcmc's\n%s", r+1, ext, text[:min(len(text), len(head))], head)
			}
			body := strings.TrimPrefix(text, head)
			trailer := p.Trailer(s)
			if !strings.HasSuffix(body, trailer) {
				t.Fatalf("run %d %s does not end with %q", r+1, ext, trailer)
			}
			lines := strings.SplitAfter(strings.TrimSuffix(body, trailer), "\n")
			lines = lines[:len(lines)-1] // after the last newline
			if int64(len(lines)) != m.Samples() {
				t.Fatalf("run %d %s: %d lines, want %d samples (generation 0 too)", r+1, ext, len(lines), m.Samples())
			}
			ours := p.appendLine(nil, s, r, 0, p.Gens)
			width := m.Desc().Sections[s].Record
			padded[s] = append(padded[s], head...)
			for i, l := range lines {
				gen := m.Gen(int64(i))
				if s == SectionT {
					prefix := fmt.Sprintf("   tree gen.%d = [&U] (", gen)
					if !strings.HasPrefix(l, prefix) || !strings.HasSuffix(l, ");\n") {
						t.Errorf("run %d: mb's tree line %q is not %q...);", r+1, l, prefix)
					}
				} else {
					f := strings.Split(strings.TrimSuffix(l, "\n"), "\t")
					of := strings.Split(strings.TrimRight(string(ours), " \n"), "\t")
					if f[0] != fmt.Sprint(gen) || len(f) != len(of) {
						t.Errorf("run %d: mb's p line %q has %d fields, pario mcmc's %d", r+1, l, len(f), len(of))
					}
					for k := 1; k < len(f); k++ {
						if strings.Contains(f[k], "e") != strings.Contains(of[k], "e") {
							t.Errorf("run %d: field %d %q of mb, %q of pario mcmc: not the same notation", r+1, k, f[k], of[k])
						}
					}
				}
				if int64(len(l)) > width {
					t.Fatalf("run %d %s: mb's line of %d B is wider than pario mcmc's %d", r+1, ext, len(l), width)
				}
				padded[s] = append(padded[s], strings.TrimSuffix(l, "\n")...)
				padded[s] = append(padded[s], bytes.Repeat([]byte(" "), int(width)-len(l))...)
				padded[s] = append(padded[s], '\n')
			}
			padded[s] = append(padded[s], trailer...)
		}
		packed = append(packed, padded[0]...)
		packed = append(packed, padded[1]...)
	}
	fs := newMemFS()
	if err := Split(context.Background(), p, bytes.NewReader(packed), int64(len(packed)), "out", fs.create); err != nil {
		t.Fatal(err)
	}
	var got []byte
	for r := range p.Runs {
		for s := range 2 {
			got = append(got, fs.files[FileName("out", p.Runs, r, s)].Bytes()...)
		}
	}
	if !bytes.Equal(got, packed) {
		t.Error("mb's lines, packed into a parallel file, did not split back unchanged")
	}
	if int64(len(packed)) != mustMap(t, p).Size() {
		t.Errorf("packed file of %d B", len(packed))
	}
}

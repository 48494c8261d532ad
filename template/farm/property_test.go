package farm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pario/pario/rank"
	"github.com/pario/pario/template/annot"
	"pgregory.net/rapid"
)

// TestOrderedPropertyMatchesSequential: for random inputs (no trailing
// newline, empty, NUL bytes, CR LF, '>' inside lines, a record longer than
// the reads of a segmentation function or the parent's window), random
// ranks, groups and blocks, an ordered farm of cat or awk over Lines,
// FASTA or a constant extent writes, concatenated over its groups' files,
// exactly what one run of the command over the whole input writes.
func TestOrderedPropertyMatchesSequential(t *testing.T) {
	dir := t.TempDir()
	iter := 0
	rapid.Check(t, func(rt *rapid.T) {
		iter++
		segFn := rapid.SampledFrom([]string{"Lines", "FASTA", "7", "1", "64k"}).Draw(rt, "seg")
		body := rapid.SliceOfN(rapid.SampledFrom([]byte("ab\n\n>\r\x00 \xff")), 0, 3000).Draw(rt, "body")
		blocks := []int64{0, 1, 5, 100, 1 << 20}
		// A record longer than what a segmentation function reads first
		// (1 KiB), at most (64 KiB) or the parent's window (1 MiB).
		if long := rapid.SampledFrom([]int{0, 0, 0, 1500, 70 << 10, 1<<20 + 300}).Draw(rt, "long"); long > 0 {
			at := rapid.IntRange(0, len(body)).Draw(rt, "at")
			body = slices.Concat(body[:at], bytes.Repeat([]byte("x"), long), body[at:])
			blocks = []int64{0, 1 << 20} // not a run of the command per byte
		}
		input := body
		if segFn == "FASTA" && len(body) > 0 {
			input = append([]byte(">"), body...) // a FASTA file starts with a header
		}
		argv := []string{"cat"}
		// awk sees lines: only a segmentation that cuts at line ends gives
		// it what one run sees.
		if segFn == "Lines" || segFn == "FASTA" {
			argv = rapid.SampledFrom([][]string{{"cat"}, {"awk", `{print NF ":" length($0) ":" $1}`}}).Draw(rt, "argv")
		}
		n := rapid.IntRange(1, 4).Draw(rt, "ranks")
		group := rapid.IntRange(0, n).Draw(rt, "group")
		block := rapid.SampledFrom(blocks).Draw(rt, "block")

		in := filepath.Join(dir, fmt.Sprintf("in%d", iter))
		if err := os.WriteFile(in, input, 0o644); err != nil {
			rt.Fatal(err)
		}
		out := filepath.Join(dir, fmt.Sprintf("out%d", iter))
		af, err := annot.Parse("io.ann", fmt.Appendf(nil, "in NEWSPAPER ro wo b farm=%s\nout NEWSPAPER rc wo b farm=0\n", segFn))
		if err != nil {
			rt.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		var mu sync.Mutex
		var res Result
		var errs []error
		err = rank.RunLocal(ctx, n, func(ctx context.Context, c *rank.Comm) error {
			r, err := Run(ctx, Config{Comm: c, Annotations: af, In: in, Out: out, InFS: Local{}, OutFS: Local{},
				Argv: argv, Block: block, Group: group})
			mu.Lock()
			defer mu.Unlock()
			errs = append(errs, err)
			if c.Rank() == 0 {
				res = r
			}
			return nil
		})
		if err = errors.Join(append(errs, err)...); err != nil {
			rt.Fatal(err)
		}
		var got []byte
		for _, name := range res.Outputs {
			p, err := os.ReadFile(name)
			if err != nil {
				rt.Fatal(err)
			}
			got = append(got, p...)
		}
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Stdin = bytes.NewReader(input)
		want, err := cmd.Output()
		if err != nil {
			rt.Fatalf("one run of %v: %v", argv, err)
		}
		if !bytes.Equal(got, want) {
			rt.Fatalf("ordered output differs from one run:\ngot  %.300q\nwant %.300q", got, want)
		}
		if res.Bytes != int64(len(input)) {
			rt.Fatalf("%d input bytes fed, want %d", res.Bytes, len(input))
		}
		ents, err := os.ReadDir(dir)
		if err != nil {
			rt.Fatal(err)
		}
		for _, e := range ents {
			if strings.Contains(e.Name(), ".farm-") {
				rt.Fatalf("temporary output %s left behind", e.Name())
			}
		}
	})
}

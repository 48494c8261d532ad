package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"

	"github.com/pario/pario/medic"
)

// The synthetic report stands in for a BLAST report when the blast plugin
// or its data are not at hand: tab-separated hit lines (-outfmt 6 shape)
// that are a deterministic function of a seed, a record count and a
// "work" factor. Computing each record costs `work` SHA-256 rounds: the
// search the storage site repeats to regenerate it.
//
// The synth plugin is a semantic plugin in the paper's sense: its
// metadata is the generator's input (one line, tens of bytes), and the
// storage site regenerates the whole report by running the generator.

const synthMagic = "# medicexp synthetic report v1"

func synthHeader(seed uint64, records, work int) string {
	return fmt.Sprintf("%s seed=%d records=%d work=%d\n", synthMagic, seed, records, work)
}

// writeSynth writes the report for (seed, records, work) to w.
func writeSynth(ctx context.Context, w io.Writer, seed uint64, records, work int) error {
	bw := bufio.NewWriterSize(w, 256<<10)
	if _, err := bw.WriteString(synthHeader(seed, records, work)); err != nil {
		return err
	}
	r := rand.New(rand.NewPCG(seed, 0x6d65646963))
	var st [32]byte
	binary.LittleEndian.PutUint64(st[:], seed)
	for i := 0; i < records; i++ {
		if i%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		for k := 0; k < work; k++ {
			st = sha256.Sum256(st[:])
		}
		q := i / 40
		subj := r.IntN(20000)
		ident := 30 + r.Float64()*70
		alen := 50 + r.IntN(450)
		mism := r.IntN(alen / 3)
		gaps := r.IntN(10)
		qs := 1 + r.IntN(100)
		ss := 1 + r.IntN(300)
		ev := r.Float64() * float64(int(st[0])%10+1)
		bits := 20 + r.Float64()*800
		fmt.Fprintf(bw, "query_%04d\tsp|P%05d|PROT_%05d\t%.3f\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%.2e\t%.1f\n",
			q, subj, subj, ident, alen, mism, gaps, qs, qs+alen, ss, ss+alen, ev*1e-10, bits)
	}
	return bw.Flush()
}

// makeSynth writes a report of about size bytes into path.
func makeSynth(path string, size int64, work int) error {
	const perRecord = 78 // average line length
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := writeSynth(context.Background(), f, 42, int(size/perRecord), work); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

type synthPlugin struct{}

func (synthPlugin) Name() string { return "synth" }

func (synthPlugin) Encode(_ context.Context, src medic.Source, meta io.Writer) error {
	f, err := os.Open(src.Path)
	if err != nil {
		return err
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, synthMagic) {
		return fmt.Errorf("%s is not a medicexp synthetic report", src.Path)
	}
	_, err = io.WriteString(meta, line)
	return err
}

func (synthPlugin) Decode(ctx context.Context, meta io.Reader, out io.Writer, _ medic.Env) error {
	b, err := io.ReadAll(io.LimitReader(meta, 4096))
	if err != nil {
		return err
	}
	var seed uint64
	var records, work int
	if _, err := fmt.Sscanf(strings.TrimPrefix(string(b), synthMagic), " seed=%d records=%d work=%d", &seed, &records, &work); err != nil {
		return fmt.Errorf("synth metadata %q: %w", b, err)
	}
	return writeSynth(ctx, out, seed, records, work)
}

func init() { medic.Register(synthPlugin{}) }

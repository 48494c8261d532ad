// Package zstd is medic's generic plugin: the output compressed as a byte
// stream with Zstandard. It is the fallback for any output no application
// plugin understands: it needs nothing at the storage site.
//
// Params: "level" = fastest | default | better | best (default "default",
// about zstd -3); "concurrency" = encoder goroutines (default 1, so that f
// is measured on one core like the other plugins).
package zstd

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/klauspost/compress/zstd"
	"github.com/pario/pario/medic"
)

// Plugin is the zstd plugin; it registers itself as "zstd".
type Plugin struct{}

// Name implements medic.Plugin.
func (Plugin) Name() string { return "zstd" }

func level(s string) (zstd.EncoderLevel, error) {
	if s == "" {
		return zstd.SpeedDefault, nil
	}
	ok, l := zstd.EncoderLevelFromString(s)
	if !ok {
		return 0, fmt.Errorf("param level=%q: want fastest, default, better or best", s)
	}
	return l, nil
}

// Encode implements medic.Plugin.
func (Plugin) Encode(ctx context.Context, src medic.Source, meta io.Writer) error {
	l, err := level(src.Params["level"])
	if err != nil {
		return err
	}
	conc := 1
	if c := src.Params["concurrency"]; c != "" {
		if conc, err = strconv.Atoi(c); err != nil || conc < 1 {
			return fmt.Errorf("param concurrency=%q: want a positive integer", c)
		}
	}
	f, err := os.Open(src.Path)
	if err != nil {
		return err
	}
	defer f.Close()
	opts := []zstd.EOption{zstd.WithEncoderLevel(l), zstd.WithEncoderConcurrency(conc)}
	if st, err := f.Stat(); err == nil {
		if w := window(st.Size()); w > 0 {
			opts = append(opts, zstd.WithWindowSize(w))
		}
	}
	enc, err := zstd.NewWriter(meta, opts...)
	if err != nil {
		return err
	}
	if _, err := io.Copy(enc, ctxReader{ctx, f}); err != nil {
		enc.Close()
		return err
	}
	return enc.Close()
}

// window is the encoder's window for an output of n bytes: the least
// power of two that holds it (at least zstd's minimum), or 0 (the
// level's default, 8 MiB at the default level) for an output larger
// than that. A window larger than the output compresses it no better,
// yet the encoder allocates its tables for it: 19 MB and 15 ms for a
// 0.21 MB BLAST report at the default level, 3 MB and 3.4 ms with a
// window of 256 KiB, the same bytes out but the frame header.
func window(n int64) int {
	w := zstd.MinWindowSize
	for int64(w) < n {
		w <<= 1
		if w >= 8<<20 {
			return 0
		}
	}
	return w
}

// Decode implements medic.Plugin.
func (Plugin) Decode(ctx context.Context, meta io.Reader, out io.Writer, _ medic.Env) error {
	dec, err := zstd.NewReader(meta, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(1<<30))
	if err != nil {
		return err
	}
	defer dec.Close()
	if _, err := io.Copy(out, ctxReader{ctx, dec}); err != nil {
		return fmt.Errorf("decompress: %w", err)
	}
	return nil
}

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

func init() { medic.Register(Plugin{}) }

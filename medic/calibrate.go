package medic

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/pario/pario/medic/cost"
)

// Calibrate measures a plugin on an output: it encodes it (f, the
// container size x, sealing included) and regenerates it here (g, digest
// check included) with env as the storage site's environment. It is a
// real run: the plugin must be able to regenerate at this site (for an
// application plugin, with a copy of the resources it needs).
func Calibrate(ctx context.Context, path string, o EncodeOptions, env Env) (cost.Estimate, error) {
	return calibrate(ctx, path, o, env, true, "")
}

// CalibrateEncode measures only f and x (G is 0): for a plugin whose g
// comes from elsewhere (the receiver's record), so that this site needs
// nothing to regenerate with and spends no time on it.
func CalibrateEncode(ctx context.Context, path string, o EncodeOptions) (cost.Estimate, error) {
	return calibrate(ctx, path, o, Env{}, false, "")
}

// calibrate encodes into keep when it is not "" (a spool file, so that
// the send of the plugin chosen reuses the container instead of encoding
// again), else into a temporary file it removes.
func calibrate(ctx context.Context, path string, o EncodeOptions, env Env, decode bool, keep string) (e cost.Estimate, err error) {
	dir := ""
	if keep != "" {
		dir = filepath.Dir(keep)
	}
	tmp, err := os.CreateTemp(dir, ".pario-medic-cal-*")
	if err != nil {
		return cost.Estimate{}, err
	}
	defer func() {
		tmp.Close()
		if keep != "" && err == nil {
			err = os.Rename(tmp.Name(), keep)
		}
		if keep == "" || err != nil {
			os.Remove(tmp.Name())
		}
	}()
	t0 := time.Now()
	bw := bufio.NewWriterSize(tmp, 1<<20)
	if _, err := Encode(ctx, path, o, bw); err != nil {
		return cost.Estimate{}, err
	}
	if err := bw.Flush(); err != nil {
		return cost.Estimate{}, err
	}
	f := time.Since(t0)
	x, err := tmp.Seek(0, io.SeekCurrent)
	if err != nil {
		return cost.Estimate{}, err
	}
	if !decode {
		return cost.Estimate{Name: o.Plugin, X: float64(x), F: f.Seconds()}, nil
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return cost.Estimate{}, err
	}
	t1 := time.Now()
	if _, err := Decode(ctx, bufio.NewReaderSize(tmp, 256<<10), o.Key, env, io.Discard); err != nil {
		return cost.Estimate{}, err
	}
	g := time.Since(t1)
	return cost.Estimate{Name: o.Plugin, X: float64(x), F: f.Seconds(), G: g.Seconds()}, nil
}

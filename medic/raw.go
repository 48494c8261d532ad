package medic

import (
	"context"
	"io"
	"os"
)

// rawPlugin ships the output as it is: the baseline every plugin is
// compared with (the paper's A' = T + D/B), and still sealed, verified,
// resumable.
type rawPlugin struct{}

func (rawPlugin) Name() string { return "raw" }

func (rawPlugin) Encode(ctx context.Context, src Source, meta io.Writer) error {
	f, err := os.Open(src.Path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(meta, ctxReader{ctx, f})
	return err
}

func (rawPlugin) Decode(ctx context.Context, meta io.Reader, out io.Writer, _ Env) error {
	_, err := io.Copy(out, ctxReader{ctx, meta})
	return err
}

// ctxReader stops a copy when ctx is done.
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

func init() { Register(rawPlugin{}) }

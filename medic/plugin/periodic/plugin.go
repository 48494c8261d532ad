package periodic

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/pario/pario/medic"
)

func init() { medic.Register(Plugin{}) }

// Plugin is the periodic-trace plugin; it takes no params or resources.
type Plugin struct{}

// Name implements medic.Plugin.
func (Plugin) Name() string { return "periodic" }

// Encode implements medic.Plugin.
func (Plugin) Encode(ctx context.Context, src medic.Source, meta io.Writer) error {
	raw, err := os.ReadFile(src.Path)
	if err != nil {
		return fmt.Errorf("periodic: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	m, _, err := EncodeTrace(raw)
	if err != nil {
		return err
	}
	_, err = meta.Write(m)
	return err
}

// Decode implements medic.Plugin.
func (Plugin) Decode(ctx context.Context, meta io.Reader, out io.Writer, _ medic.Env) error {
	m, err := io.ReadAll(meta)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	b, err := DecodeTrace(m)
	if err != nil {
		return err
	}
	_, err = out.Write(b)
	return err
}

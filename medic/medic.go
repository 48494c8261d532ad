package medic

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/pario/pario/internal/filekind"
)

// EncodeOptions say how to encode an output at the compute site.
type EncodeOptions struct {
	Plugin    string
	Params    map[string]string
	Dir       string
	Cipher    Cipher
	Key       []byte // needed with a cipher
	ChunkSize uint32 // 0: DefaultChunkSize
}

// ErrNotRegular is an output that is not a regular file.
var ErrNotRegular = errors.New("not a regular file")

// SourceFile stats the output at path and refuses anything but a regular
// file: it is read more than once (its digest, then the plugin), so a
// pipe would lose what the first read took or block for a writer, a
// device such as /dev/zero never ends, and a directory is not an output.
func SourceFile(path string) (os.FileInfo, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is %s, %w: medic reads an output more than once (its digest, then the plugin): send a file", path, filekind.Of(st.Mode()), ErrNotRegular)
	}
	return st, nil
}

// FileDigest returns the size and SHA-256 of a file.
func FileDigest(path string) (int64, [32]byte, error) {
	var d [32]byte
	f, err := os.Open(path)
	if err != nil {
		return 0, d, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return 0, d, fmt.Errorf("read %s: %w", path, err)
	}
	h.Sum(d[:0])
	return n, d, nil
}

// Encode writes the container for the output at path to w: header (with
// the output's size and SHA-256), then the plugin's metadata, sealed.
func Encode(ctx context.Context, path string, o EncodeOptions, w io.Writer) (Header, error) {
	p, err := Lookup(o.Plugin)
	if err != nil {
		return Header{}, err
	}
	before, err := SourceFile(path)
	if err != nil {
		return Header{}, err
	}
	size, dg, err := FileDigest(path)
	if err != nil {
		return Header{}, err
	}
	h := Header{Cipher: o.Cipher, Plugin: p.Name(), Size: size, Digest: dg, Params: o.Params, ChunkSize: o.ChunkSize}
	cw, err := NewWriter(w, &h, o.Key)
	if err != nil {
		return Header{}, err
	}
	if err := p.Encode(ctx, Source{Path: path, Params: o.Params, Dir: o.Dir}, cw); err != nil {
		return Header{}, fmt.Errorf("%s encode: %w", p.Name(), err)
	}
	if err := cw.Close(); err != nil {
		return Header{}, err
	}
	// The digest and the plugin read the file apart: one being written
	// meanwhile would make a container whose output matches no digest,
	// which the receiver would refuse only after the transfer and the
	// regeneration, as if it could not regenerate it.
	if after, err := os.Stat(path); err != nil || changed(before, after) || after.Size() != size {
		now := "gone"
		if err == nil {
			now = fmt.Sprintf("%d bytes, modified %s", after.Size(), after.ModTime().Format(time.RFC3339Nano))
		}
		return Header{}, fmt.Errorf("%w: %s (%d bytes, modified %s; now %s): send it once it is complete",
			ErrSourceChanged, path, before.Size(), before.ModTime().Format(time.RFC3339Nano), now)
	}
	return h, nil
}

// ErrSourceChanged is an output that changed while it was encoded.
var ErrSourceChanged = errors.New("the output changed while it was encoded")

// changed reports whether a file was written or replaced between two
// stats of it: its size, modification time or inode differ.
func changed(a, b os.FileInfo) bool {
	return !os.SameFile(a, b) || a.Size() != b.Size() || !a.ModTime().Equal(b.ModTime())
}

// countingHash counts and hashes what is written through it.
type countingHash struct {
	w io.Writer
	h hash.Hash
	n int64
}

func (c *countingHash) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.h.Write(p[:n])
	c.n += int64(n)
	return n, err
}

// Decode regenerates the output from the container r into out with the
// plugin the header names, and checks its size and SHA-256 against the
// header. On error, what was written to out must be discarded (the
// framework writes to temporary files only). env.TempDir, when empty, is
// made and removed here.
func Decode(ctx context.Context, r io.Reader, key []byte, env Env, out io.Writer) (Header, error) {
	cr, err := NewReader(r, key)
	if err != nil {
		return Header{}, err
	}
	h := cr.Header()
	p, err := Lookup(h.Plugin)
	if err != nil {
		return h, fmt.Errorf("%w: this receiver was built without plugin %q", ErrMissing, h.Plugin)
	}
	if env.Logger == nil {
		env.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if env.Params == nil {
		env.Params = h.Params
	}
	if env.TempDir == "" {
		d, err := os.MkdirTemp("", "pario-medic-")
		if err != nil {
			return h, err
		}
		defer os.RemoveAll(d)
		env.TempDir = d
	}
	ch := &countingHash{w: out, h: sha256.New()}
	if err := p.Decode(ctx, cr, ch, env); err != nil {
		// A container error is the cause, whatever the plugin made of it.
		var ce *ChunkError
		if errors.As(cr.err, &ce) {
			return h, cr.err
		}
		return h, fmt.Errorf("%s decode: %w", p.Name(), err)
	}
	// The plugin may stop before the end: the rest must still verify.
	if _, err := io.Copy(io.Discard, cr); err != nil {
		return h, err
	}
	var got [32]byte
	ch.h.Sum(got[:0])
	if ch.n != h.Size || got != h.Digest {
		return h, fmt.Errorf("%w: plugin %s regenerated %d bytes with SHA-256 %s, the original had %d bytes with %s",
			ErrDigest, h.Plugin, ch.n, hex.EncodeToString(got[:8]), h.Size, hex.EncodeToString(h.Digest[:8]))
	}
	return h, nil
}

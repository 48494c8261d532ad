package client

import (
	"context"
	"crypto/rand"
	"encoding/binary"
)

// A write's origin names its writer to the I/O servers
// (data.WriteRequest.Origin), as a Lustre extent lock names the client
// that holds it: an emulated disk with lock revocations (`pario up
// --lock-revoke`) charges a write that takes the lock of another origin.
// A Client's writes carry its own random origin, so each rank of a
// parallel run is a writer of its own; a mount, one client for many
// processes, names each process's writes with WithOrigin.

type originKey struct{}

// WithOrigin returns a context whose writes carry origin in place of the
// client's own (0 keeps the client's).
func WithOrigin(ctx context.Context, origin uint64) context.Context {
	if origin == 0 {
		return ctx
	}
	return context.WithValue(ctx, originKey{}, origin)
}

// Origin is the client's own origin, the one its writes carry unless
// their context names another.
func (c *Client) Origin() uint64 { return c.origin }

// originOf is the origin a write with ctx carries.
func (c *Client) originOf(ctx context.Context) uint64 {
	if o, ok := ctx.Value(originKey{}).(uint64); ok {
		return o
	}
	return c.origin
}

// newOrigin is a random nonzero origin.
func newOrigin() uint64 {
	var b [8]byte
	for {
		rand.Read(b[:])
		if o := binary.LittleEndian.Uint64(b[:]); o != 0 {
			return o
		}
	}
}

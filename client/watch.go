package client

import (
	"context"

	"github.com/pario/pario/server/meta"
	"github.com/pario/pario/wire"
)

// Watch polls the metadata server for cache invalidations (see
// meta.Store.Watch): it acknowledges req.Acked and renews the caller's
// lease. It may wait about a second for changes.
func (c *Client) Watch(ctx context.Context, req meta.WatchRequest) (meta.WatchResponse, error) {
	resp, _, err := wire.Call(ctx, c.meta, meta.OpWatch, req, nil, nil)
	return resp, err
}

package client

import (
	"context"
	"io"
	"iter"

	"github.com/pario/pario/server/meta"
	"github.com/pario/pario/wire"
)

// ReaddirPage asks the metadata server for one page of a directory: the
// entries after cookie ("" for the first page) in byte order of their
// names, at most limit of them (0: the server's page size,
// meta.MaxPageEntries). next is the cookie of the following page, "" after
// the last. A cookie stays valid while entries are created and removed:
// an entry present throughout a listing is returned exactly once.
func (c *Client) ReaddirPage(ctx context.Context, path, cookie string, limit int) (ents []meta.DirEntry, next string, err error) {
	resp, _, err := wire.Call(ctx, c.meta, meta.OpReaddir,
		meta.ReaddirRequest{Path: path, Cookie: cookie, Expect: meta.ExpectFrom(ctx), Cred: c.cred(ctx), Max: uint32(min(max(limit, 0), meta.MaxPageEntries))}, nil, nil)
	return resp.Entries, resp.Next, err
}

// DirReader reads a directory one page at a time, so that listing a
// directory of any size holds one page in memory.
type DirReader struct {
	c      *Client
	path   string
	limit  int
	page   []meta.DirEntry
	cookie string // asks for the page after page; "" once the last is in
	eof    bool
}

// OpenDir returns a reader of the directory path that fetches pages of at
// most limit entries (0: the server's page size). Nothing is asked until
// the first Next.
func (c *Client) OpenDir(path string, limit int) *DirReader {
	return &DirReader{c: c, path: path, limit: limit}
}

// Next returns the next entry in byte order of names, or io.EOF after the
// last one. A failed page can be asked again by calling Next again.
func (r *DirReader) Next(ctx context.Context) (meta.DirEntry, error) {
	for len(r.page) == 0 {
		if r.eof {
			return meta.DirEntry{}, io.EOF
		}
		page, next, err := r.c.ReaddirPage(ctx, r.path, r.cookie, r.limit)
		if err != nil {
			return meta.DirEntry{}, err
		}
		r.page, r.cookie, r.eof = page, next, next == ""
	}
	e := r.page[0]
	r.page = r.page[1:]
	return e, nil
}

// Dir iterates over a directory's entries in byte order of their names
// (which is ls's order in the C locale), a page at a time. An error ends
// the iteration after being yielded.
func (c *Client) Dir(ctx context.Context, path string) iter.Seq2[meta.DirEntry, error] {
	return func(yield func(meta.DirEntry, error) bool) {
		r := c.OpenDir(path, 0)
		for {
			e, err := r.Next(ctx)
			if err == io.EOF {
				return
			}
			if !yield(e, err) || err != nil {
				return
			}
		}
	}
}

// Readdir lists a whole directory in byte order of names. Its memory grows
// with the directory: use Dir or OpenDir for directories of any size.
func (c *Client) Readdir(ctx context.Context, path string) ([]meta.DirEntry, error) {
	var out []meta.DirEntry
	for e, err := range c.Dir(ctx, path) {
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

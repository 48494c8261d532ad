package meta

import (
	"context"
	"fmt"
	"syscall"

	"github.com/pario/pario/wire"
)

// Expect is what a caller that builds paths from its own tree of the
// namespace (the FUSE mount) believes the path resolves to. Its tree can
// be out of date: another mount may have moved a directory it holds, and
// something else may then have taken the old path. The Store checks each
// non-zero ID while it resolves the path, in the transaction that acts
// on it, and refuses with ESTALE on a mismatch, so that a request meant
// for the moved directory never touches what now has its old path.
// Zero IDs check nothing (the native client, which names paths as given).
type Expect struct {
	// Dir is the directory that holds the path's last name: where a
	// name is looked up, added or removed (a rename's old path).
	Dir FileID
	// To is the directory of a rename's new path.
	To FileID
	// Self is the entry the path names, for requests on an existing
	// entry (setattr, readdir, readlink, setlayout).
	Self FileID
}

type expectKey struct{}

// WithExpect returns a context that carries x: the client sends it with
// the path request made with the context, and the Store checks it.
func WithExpect(ctx context.Context, x Expect) context.Context {
	return context.WithValue(ctx, expectKey{}, x)
}

// ExpectFrom returns what ctx carries (zero: nothing expected).
func ExpectFrom(ctx context.Context) Expect {
	x, _ := ctx.Value(expectKey{}).(Expect)
	return x
}

func putExpect(e *wire.Enc, x Expect) {
	e.Uvarint(uint64(x.Dir))
	e.Uvarint(uint64(x.To))
	e.Uvarint(uint64(x.Self))
}

func getExpect(d *wire.Dec) Expect {
	return Expect{
		Dir:  FileID(d.Uvarint("expected directory")),
		To:   FileID(d.Uvarint("expected new directory")),
		Self: FileID(d.Uvarint("expected entry")),
	}
}

// expected refuses with ESTALE when the caller expected what (the
// directory, the entry) to be file want and the path led to a instead.
func expected(what string, want FileID, a *Attr) error {
	if want == 0 || want == a.ID {
		return nil
	}
	return fmt.Errorf("the path's %s is file %d, not file %d as the caller expected (moved or replaced since it looked): %w", what, a.ID, want, syscall.ESTALE)
}

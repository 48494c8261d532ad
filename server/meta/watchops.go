package meta

import (
	"errors"
	"time"

	"github.com/pario/pario/wire"
)

// OpWatch is a mount's poll for cache invalidations (see Store.Watch). It
// is not retried: a lost answer is asked for again by the mount's next
// poll (changes stay until acknowledged), and a poll that waits for
// changes must not be resent by the endpoint's timeout logic.
var OpWatch = wire.NewOp[WatchRequest, WatchResponse](19, "watch", false)

func (r WatchRequest) Encode(e *wire.Enc) {
	e.U64(r.Watcher)
	e.U64(r.Acked)
	e.Bool(r.Leave)
}

func (r *WatchRequest) Decode(d *wire.Dec) error {
	r.Watcher, r.Acked, r.Leave = d.U64("watcher"), d.U64("acked"), d.Bool("leave")
	return d.Done()
}

func (r WatchResponse) Encode(e *wire.Enc) {
	e.U64(r.Watcher)
	e.U64(r.Seq)
	e.U64(uint64(r.Lease))
	e.Uvarint(uint64(len(r.Changes)))
	for _, c := range r.Changes {
		e.U64(uint64(c.ID))
		e.U64(uint64(c.Parent))
		e.String(c.Name)
	}
}

func (r *WatchResponse) Decode(d *wire.Dec) error {
	r.Watcher, r.Seq = d.U64("watcher"), d.U64("seq")
	r.Lease = time.Duration(d.I64("lease"))
	n := d.Int("change count", maxListLen)
	r.Changes = nil
	for i := 0; i < n && d.Err() == nil; i++ {
		r.Changes = append(r.Changes, Change{ID: FileID(d.U64("changed id")), Parent: FileID(d.U64("changed parent")), Name: d.String("changed name")})
	}
	if err := d.Done(); err != nil {
		*r = WatchResponse{}
		return err
	}
	if r.Lease < 0 {
		*r = WatchResponse{}
		return errNegativeLease
	}
	return nil
}

var errNegativeLease = errors.New(`field "lease": negative duration`)

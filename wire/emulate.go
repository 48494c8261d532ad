package wire

import (
	"context"
	"fmt"
)

// throttle waits on the endpoint's emulated link (EndpointOptions.Throttle)
// for the bytes a call moves: its arguments, the data it sends and the
// room it gives for the answer's data. A call is charged once, before its
// first attempt, whatever its retries cost; the link's latency is not
// emulated, only its rate.
func (e *Endpoint) throttle(ctx context.Context, args []byte, data, into [][]byte) error {
	if e.opts.Throttle == nil {
		return nil
	}
	n := int64(len(args))
	for _, b := range data {
		n += int64(len(b))
	}
	for _, b := range into {
		n += int64(len(b))
	}
	if err := e.opts.Throttle.Wait(ctx, n); err != nil {
		return fmt.Errorf("%s: waiting for the emulated link: %w", e.Name, err)
	}
	return nil
}

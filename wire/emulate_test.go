package wire

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/pario/pario/wire/throttle"
)

type stepClock struct {
	mu    sync.Mutex
	t     time.Time
	slept time.Duration
}

func (c *stepClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *stepClock) sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	c.slept += d
	return nil
}

// TestEndpointThrottle: a call is charged its arguments, data sent and
// room for data received on the endpoint's link.
func TestEndpointThrottle(t *testing.T) {
	c := &stepClock{t: time.Unix(0, 0)}
	b := throttle.NewClock(1e6, 1, c.now, c.sleep)
	e := NewEndpoint("I/O server data0", "127.0.0.1:1", []byte("secret"), EndpointOptions{Throttle: b})
	defer e.Close()
	b.Reserve(1)
	args, data, into := make([]byte, 100), [][]byte{make([]byte, 300_000), make([]byte, 199_900)}, [][]byte{make([]byte, 500_000)}
	if err := e.throttle(context.Background(), args, data, into); err != nil {
		t.Fatal(err)
	}
	if c.slept != time.Second {
		t.Errorf("1 MB through a 1 MB/s link slept %v, want 1s", c.slept)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := e.Call(ctx, 1, true, args, nil, nil)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Call on a cancelled context behind a busy link: %v", err)
	}
	if unlimited := NewEndpoint("x", "127.0.0.1:1", []byte("s"), EndpointOptions{}); unlimited.throttle(ctx, args, data, into) != nil {
		t.Error("an endpoint without a link waits")
	}
}

// Package floodtest floods a server with connections that never
// authenticate, as anyone without the secret can, for the tests of the
// servers' admission (wire.Gate): the store's servers and medic's receiver.
package floodtest

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Flood holds connections to a server from many loopback hosts, each
// never answering the server's hello and opened again as soon as the
// server closes it.
type Flood struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	opened atomic.Int64
}

// Start floods addr from hosts loopback addresses (127.0.1.1 on, apart
// from the 127.0.0.1 a test's honest client uses), perHost connections
// each. Stop ends it.
func Start(addr string, hosts, perHost int) *Flood {
	ctx, cancel := context.WithCancel(context.Background())
	f := &Flood{cancel: cancel}
	for h := range hosts {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 1, byte(h+1))}}
		for range perHost {
			f.wg.Add(1)
			go func() {
				defer f.wg.Done()
				for ctx.Err() == nil {
					c, err := d.DialContext(ctx, "tcp", addr)
					if err != nil {
						time.Sleep(5 * time.Millisecond)
						continue
					}
					f.opened.Add(1)
					stop := context.AfterFunc(ctx, func() { c.Close() })
					// Read what the server sends (its hello) until it
					// closes the connection; never answer.
					buf := make([]byte, 512)
					for {
						if _, err := c.Read(buf); err != nil {
							break
						}
					}
					stop()
					c.Close()
				}
			}()
		}
	}
	return f
}

// Opened is how many connections the flood has opened so far.
func (f *Flood) Opened() int64 { return f.opened.Load() }

// Stop ends the flood and closes its connections.
func (f *Flood) Stop() {
	f.cancel()
	f.wg.Wait()
}

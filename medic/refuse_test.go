package medic_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pario/pario/medic"
	"github.com/pario/pario/medic/medictest"
)

// countHandler counts the records whose message contains msg.
type countHandler struct {
	msg string
	n   *atomic.Int64
}

func (h countHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h countHandler) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, h.msg) {
		h.n.Add(1)
	}
	return nil
}
func (h countHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h countHandler) WithGroup(string) slog.Handler      { return h }

// Connections past MaxConns are refused with a reason, which over TLS
// goes only after a handshake: those refusals run aside, and at most a
// few dozen at once, so a peer that opens connections and sends nothing
// cannot hold goroutines and descriptors past the limits (before the fix:
// one per connection, for up to a second each).
func TestTLSRefusalsAreBounded(t *testing.T) {
	tc, _ := selfSigned(t)
	_, addr := serveConfig(t, medic.ServerConfig{Key: medictest.Key(t), TLS: tc, MaxConns: 4, MaxConnsPerPeer: 4})
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	dial := func() {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	for range 4 { // the limit, held by connections that never start TLS
		dial()
	}
	time.Sleep(200 * time.Millisecond)
	base := runtime.NumGoroutine()
	const n = 200
	for range n {
		dial()
	}
	time.Sleep(300 * time.Millisecond)
	extra := runtime.NumGoroutine() - base
	t.Logf("%d connections past MaxConns=4: %d more goroutines in the receiver", n, extra)
	if extra > 40 { // maxRefusing (32), and some slack
		t.Errorf("%d refused connections hold %d goroutines (each with its descriptor and TLS state) past MaxConns=4", n, extra)
	}
}

// Connections with a wrong key are refused with ErrAuth and logged a few
// at a time (the handshake's LogLimiter), not a line each: anyone can
// open them.
func TestWrongKeysAreLoggedAFewAtATime(t *testing.T) {
	var n atomic.Int64
	_, addr := serveConfig(t, medic.ServerConfig{Key: medictest.Key(t), Logger: slog.New(countHandler{msg: "medic:", n: &n})})
	wrong := medictest.Key(t)
	const tries = 40
	for range tries {
		_, err := medic.Ping(context.Background(), medic.SendOptions{Addr: addr, Key: wrong})
		if !errors.Is(err, medic.ErrAuth) {
			t.Fatalf("ping with the wrong key: %v", err)
		}
	}
	time.Sleep(100 * time.Millisecond)
	t.Logf("%d connections with a wrong key: %d warnings", tries, n.Load())
	if n.Load() > 10 {
		t.Errorf("%d connections without the key logged %d warnings (LogLimiter lets 5 per 10 s through)", tries, n.Load())
	}
}

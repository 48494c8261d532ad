package metrics

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Endpoint serves a registry's /metrics and Go's /debug/pprof/ on one
// address.
type Endpoint struct {
	Addr string // the address it listens on (the port chosen if :0 was given)
	srv  *http.Server
	done chan struct{}
}

// ErrRemote is the error of Listen for an address other hosts can reach,
// without allowRemote.
var ErrRemote = errors.New("not a loopback address; the pprof endpoint shows the process's memory, goroutines and command line to whoever connects (give --metrics-allow-remote to serve it anyway, behind a firewall)")

// Listen serves r on addr until Close: /metrics (Prometheus text format)
// and /debug/pprof/ (net/http/pprof, on a mux of its own: nothing is added
// to http.DefaultServeMux). An address that is not loopback (127.0.0.1,
// ::1, localhost) is refused unless allowRemote: neither page needs the
// cluster's secret.
func Listen(addr string, allowRemote bool, r *Registry, log *slog.Logger) (*Endpoint, error) {
	if err := CheckAddr(addr, allowRemote); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{ErrorLog: slogAdapter{log}}))
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	e := &Endpoint{
		Addr: ln.Addr().String(),
		// No write timeout: a CPU profile or trace takes as long as asked.
		srv:  &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second},
		done: make(chan struct{}),
	}
	go func() {
		defer close(e.done)
		if err := e.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) && log != nil {
			log.Error("metrics endpoint stopped", "addr", e.Addr, "err", err)
		}
	}()
	return e, nil
}

// Close stops serving, dropping scrapes and profiles under way.
func (e *Endpoint) Close() error {
	err := e.srv.Close()
	<-e.done
	return err
}

// CheckAddr is Listen's check of addr, for a command to make before it
// starts anything: an address that is not HOST:PORT, and one that other
// hosts can reach unless allowRemote (ErrRemote), are refused.
func CheckAddr(addr string, allowRemote bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("metrics address %q: %w", addr, err)
	}
	if allowRemote {
		return nil
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("metrics address %q: %w", addr, ErrRemote)
}

// slogAdapter gives promhttp's error log (a Println) to slog.
type slogAdapter struct{ log *slog.Logger }

func (a slogAdapter) Println(v ...any) {
	if a.log != nil {
		a.log.Warn("metrics: " + fmt.Sprint(v...))
	}
}

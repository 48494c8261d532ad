package backend_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pario/pario/bench/backend"
	"github.com/pario/pario/bench/backend/backendtest"
	"github.com/pario/pario/bench/backend/dummy"
	"github.com/pario/pario/bench/backend/mmap"
	pariobe "github.com/pario/pario/bench/backend/pario"
	"github.com/pario/pario/bench/backend/posix"
	"github.com/pario/pario/cluster"
)

func TestPOSIX(t *testing.T) {
	backendtest.Run(t, &posix.Driver{DropCache: true}, backend.Env{}, filepath.Join(t.TempDir(), "f"))
	backendtest.Run(t, &posix.Driver{ODirect: true}, backend.Env{}, filepath.Join(t.TempDir(), "f"))
}

func TestMMAP(t *testing.T) {
	backendtest.Run(t, &mmap.Driver{Sequential: true}, backend.Env{}, filepath.Join(t.TempDir(), "f"))
}

func TestDUMMY(t *testing.T) {
	backendtest.Run(t, &dummy.Driver{Xfer: 10 * time.Microsecond}, backend.Env{}, "x")
}

func TestPARIO(t *testing.T) {
	c, err := cluster.Start(context.Background(), cluster.Config{Dir: t.TempDir(), DataServers: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	env := backend.Env{ClusterFile: c.ClusterFile}
	backendtest.Run(t, &pariobe.Driver{StripSize: 16 << 10, Servers: 2}, env, "pario:/f")
	backendtest.Run(t, &pariobe.Driver{Layout: "varstrip:strips=0:10000;1:30000;2:5000"}, env, "/g")
}

// DUMMY's delays are never shorter than asked. The upper bound only
// catches a wrong unit (a wait 1000 times too long): on a loaded machine a
// spin-wait can be descheduled for tens of milliseconds.
func TestDummyDelay(t *testing.T) {
	for _, d := range []time.Duration{50 * time.Microsecond, 5 * time.Millisecond} {
		start := time.Now()
		dummy.Wait(d)
		if got := time.Since(start); got < d || got > d+2*time.Second {
			t.Errorf("Wait(%v) took %v", d, got)
		}
	}
}

func TestRegistryAndSizes(t *testing.T) {
	if got := strings.Join(backend.Names(), ","); got != "DUMMY,MMAP,PARIO,POSIX" {
		t.Errorf("names %s", got)
	}
	if _, err := backend.New("posix"); err != nil {
		t.Error(err)
	}
	if _, err := backend.New("HDF9"); err == nil || !strings.Contains(err.Error(), "valid: DUMMY, MMAP, PARIO, POSIX") {
		t.Errorf("unknown API: %v", err)
	}
	// A driver's bool options take no argument; size options refuse zero.
	d := &posix.Driver{}
	if !d.Options()[0].IsBool() {
		t.Error("posix.odirect should be a bool option")
	}
	p := &pariobe.Driver{}
	for _, o := range p.Options() {
		if o.Name == "pario.strip-size" {
			if err := o.Value.Set("0"); err == nil {
				t.Error("strip size 0 accepted")
			}
			if err := o.Value.Set("1m"); err != nil || p.StripSize != 1<<20 {
				t.Errorf("strip size 1m: %v %d", err, p.StripSize)
			}
		}
	}
}

package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/pario/pario/client"
	"github.com/pario/pario/cluster"
	"github.com/pario/pario/dist"
	"github.com/pario/pario/wire"
	"github.com/pario/pario/wire/throttle"
)

// TestEmulatedLinks: a client on node 0 writes to the server of its own
// node at the local rate and to another node's at the remote one, each
// link on its own bucket; servers= puts each file where the test says.
func TestEmulatedLinks(t *testing.T) {
	ctx := context.Background()
	l, err := cluster.Start(ctx, cluster.Config{Dir: t.TempDir(), DataServers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := client.Dial(ctx, client.Options{Meta: l.Meta.Addr, Secret: l.Secret,
		Endpoint: wire.EndpointOptions{Protection: l.Protection},
		Links:    &throttle.Links{Node: 0, Local: 1e12, Remote: 2e6}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	data := make([]byte, 1<<20)
	write := func(name, layout string) time.Duration {
		t.Helper()
		lay, err := dist.ParseLayout(layout)
		if err != nil {
			t.Fatal(err)
		}
		f, err := c.Create(ctx, name, client.CreateOptions{Mode: client.DefaultFileMode, Layout: lay})
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		start := time.Now()
		if _, err := f.WriteAt(data, 0); err != nil {
			t.Fatal(err)
		}
		return time.Since(start)
	}
	remote := write("/remote", "basic:servers=1")
	local := write("/local", "basic:servers=0")
	// 1 MiB at 2 MB/s, less the 0.2 MB burst: >= 0.4 s.
	if remote < 400*time.Millisecond {
		t.Errorf("1 MiB over the 2 MB/s link to another node took %v", remote)
	}
	if local > remote/2 {
		t.Errorf("1 MiB to the own node's server took %v, to another's %v", local, remote)
	}
}

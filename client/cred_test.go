package client_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"testing"

	"github.com/pario/pario/client"
	"github.com/pario/pario/cluster"
	"github.com/pario/pario/internal/testbin"
	"github.com/pario/pario/server/meta"
)

// A client acts for Options.Cred (else its process), and a request for
// the credentials its context carries; with root-squash on, root is nobody.
func TestClientCredentials(t *testing.T) {
	if c := client.ProcessCred(); c.Uid != uint32(os.Geteuid()) || c.Gid != uint32(os.Getegid()) {
		t.Fatalf("ProcessCred = %+v, want uid %d gid %d", c, os.Geteuid(), os.Getegid())
	}
	p := spawn(t)
	self := client.ProcessCred()
	admin := dial(t, p)
	ctx := context.Background()
	if err := admin.Mkdir(ctx, "/scratch", 0o1777); err != nil {
		t.Fatal(err)
	}
	alice := meta.Cred{Uid: 1001, Gid: 1001}
	ac := dial(t, p, func(o *client.Options) { o.Cred = &alice })
	if err := ac.Mkdir(ctx, "/top", 0o755); !errors.Is(err, fs.ErrPermission) {
		t.Errorf("alice mkdir in the root (%d's, 0755): %v, want EACCES", self.Uid, err)
	}
	f, err := ac.Create(ctx, "/scratch/a", client.CreateOptions{Mode: 0o600})
	if err != nil {
		t.Fatal(err)
	}
	if a := f.Attr(); a.Uid != 1001 || a.Gid != 1001 {
		t.Errorf("alice's file belongs to %d:%d", a.Uid, a.Gid)
	}
	bob := meta.WithCred(ctx, meta.Cred{Uid: 1002, Gid: 1002})
	if err := ac.Remove(bob, "/scratch/a"); !errors.Is(err, fs.ErrPermission) {
		t.Errorf("bob (by context) removes alice's file from a sticky directory: %v, want EPERM", err)
	}
	if err := ac.Chown(ctx, "/scratch/a", new(uint32(1002)), nil); !errors.Is(err, fs.ErrPermission) {
		t.Errorf("alice gives her file away: %v, want EPERM", err)
	}
	if err := admin.Chown(ctx, "/scratch/a", new(uint32(1002)), new(uint32(1002))); err != nil && self.Uid == 0 {
		t.Errorf("root gives alice's file to bob: %v", err)
	}

	// Root squash: the same root is nobody.
	var logs testbin.LockedBuffer
	sq, err := cluster.SpawnProcesses(ctx, cluster.ProcessConfig{Binary: parioBin, Dir: t.TempDir(), DataServers: 1, Output: &logs, RootSquash: true})
	if err != nil {
		t.Fatalf("spawn: %v\n%s", err, logs.String())
	}
	t.Cleanup(func() { sq.Close() })
	rc := dial(t, sq, func(o *client.Options) { o.Cred = &meta.Cred{} })
	if err := rc.Mkdir(ctx, "/x", 0o755); !errors.Is(err, fs.ErrPermission) {
		t.Errorf("squashed root mkdir in the root: %v, want EACCES", err)
	}
}

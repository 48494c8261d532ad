package client_test

import (
	"context"
	"errors"
	"syscall"
	"testing"

	"github.com/pario/pario/client"
)

// SumSpace counts each file system once, however many servers share it,
// and leaves out servers that did not answer.
func TestSumSpace(t *testing.T) {
	disk := func(fsid, used uint64) client.ServerStat {
		return client.ServerStat{Total: 100, Free: 60, Avail: 50, Used: used, FSID: fsid}
	}
	down := client.ServerStat{Total: 999, Err: errors.New("down")}
	for _, tc := range []struct {
		name  string
		stats []client.ServerStat
		want  client.Space
	}{
		{"four servers on one disk", []client.ServerStat{disk(7, 1), disk(7, 2), disk(7, 3), disk(7, 4)},
			client.Space{Total: 100, Free: 60, Avail: 50, Used: 10, FileSystems: 1, Answered: 4}},
		{"two disks", []client.ServerStat{disk(7, 1), disk(8, 2), disk(7, 3)},
			client.Space{Total: 200, Free: 120, Avail: 100, Used: 6, FileSystems: 2, Answered: 3}},
		{"unknown ids count apart", []client.ServerStat{disk(0, 1), disk(0, 1)},
			client.Space{Total: 200, Free: 120, Avail: 100, Used: 2, FileSystems: 2, Answered: 2}},
		{"a server down", []client.ServerStat{down, disk(7, 1)},
			client.Space{Total: 100, Free: 60, Avail: 50, Used: 1, FileSystems: 1, Answered: 1}},
		{"none", nil, client.Space{}},
	} {
		if got := client.SumSpace(tc.stats); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// The servers of one cluster on one disk report one file system; a
// sparse file's Allocated is what its datafiles hold, not its size.
func TestSpaceOfSharedDiskAndSparseFile(t *testing.T) {
	p := spawn(t)
	c := dial(t, p)
	ctx := context.Background()
	stats := c.Statfs(ctx)
	var fs syscall.Statfs_t
	if err := syscall.Statfs(t.TempDir(), &fs); err != nil {
		t.Fatal(err)
	}
	sp := client.SumSpace(stats)
	if want := fs.Blocks * uint64(fs.Bsize); sp.FileSystems != 1 || sp.Total != want {
		t.Errorf("4 servers on one disk: %d file systems, %d bytes; want 1, %d", sp.FileSystems, sp.Total, want)
	}

	f, err := c.Create(ctx, "/sparse", client.CreateOptions{Mode: client.DefaultFileMode, Layout: mustLayout(t, "simple_stripe:strip_size=1048576")})
	if err != nil {
		t.Fatal(err)
	}
	const size = 6 << 30
	if _, err := f.WriteAt(make([]byte, 1<<20), size-1<<20); err != nil {
		t.Fatal(err)
	}
	fi, err := c.Stat(ctx, "/sparse")
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size != size || fi.Allocated < 1<<20 || fi.Allocated > 4<<20 {
		t.Errorf("6 GiB file with 1 MiB written: size %d, allocated %d; want about 1 MiB allocated", fi.Size, fi.Allocated)
	}
	if u, err := f.Usage(ctx); err != nil || u.Allocated != fi.Allocated {
		t.Errorf("File.Usage = %+v, %v; Stat said %d allocated", u, err, fi.Allocated)
	}
}

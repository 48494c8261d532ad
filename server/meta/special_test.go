package meta

import (
	"syscall"
	"testing"

	"github.com/pario/pario/dist"
)

// FIFOs, sockets and device nodes are metadata only: kind, mode and rdev
// kept, no layout, no datafiles; they are listed, renamed and removed as
// files are.
func TestMknod(t *testing.T) {
	fd := newFakeData(2)
	s := openT(t, Options{Servers: 2, Datafiles: fd})
	okAttr(t)(s.Mkdir(ctx, "/d", 0o755))
	for _, tc := range []struct {
		path string
		kind Kind
		rdev uint64
		want uint64
	}{
		{"/d/fifo", KindFIFO, 99, 0}, // rdev only for devices
		{"/d/sock", KindSocket, 0, 0},
		{"/d/null", KindCharDev, 0x0103, 0x0103},
		{"/d/sda", KindBlockDev, 0x0800, 0x0800},
	} {
		a := okAttr(t)(s.Mknod(ctx, tc.path, tc.kind, 0o640, tc.rdev))
		if a.Kind != tc.kind || a.Mode != 0o640 || a.Rdev != tc.want || !a.Layout.IsZero() || len(a.Servers) != 0 || a.Atime == 0 {
			t.Errorf("Mknod(%s) = %+v", tc.path, a)
		}
		if got := okAttr(t)(s.Lookup(ctx, tc.path)); got.Kind != tc.kind || got.Rdev != tc.want {
			t.Errorf("Lookup(%s) = %+v", tc.path, got)
		}
		if len(fd.where(a.ID)) != 0 {
			t.Errorf("%s has datafiles on %v", tc.path, fd.where(a.ID))
		}
	}
	if fd.creates != 0 {
		t.Errorf("%d datafiles created for special files", fd.creates)
	}
	if got := names(okDir(t)(s.Readdir(ctx, "/d"))); len(got) != 4 {
		t.Errorf("Readdir = %v", got)
	}
	for what, err := range map[string]error{
		"mknod of a file kind": second(s.Mknod(ctx, "/x", KindFile, 0o644, 0)),
		"mknod over a name":    second(s.Mknod(ctx, "/d/fifo", KindFIFO, 0o644, 0)),
		"path through a fifo":  second(s.Create(ctx, "/d/fifo/x", 0o644, dist.Layout{})),
		"layout on a fifo":     second(s.SetLayout(ctx, "/d/fifo", dist.Layout{Dist: "simple_stripe"}, true)),
	} {
		want := map[string]syscall.Errno{"mknod of a file kind": syscall.EINVAL, "mknod over a name": syscall.EEXIST,
			"path through a fifo": syscall.ENOTDIR, "layout on a fifo": syscall.EINVAL}[what]
		if errnoOf(t, err) != want {
			t.Errorf("%s: %v, want %v", what, err, want)
		}
	}
	okRename(t)(s.Rename(ctx, "/d/sock", "/sock"))
	if a := okAttr(t)(s.Remove(ctx, "/sock")); a.Kind != KindSocket {
		t.Errorf("Remove returned %+v", a)
	}
	files, _, err := s.Stats(ctx)
	if err != nil || files != 3 {
		t.Errorf("Stats: %d files, %v; want the 3 special files left", files, err)
	}
}

func second[T any](_ T, err error) error { return err }

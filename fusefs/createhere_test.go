package fusefs_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pario/pario/client"
	"github.com/pario/pario/cluster"
	"github.com/pario/pario/dist"
	"github.com/pario/pario/fusefs"
)

// Creates answered by the mount (createhere.go): in a directory it holds,
// a create costs no request to the metadata server but the occasional
// reservation of IDs; the files, their data, mode and owner are what
// another client sees once it reaches the directory; and the IDs the
// mount reserved and did not use go back, so fsck finds nothing.
func TestCreatesAnsweredHere(t *testing.T) {
	p, m, calls := countingWithDir(t)
	creates, reserves := calls.get("meta create"), calls.get("meta reserve")
	const n = 50
	for i := range n {
		f, err := os.OpenFile(m.path("d", fmt.Sprint("f", i)), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o640)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(bytes.Repeat([]byte{byte(i)}, 1000*i)); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if got := calls.get("meta create") - creates; got != 0 {
		t.Errorf("%d creates in a held directory went to the metadata server, want 0", got)
	}
	// 16 IDs with the mkdir (one request: made, held, reserved), then 16,
	// 32 (doubling): 2 reservations, more only where a pool was still
	// being filled (a reservation takes what is ready).
	if got, mkdirs, delegates := calls.get("meta reserve")-reserves, calls.get("meta mkdirheld"), calls.get("meta delegate"); got < 2 || got > 10 || mkdirs != 1 || delegates != 0 {
		t.Errorf("%d reservations for %d creates, %d mkdirheld and %d delegate requests for the directory; want 2 (a few more while pools fill), 1, 0", got, n, mkdirs, delegates)
	}
	if st := m.Stats(); st.CreatesHere != n {
		t.Errorf("stats count %d creates answered here, want %d", st.CreatesHere, n)
	}
	// What the mount itself answers before anything is sent.
	for i := range n {
		fi, err := os.Stat(m.path("d", fmt.Sprint("f", i)))
		if err != nil || fi.Size() != int64(1000*i) || fi.Mode().Perm() != 0o640 {
			t.Fatalf("stat f%d through the mount: %v, %v", i, fi, err)
		}
	}
	// Another client: its lookup recalls the directory, so the queue is
	// applied before it is answered.
	c := dial(t, p)
	ents, err := c.Readdir(context.Background(), "/d")
	if err != nil || len(ents) != n {
		t.Fatalf("another client lists %d entries (%v), want %d", len(ents), err, n)
	}
	uid := uint32(os.Getuid())
	for i := range n {
		path := fmt.Sprint("/d/f", i)
		f, err := c.Open(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		a := f.Attr()
		got := make([]byte, 1000*i+1)
		k, _ := f.ReadAt(got, 0)
		if k != 1000*i || !bytes.Equal(got[:k], bytes.Repeat([]byte{byte(i)}, 1000*i)) || a.Mode != 0o640 || a.Uid != uid {
			t.Fatalf("%s seen by another client: %d bytes, mode %o, uid %d; want %d bytes of %d, 640, %d", path, k, a.Mode, a.Uid, 1000*i, i, uid)
		}
	}
	// The spare IDs went back with the directory: nothing for fsck.
	eventually(t, "the spare IDs given back", func() error {
		if st := m.Stats(); st.PendingHere != 0 {
			return fmt.Errorf("%d pending", st.PendingHere)
		}
		return nil
	})
	res, err := c.Fsck(context.Background(), client.FsckOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if f := res.Remaining(); len(f) != 0 {
		t.Fatalf("fsck after creates answered here: %+v", f)
	}
}

// Creates answered here while the metadata server is stopped, then
// killed (-9) and restarted, are applied once a new one runs, with the
// data written to them: their reservations are durable.
func TestCreatesHereSurviveAMetadataServerRestart(t *testing.T) {
	t.Setenv("PARIO_LEASE", "3s") // the servers' environment: a short grace
	p := spawn(t)
	a := mount(t, p, fusefs.Options{OpTimeout: 20 * time.Second})
	waitLease(t, a)
	waitPools(t, p)
	if err := os.Mkdir(a.path("d"), 0o755); err != nil { // reserves 16 IDs
		t.Fatal(err)
	}
	writeFile(t, a.path("d", "first"), []byte("x"))
	stopMeta(t, p)
	const n = 10
	for i := range n {
		writeFile(t, a.path("d", fmt.Sprint("f", i)), []byte(fmt.Sprint("data ", i)))
	}
	if st := a.Stats(); st.CreatesHere != n+1 || st.PendingHere == 0 {
		t.Fatalf("with the metadata server stopped: %d creates answered here, %d pending; want %d and some", st.CreatesHere, st.PendingHere, n+1)
	}
	restartMeta(t, p, a)
	c := dial(t, p)
	for i := range n {
		f, err := c.Open(context.Background(), fmt.Sprint("/d/f", i))
		if err != nil {
			t.Fatalf("after the restart: %v", err)
		}
		got := make([]byte, 64)
		k, _ := f.ReadAt(got, 0)
		if want := fmt.Sprint("data ", i); string(got[:k]) != want {
			t.Fatalf("/d/f%d after the restart reads %q, want %q", i, got[:k], want)
		}
	}
	res, err := c.Fsck(context.Background(), client.FsckOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if f := res.Remaining(); len(f) != 0 {
		t.Fatalf("fsck after the restart: %+v", f)
	}
}

// A close of a file made here in a held directory does not wait for its
// data to reach the I/O servers (closeWithoutWaiting): no other client
// can reach the file before it recalls the directory, and the recall
// waits for that data; a rename out of the directory waits for it too.
// Here every I/O server is stopped while the files are written and
// closed, and only let go well after another mount has asked for them.
func TestCloseInAHeldDirectoryDoesNotWaitForTheData(t *testing.T) {
	p, a, b := twoMounts(t)
	waitPools(t, p) // the creates below need no I/O server
	if err := os.Mkdir(a.path("d"), 0o755); err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("pario"), 20000)
	resume := stopDataServers(t, p)
	closed := make(chan error, 1)
	go func() {
		var err error
		for _, name := range []string{"f", "g"} {
			if err == nil {
				err = os.WriteFile(a.path("d", name), data, 0o644)
			}
		}
		closed <- err
	}()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a close in a held directory waited for the stopped I/O servers")
	}
	// g moves out of the held directory: the rename waits for its data.
	renamed := make(chan error, 1)
	go func() { renamed <- os.Rename(a.path("d", "g"), a.path("g")) }()
	select {
	case err := <-renamed:
		t.Fatalf("the rename out of the held directory did not wait for the file's data: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	// Another mount reads f while the servers are still stopped: its
	// lookup recalls the directory, which waits for f's data too.
	read := make(chan []byte, 1)
	go func() {
		got, _ := os.ReadFile(b.path("d", "f"))
		read <- got
	}()
	time.AfterFunc(300*time.Millisecond, resume)
	if err := <-renamed; err != nil {
		t.Fatal(err)
	}
	if got := <-read; !bytes.Equal(got, data) {
		t.Fatalf("another mount read %d bytes of d/f, want the %d written", len(got), len(data))
	}
	if got := readFile(t, b.path("g")); !bytes.Equal(got, data) {
		t.Fatalf("another mount reads %d bytes of g, want the %d written", len(got), len(data))
	}
}

// A layout set on a directory above one a mount holds reaches the files
// the mount creates there from then on: the setting recalls every held
// directory first (the mount's spare IDs were for the old layout).
func TestLayoutSetAboveAHeldDirectory(t *testing.T) {
	p := spawn(t)
	a := mount(t, p, fusefs.Options{})
	waitLease(t, a)
	if err := os.MkdirAll(a.path("p", "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, a.path("p", "d", "before"), []byte("x"))
	c := dial(t, p)
	l, err := dist.ParseLayout("simple_stripe:strip_size=1m,num_datafiles=2")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetLayout(context.Background(), "/p", l); err != nil {
		t.Fatal(err)
	}
	writeFile(t, a.path("p", "d", "after"), []byte("x"))
	for name, want := range map[string]int{"before": 4, "after": 2} {
		got, err := c.Lookup(context.Background(), "/p/d/"+name)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Servers) != want {
			t.Errorf("/p/d/%s has %d datafiles (%s), want %d", name, len(got.Servers), got.Layout, want)
		}
	}
}

// An unlink right after a close in a held directory, while the release
// still waits for the file's data (closeWithoutWaiting), is answered by
// the mount, once that data is on the servers: the file is open by no
// descriptor, so nothing needs its data kept (rm -rf right after tar x).
func TestUnlinkWhileTheReleaseWaitsForTheData(t *testing.T) {
	p, m, calls := countingWithDir(t)
	// The write is held before it is sent, until resume. (Stopping the
	// I/O servers instead held it only as long as the mount's dial
	// timeouts, 6 s, and CI saw the kernel's RELEASE come later.)
	hold := make(chan struct{})
	var once sync.Once
	resume := func() { once.Do(func() { close(hold) }) }
	t.Cleanup(resume)
	t.Cleanup(fusefs.SetWriteBehindSending(func() { <-hold }))
	writeFile(t, m.path("d", "f"), bytes.Repeat([]byte("x"), 10000))
	// The kernel sends RELEASE in the background after close(2): CI's race
	// run once saw none in 10 s. Up to 25 s.
	eventuallyWithin(t, 25*time.Second, "the release under way", func() error {
		if n := m.Releasing(); n != 1 {
			return fmt.Errorf("%d releases under way (stats %+v)", n, m.Stats())
		}
		return nil
	})
	removes, unlinks := calls.get("meta remove"), m.Stats().UnlinksHere
	time.AfterFunc(200*time.Millisecond, resume)
	if err := os.Remove(m.path("d", "f")); err != nil {
		t.Fatal(err)
	}
	if got := m.Stats().UnlinksHere - unlinks; got != 1 || calls.get("meta remove") != removes {
		t.Fatalf("the unlink: %d answered here, %d sent to the metadata server; want 1, 0", got, calls.get("meta remove")-removes)
	}
	if _, err := dial(t, p).Lookup(context.Background(), "/d/f"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("another client looks up the unlinked file: %v, want ENOENT", err)
	}
}

// The recall of a held directory waits for the data of the files made
// there whose closes did not wait for it: here their writes are held
// before they are even sent, past the close, and another mount's read of
// the file (which recalls the directory) must still see all of it.
func TestRecallWaitsForTheDataOfFilesMadeThere(t *testing.T) {
	_, a, b := twoMounts(t)
	if err := os.Mkdir(a.path("d"), 0o755); err != nil {
		t.Fatal(err)
	}
	hold := make(chan struct{})
	var once sync.Once
	let := func() { once.Do(func() { close(hold) }) }
	t.Cleanup(let)
	t.Cleanup(fusefs.SetWriteBehindSending(func() { <-hold }))
	data := bytes.Repeat([]byte("recall"), 10000)
	writeFile(t, a.path("d", "f"), data) // returns with the writes unsent
	time.AfterFunc(300*time.Millisecond, let)
	if got := readFile(t, b.path("d", "f")); !bytes.Equal(got, data) {
		t.Fatalf("another mount read %d bytes, want the %d written", len(got), len(data))
	}
}

// stopDataServers stops the four I/O servers (SIGSTOP) until resume is
// called or the test ends.
func stopDataServers(t *testing.T, p *cluster.Processes) (resume func()) {
	t.Helper()
	var pids []int
	for i := range 4 {
		pid := p.PID(fmt.Sprint("data", i))
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		pids = append(pids, pid)
	}
	resume = func() {
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	}
	t.Cleanup(resume)
	return resume
}

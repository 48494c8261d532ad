package meta

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"
)

// asMount is ctx for the kernel's own change of the mount holding watcher
// w, as user uid.
func asMount(ctx context.Context, w uint64, uid uint32) context.Context {
	return WithCred(ctx, Cred{Uid: uid, Gid: uid, Watcher: w, Mount: w})
}

// holder opens a watched store, registers a mount and makes /d as it,
// delegated to it.
func holder(t *testing.T) (s *Store, w WatchResponse, d Attr) {
	t.Helper()
	s = openWatched(t, filepath.Join(t.TempDir(), "meta.db"))
	w = poll(t, s, WatchRequest{})
	ctx := asMount(context.Background(), w.Watcher, 0)
	d = okAttr(t)(s.Mkdir(ctx, "/d", 0o755))
	got, given, err := s.Delegate(ctx, "/d")
	if err != nil || !given || got.ID != d.ID {
		t.Fatalf("Delegate(/d) = %d, %v, %v; want %d given", got.ID, given, err, d.ID)
	}
	return s, w, d
}

func TestDelegateOnlyEmptyDirectoriesToALease(t *testing.T) {
	ctx := context.Background()
	s, w, _ := holder(t)
	as := asMount(ctx, w.Watcher, 0)
	okAttr(t)(s.Mkdir(as, "/full", 0o755))
	okAttr(t)(s.Mknod(as, "/full/f", KindFIFO, 0o644, 0))
	okAttr(t)(s.Mkdir(as, "/sticky", 0o1777))
	for _, p := range []string{"/", "/full", "/sticky"} {
		if _, given, err := s.Delegate(as, p); err != nil || given {
			t.Errorf("Delegate(%s) = given %v, %v; want refused without error", p, given, err)
		}
	}
	if _, given, err := s.Delegate(as, "/full/f"); !errors.Is(err, syscall.ENOTDIR) || given {
		t.Errorf("Delegate of a FIFO = %v, %v; want ENOTDIR", given, err)
	}
	if _, _, err := s.Delegate(ctx, "/d"); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("Delegate without a mount = %v, want EINVAL", err)
	}
	// A mount without a lease (an ID the server never gave) is refused.
	okAttr(t)(s.Mkdir(as, "/e", 0o755))
	if _, given, _ := s.Delegate(asMount(ctx, w.Watcher+1000, 0), "/e"); given {
		t.Error("Delegate to a mount without a lease was given")
	}
	// Another mount's request recalls it first: from this silent holder,
	// once its lease has lapsed.
	other := poll(t, s, WatchRequest{})
	keepLease(t, s, other)
	start := time.Now()
	if _, given, err := s.Delegate(asMount(ctx, other.Watcher, 0), "/d"); err != nil || !given {
		t.Errorf("Delegate of /d to a second mount = %v, %v; want given after the recall", given, err)
	}
	if took := time.Since(start); took < watchLease/2 {
		t.Errorf("second mount's Delegate took %v: it did not wait for the first mount's lease", took)
	}
	if n := s.Delegations(); n != 1 {
		t.Fatalf("Delegations() = %d, want 1", n)
	}
}

func TestRecallWaitsForTheHolder(t *testing.T) {
	ctx := context.Background()
	s, w, d := holder(t)
	as := asMount(ctx, w.Watcher, 0)
	f := okAttr(t)(s.Mknod(as, "/d/f", KindFIFO, 0o644, 0))
	// The holder's own requests reach into it without a recall.
	if _, err := s.Lookup(WithCred(ctx, Cred{Mount: w.Watcher}), "/d/f"); err != nil {
		t.Fatalf("holder's lookup: %v", err)
	}
	if n := s.Delegations(); n != 1 {
		t.Fatalf("Delegations() = %d after the holder's lookup, want 1", n)
	}

	// Another client's lookup waits for the holder to give /d up.
	var lookErr error
	done := async(func() { _, lookErr = s.Lookup(WithCred(ctx, Cred{Uid: 5, Gid: 5}), "/d/f") })
	resp := poll(t, s, WatchRequest{Watcher: w.Watcher, Acked: w.Seq})
	if !slices.Contains(resp.Changes, Change{ID: d.ID, Parent: d.ID}) {
		t.Fatalf("holder's poll got %+v, want the recall of %d", resp.Changes, d.ID)
	}
	select {
	case <-done:
		t.Fatal("the lookup was answered before the holder gave the directory up")
	case <-time.After(watchLease / 4):
	}
	// The holder sends its unlink, then acknowledges.
	errs, err := s.ApplyBatch(as, []BatchOp{{Dir: d.ID, Name: "f", Self: f.ID}})
	if err != nil || len(errs) != 1 || errs[0] != nil {
		t.Fatalf("ApplyBatch = %v, %v", errs, err)
	}
	ack := async(func() { poll(t, s, WatchRequest{Watcher: w.Watcher, Acked: resp.Seq}) })
	select {
	case <-done:
	case <-time.After(watchLease / 2):
		t.Fatal("the lookup still waits after the acknowledgement")
	}
	if !errors.Is(lookErr, syscall.ENOENT) {
		t.Fatalf("lookup after the recall = %v, want ENOENT: it must see the holder's unlink", lookErr)
	}
	if n := s.Delegations(); n != 0 {
		t.Fatalf("Delegations() = %d after the recall, want 0", n)
	}
	<-ack
	if st := s.LeaseStats(); st.Recalls != 1 || st.RecallsLapsed != 0 || st.RecallWait < watchLease/4 || st.Leases != 1 {
		t.Fatalf("LeaseStats() = %+v, want one recall, answered, waited for at least %v, and one lease", st, watchLease/4)
	}
}

// TestListingThroughARecall: a listing that reaches a delegated
// directory among its entries recalls it and reads again, and lists each
// name once. The entries read before the recall were listed twice (a
// differential test through two mounts found it: fusefs
// TestAgainstALocalDisk).
func TestListingThroughARecall(t *testing.T) {
	ctx := context.Background()
	s, w, _ := holder(t)
	as := asMount(ctx, w.Watcher, 0)
	okAttr(t)(s.Mknod(as, "/a", KindFIFO, 0o644, 0))
	okAttr(t)(s.Mknod(as, "/z", KindFIFO, 0o644, 0))
	page, next, err := s.ReaddirPage(WithCred(ctx, Cred{Uid: 5, Gid: 5}), "/", "", 0)
	if err != nil || next != "" {
		t.Fatalf("ReaddirPage(/) = %v, %q, %v", page, next, err)
	}
	var names []string
	for _, e := range page {
		names = append(names, e.Name)
	}
	if !slices.Equal(names, []string{"a", "d", "z"}) {
		t.Fatalf("another client lists / as %v, want [a d z]", names)
	}
	if st := s.LeaseStats(); st.Recalls != 1 {
		t.Fatalf("LeaseStats() = %+v, want the listing to have recalled /d", st)
	}
}

// TestRenameThroughARecall: another client's rename from one delegated
// directory into another recalls both and renames. Rename ran its
// transaction without withRecalls, so the recall's error reached the
// caller (EIO through a mount: "directory N is delegated to mount M";
// fusefs TestTwoMountsAtOnceAgree found it).
func TestRenameThroughARecall(t *testing.T) {
	ctx := context.Background()
	s, w, _ := holder(t)
	as := asMount(ctx, w.Watcher, 0)
	okAttr(t)(s.Mknod(as, "/d/f", KindFIFO, 0o644, 0))
	okAttr(t)(s.Mkdir(as, "/e", 0o755))
	if _, given, err := s.Delegate(as, "/e"); err != nil || !given {
		t.Fatalf("Delegate(/e) = %v, %v", given, err)
	}
	other := WithCred(ctx, Cred{Uid: 0, Gid: 0})
	if _, err := s.Rename(other, "/d/f", "/e/f"); err != nil {
		t.Fatalf("rename from the delegated /d into the delegated /e by another client: %v", err)
	}
	if _, err := s.Lookup(other, "/e/f"); err != nil {
		t.Fatalf("/e/f after the rename: %v", err)
	}
	if n := s.Delegations(); n != 0 {
		t.Fatalf("Delegations() = %d after the rename, want 0: both were recalled", n)
	}
}

func TestRecallFromASilentHolderEndsWithItsLease(t *testing.T) {
	ctx := context.Background()
	s, _, _ := holder(t)
	start := time.Now()
	if _, err := s.Lookup(WithCred(ctx, Cred{Uid: 5, Gid: 5}), "/d"); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < watchLease/2 || took > 5*watchLease {
		t.Fatalf("lookup took %v with a silent holder, want about its lease %v", took, watchLease)
	}
	if n := s.Delegations(); n != 0 {
		t.Fatalf("Delegations() = %d, want 0", n)
	}
	if st := s.LeaseStats(); st.Recalls != 1 || st.RecallsLapsed != 1 || st.RecallWait < watchLease/2 {
		t.Fatalf("LeaseStats() = %+v, want one recall, ended by the lease after at least %v", st, watchLease/2)
	}
}

func TestApplyRemovesOutcomes(t *testing.T) {
	ctx := context.Background()
	s, w, d := holder(t)
	as := asMount(ctx, w.Watcher, 0)
	a := okAttr(t)(s.Mknod(as, "/d/a", KindFIFO, 0o644, 0))
	b := okAttr(t)(s.Mknod(as, "/d/b", KindFIFO, 0o644, 0))
	sub := okAttr(t)(s.Mkdir(as, "/d/sub", 0o755))
	ops := []BatchOp{
		{Dir: d.ID, Name: "a", Self: a.ID},
		{Dir: d.ID, Name: "a", Self: a.ID},     // already gone
		{Dir: d.ID, Name: "b", Self: b.ID + 1}, // replaced since
		{Dir: d.ID, Name: "sub", Self: sub.ID}, // a directory
		{Dir: d.ID, Name: "x/y", Self: b.ID},   // not a name
		{Dir: b.ID, Name: "z", Self: a.ID},     // not a directory
	}
	want := []syscall.Errno{0, syscall.ENOENT, syscall.ESTALE, syscall.EISDIR, syscall.EINVAL, syscall.ENOTDIR}
	errs, err := s.ApplyBatch(as, ops)
	if err != nil || len(errs) != len(ops) {
		t.Fatalf("ApplyBatch = %v, %v", errs, err)
	}
	for i, e := range errs {
		if (want[i] == 0) != (e == nil) || (e != nil && !errors.Is(e, want[i])) {
			t.Errorf("op %d %+v: %v, want %v", i, ops[i], e, want[i])
		}
	}
	names := okDir(t)(s.Readdir(as, "/d"))
	if len(names) != 2 || names[0].Name != "b" || names[1].Name != "sub" {
		t.Fatalf("/d holds %+v, want b and sub", names)
	}
	// Rmdir: of an empty directory only, and it ends that directory's
	// delegation.
	okAttr(t)(s.Mknod(as, "/d/sub/f", KindFIFO, 0o644, 0))
	if _, given, err := s.Delegate(as, "/d/sub"); err != nil || given {
		t.Fatalf("Delegate of a directory with a name = %v, %v; want refused", given, err)
	}
	e := okAttr(t)(s.Mkdir(as, "/d/e", 0o755))
	if _, given, err := s.Delegate(as, "/d/e"); err != nil || !given {
		t.Fatalf("Delegate(/d/e) = %v, %v", given, err)
	}
	rmdirs := []BatchOp{
		{Dir: d.ID, Name: "sub", Self: sub.ID, Rmdir: true}, // not empty
		{Dir: d.ID, Name: "b", Self: b.ID, Rmdir: true},     // not a directory
		{Dir: d.ID, Name: "e", Self: e.ID, Rmdir: true},
	}
	errs, err = s.ApplyBatch(as, rmdirs)
	if err != nil || !errors.Is(errs[0], syscall.ENOTEMPTY) || !errors.Is(errs[1], syscall.ENOTDIR) || errs[2] != nil {
		t.Fatalf("rmdirs = %v, %v; want ENOTEMPTY, ENOTDIR, nil", errs, err)
	}
	if n := s.Delegations(); n != 1 {
		t.Fatalf("Delegations() = %d after /d/e went, want 1 (/d)", n)
	}
	// A caller without write permission on the directory is refused.
	errs, err = s.ApplyBatch(asMount(ctx, w.Watcher, 7), []BatchOp{{Dir: d.ID, Name: "b", Self: b.ID}})
	if err != nil || !errors.Is(errs[0], syscall.EACCES) {
		t.Fatalf("unlink by another user in a 0755 directory = %v, %v; want EACCES", errs, err)
	}
}

// keepLease renews w's lease (polls cut short) until the test ends.
func keepLease(t *testing.T, s *Store, w WatchResponse) { keepLeaseUntil(t, s, w) }

// keepLeaseUntil is keepLease until stop is called (before s closes) or
// the test ends.
func keepLeaseUntil(t *testing.T, s *Store, w WatchResponse) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := async(func() {
		for ctx.Err() == nil {
			pctx, stop := context.WithTimeout(ctx, watchLease/6)
			resp, err := s.Watch(pctx, WatchRequest{Watcher: w.Watcher, Acked: w.Seq})
			stop()
			if err == nil {
				w.Seq = resp.Seq
			}
		}
	})
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

// A batch's attribute changes apply in order with the unlinks around
// them, with the holder's times (ctime included), and only as SetAttr
// would: by the owner, to the file the name still names.
func TestApplyBatchAttributeChanges(t *testing.T) {
	ctx := context.Background()
	s, w, d := holder(t)
	owner := asMount(ctx, w.Watcher, 0)
	a := okAttr(t)(s.Mknod(owner, "/d/a", KindFIFO, 0o644, 0))
	b := okAttr(t)(s.Mknod(owner, "/d/b", KindFIFO, 0o644, 0))
	mtime, atime, ctime := int64(1_000_000_007), int64(2_000_000_011), int64(3_000_000_013)
	ops := []BatchOp{
		{Dir: d.ID, Name: "a", Self: a.ID, SetAttr: &BatchAttrs{Mode: new(uint32(0o600)), Ctime: ctime}},
		{Dir: d.ID, Name: "a", Self: a.ID, SetAttr: &BatchAttrs{Mtime: &mtime, Atime: &atime, Ctime: ctime + 1}},
		{Dir: d.ID, Name: "b", Self: b.ID + 1, SetAttr: &BatchAttrs{Mode: new(uint32(0o600)), Ctime: ctime}}, // replaced since
		{Dir: d.ID, Name: "b", Self: b.ID},
		{Dir: d.ID, Name: "b", Self: b.ID, SetAttr: &BatchAttrs{Mode: new(uint32(0o600)), Ctime: ctime}}, // removed just before
		{Dir: d.ID, Name: "a", Self: a.ID, SetAttr: &BatchAttrs{Ctime: ctime}},                           // changes nothing
	}
	want := []syscall.Errno{0, 0, syscall.ESTALE, 0, syscall.ENOENT, syscall.EINVAL}
	errs, err := s.ApplyBatch(owner, ops)
	if err != nil || len(errs) != len(ops) {
		t.Fatalf("ApplyBatch = %v, %v", errs, err)
	}
	for i, e := range errs {
		if (want[i] == 0) != (e == nil) || (e != nil && !errors.Is(e, want[i])) {
			t.Errorf("op %d %+v: %v, want %v", i, ops[i], e, want[i])
		}
	}
	got := okAttr(t)(s.Lookup(owner, "/d/a"))
	if got.Mode != 0o600 || got.Mtime != mtime || got.Atime != atime || got.Ctime != ctime+1 {
		t.Fatalf("/d/a after the batch: mode %o mtime %d atime %d ctime %d; want 600 %d %d %d", got.Mode, got.Mtime, got.Atime, got.Ctime, mtime, atime, ctime+1)
	}
	// Another user may neither chmod nor set times of a's.
	for _, ch := range []*BatchAttrs{{Mode: new(uint32(0o666)), Ctime: ctime}, {Mtime: &ctime, Ctime: ctime}} {
		errs, err = s.ApplyBatch(asMount(ctx, w.Watcher, 7), []BatchOp{{Dir: d.ID, Name: "a", Self: a.ID, SetAttr: ch}})
		if err != nil || !errors.Is(errs[0], syscall.EPERM) {
			t.Fatalf("attribute change %+v by another user = %v, %v; want EPERM", ch, errs, err)
		}
	}
	if again := okAttr(t)(s.Lookup(owner, "/d/a")); again.Mode != 0o600 || again.Mtime != mtime {
		t.Fatalf("/d/a after refused changes: mode %o mtime %d", again.Mode, again.Mtime)
	}
}

package client_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.etcd.io/bbolt"

	"github.com/pario/pario/client"
	"github.com/pario/pario/cluster"
	"github.com/pario/pario/fsck"
	"github.com/pario/pario/internal/testbin"
)

// writeFile creates path with layout and n random bytes, synced.
func writeFile(t *testing.T, c *client.Client, path, layout string, n int64) *client.File {
	t.Helper()
	f, err := c.Create(context.Background(), path, client.CreateOptions{Layout: mustLayout(t, layout)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(randomBytes(t, n), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	return f
}

// pario runs the binary against p's cluster and returns its output and
// exit status.
func pario(t *testing.T, p *cluster.Processes, args ...string) (string, int) {
	t.Helper()
	return testbin.Run(t, exec.Command(parioBin, append([]string{"--cluster", p.ClusterFile}, args...)...))
}

// A file whose inode is lost, as a metadata database damaged by hand or
// by a bug would hold (rm no longer leaves orphans: see
// TestRmWithServerDownIsReaped), leaves its datafile behind and its
// entry pointing nowhere; fsck finds exactly that orphan and that entry,
// --repair removes both, and the next fsck is clean. The other files are
// untouched throughout.
func TestFsckFindsAndRepairsWhatRmLeftBehind(t *testing.T) {
	p := spawn(t)
	c := dial(t, p, fastRetries)
	ctx := context.Background()

	if err := c.Mkdir(ctx, "/d", 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, c, "/keep", "simple_stripe:strip_size=4096", 100000)
	writeFile(t, c, "/d/keep2", "basic", 5000)
	const want = 4096*3 + 100
	victim := writeFile(t, c, "/ghost", "basic", want)
	a := victim.Attr()
	victim.Close()
	stopped := int(a.Servers[0]) // the server of its one datafile

	if out, code := pario(t, p, "fsck", "--grace", "0"); code != 0 || !strings.Contains(out, "clean") {
		t.Fatalf("fsck of a healthy store: status %d\n%s", code, out)
	}

	// Lose the inode.
	if err := p.Stop("meta"); err != nil {
		t.Fatal(err)
	}
	db, err := bbolt.Open(filepath.Join(filepath.Dir(p.ClusterFile), "meta", "meta.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		return tx.Bucket([]byte("inodes")).Delete(binary.BigEndian.AppendUint64(nil, uint64(a.ID)))
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := p.StartMeta(ctx); err != nil {
		t.Fatal(err)
	}

	wantFindings := []fsck.Finding{
		{Kind: fsck.OrphanDatafile, Server: stopped, Name: fmt.Sprintf("data%d", stopped), ID: uint64(a.ID), Bytes: want, Path: "/ghost"},
		{Kind: fsck.DanglingEntry, Server: -1, ID: uint64(a.ID), Parent: 1, Entry: "ghost", Path: "/ghost"},
	}
	for _, page := range []int{0, 1, 3} {
		res, err := c.Fsck(ctx, client.FsckOptions{Page: page})
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(res.Findings) != fmt.Sprint(wantFindings) || len(res.Unlisted) != 0 {
			t.Fatalf("page %d: findings\n%v\nwant\n%v", page, res.Findings, wantFindings)
		}
		if res.Files != 2 || res.Dirs != 2 || res.Entries != 4 {
			t.Errorf("page %d: counted %d files, %d dirs, %d entries; want 2, 2, 4", page, res.Files, res.Dirs, res.Entries)
		}
	}

	// The default grace period leaves a datafile this young alone (and,
	// since missing datafiles are checked, every file this young too).
	out, code := pario(t, p, "fsck")
	if code != 1 || strings.Contains(out, "orphan datafile:") || !regexp.MustCompile(`not judged: [1-9]`).MatchString(out) {
		t.Errorf("fsck with the default grace: status %d, want 1 (the dangling entry), and the young orphan not judged:\n%s", code, out)
	}

	out, code = pario(t, p, "fsck", "--grace", "0")
	t.Logf("pario fsck --grace 0:\n%s", out)
	line := fmt.Sprintf("orphan datafile: server data%d, ID %d, %d bytes", stopped, a.ID, want)
	if code != 1 || !strings.Contains(out, line) || !strings.Contains(out, "dangling entry: /ghost") ||
		!strings.Contains(out, "1 orphan datafiles") || !strings.Contains(out, "dry run") {
		t.Fatalf("dry run: status %d, want 1 and %q:\n%s", code, line, out)
	}
	if _, err := c.Lookup(ctx, "/ghost"); err == nil {
		// (Lookup of a dangling entry fails; the entry is still there.)
		t.Error("dangling entry resolves")
	}

	out, code = pario(t, p, "fsck", "--repair", "--grace", "0")
	if code != 0 || strings.Count(out, "[repaired]") != 2 || !strings.Contains(out, "repaired 2 of 2") {
		t.Fatalf("repair: status %d, want 0 and two repairs:\n%s", code, out)
	}
	out, code = pario(t, p, "fsck", "--grace", "0")
	if code != 0 || !strings.Contains(out, "clean") {
		t.Fatalf("fsck after repair: status %d, want 0:\n%s", code, out)
	}
	for _, path := range []string{"/keep", "/d/keep2"} {
		if _, err := c.Stat(ctx, path); err != nil {
			t.Errorf("%s after repair: %v", path, err)
		}
	}
	if ents, err := c.Readdir(ctx, "/"); err != nil || len(ents) != 2 {
		t.Errorf("/ after repair: %v, %v; want d and keep", ents, err)
	}
}

// With an I/O server down, pario ls -l lists every entry, a file whose
// size cannot be had with "?" (it showed -1 and exited 0), names the file
// and the server and exits 1, as ls(1) does; pario stat names the path
// whose size it could not get.
func TestLsStatServerDown(t *testing.T) {
	p := spawn(t)
	c := dial(t, p, fastRetries)
	writeFile(t, c, "/f", "simple_stripe", 300000) // a strip on every server
	if err := c.Mkdir(context.Background(), "/d", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := p.Stop("data2"); err != nil {
		t.Fatal(err)
	}
	out, code := pario(t, p, "ls", "-l", "/")
	if code != 1 || !regexp.MustCompile(`(?m) \? .* f `).MatchString(out) || !strings.Contains(out, " d ") ||
		!strings.Contains(out, "size of /f: I/O server data2") {
		t.Fatalf("ls -l / with data2 down: status %d, want 1, d listed, f with size ? and named with data2:\n%s", code, out)
	}
	out, code = pario(t, p, "stat", "/f")
	if code != 1 || !strings.Contains(out, "size of /f: I/O server data2") {
		t.Fatalf("stat /f with data2 down: status %d, want 1 naming /f and data2:\n%s", code, out)
	}
}

// A server that cannot be listed is named, and fsck says it could not
// finish (status 2), rather than calling the store clean.
func TestFsckServerDown(t *testing.T) {
	p := spawn(t)
	c := dial(t, p, fastRetries)
	writeFile(t, c, "/f", "simple_stripe", 300000)
	if err := p.Stop("data2"); err != nil {
		t.Fatal(err)
	}
	out, code := pario(t, p, "fsck", "--grace", "0")
	if code != 2 || !strings.Contains(out, "not checked: I/O server data2") {
		t.Fatalf("fsck with data2 down: status %d, want 2 naming data2:\n%s", code, out)
	}
	// Its last word is not "clean": a quarter of the datafiles went unseen.
	if slices.Contains(strings.Split(out, "\n"), "clean") || !strings.Contains(out, "incomplete: 1 of 4 I/O servers not checked") {
		t.Fatalf("fsck with data2 down calls the store clean, or does not say it is incomplete:\n%s", out)
	}
}

// An fsck interrupted (Ctrl-C: its context canceled) says how far it got
// rather than only that it was canceled: on a store of millions of files
// that is minutes of work to resume from.
func TestFsckInterruptedSaysHowFarItGot(t *testing.T) {
	p := spawn(t)
	c := dial(t, p)
	for i := range 5 {
		writeFile(t, c, fmt.Sprintf("/f%d", i), "basic", 10)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var seen []client.FsckProgress
	res, err := c.Fsck(ctx, client.FsckOptions{Page: 1, Progress: func(pr client.FsckProgress) {
		seen = append(seen, pr)
		if pr.Inodes == 3 {
			cancel() // Ctrl-C after the third page of inodes
		}
	}})
	if err == nil {
		t.Fatalf("fsck canceled during its scan: no error (progress %v)", seen)
	}
	pr := res.Progress
	if pr.Phase != "scan" || pr.Inodes != 3 || pr.Servers != 4 || pr.Listed != 0 {
		t.Fatalf("progress of an fsck interrupted after 3 inodes: %+v", pr)
	}
	if s := pr.String(); !strings.Contains(s, "during the scan: scanned 3 inodes and 0 entries, listed 0 datafiles on 0 of 4 I/O servers") {
		t.Errorf("progress says %q", s)
	}

	// Uninterrupted, it reports every phase, and the last is done.
	seen = nil
	res, err = c.Fsck(context.Background(), client.FsckOptions{Progress: func(pr client.FsckProgress) { seen = append(seen, pr) }})
	if err != nil {
		t.Fatal(err)
	}
	if res.Progress.Phase != "done" || res.Progress.Inodes != 6 || res.Progress.Listed != 4 || len(seen) == 0 {
		t.Errorf("progress of a whole fsck: %+v (reported %d times)", res.Progress, len(seen))
	}
}

// A repair interrupted stops: the findings it did not get to are left as
// findings, not each reported as a repair that failed with "context
// canceled", and the result says how many it tried.
func TestFsckRepairInterrupted(t *testing.T) {
	p := spawn(t)
	c := dial(t, p, fastRetries)
	ctx := context.Background()
	var ids []uint64
	for i := range 3 {
		f := writeFile(t, c, fmt.Sprintf("/ghost%d", i), "basic", 100)
		ids = append(ids, uint64(f.Attr().ID))
		f.Close()
	}
	// Lose the inodes: three orphan datafiles, three dangling entries.
	if err := p.Stop("meta"); err != nil {
		t.Fatal(err)
	}
	db, err := bbolt.Open(filepath.Join(filepath.Dir(p.ClusterFile), "meta", "meta.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		for _, id := range ids {
			if err := tx.Bucket([]byte("inodes")).Delete(binary.BigEndian.AppendUint64(nil, id)); err != nil {
				return err
			}
		}
		return nil
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := p.StartMeta(ctx); err != nil {
		t.Fatal(err)
	}

	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	res, err := c.Fsck(cctx, client.FsckOptions{Repair: true, Progress: func(pr client.FsckProgress) {
		if pr.Phase == "repair" && pr.Tried == 2 {
			cancel()
		}
	}})
	if err == nil {
		t.Fatal("repair interrupted: no error")
	}
	if len(res.RepairErrors) != 0 || len(res.Repaired) != 2 || len(res.Findings) != 6 || res.Progress.Tried != 2 || res.Progress.ToRepair != 6 {
		t.Fatalf("repair interrupted after 2: repaired %v, errors %v, %d findings, progress %+v; want 2 repaired of 6, no errors",
			res.Repaired, res.RepairErrors, len(res.Findings), res.Progress)
	}
	// What is left, the next repair does.
	res, err = c.Fsck(ctx, client.FsckOptions{Repair: true})
	if err != nil || len(res.Repaired) != 4 || len(res.RepairErrors) != 0 {
		t.Fatalf("repair after the interrupted one: %v, repaired %v, errors %v; want the 4 left", err, res.Repaired, res.RepairErrors)
	}
}

// A link made between the scan's inodes and its entries is no wrong link
// count: the inode was read with one name, the entries with two. The
// grace period does not cover it (the inode as scanned has its old ctime,
// however old the file), so fsck reported a healthy file, and exited 1,
// whenever a link or unlink of an old file raced its scan; the re-check
// now sees the file changed since.
func TestFsckLinkDuringScanIsNoWrongLinkCount(t *testing.T) {
	p := spawn(t)
	c := dial(t, p)
	ctx := context.Background()
	f := writeFile(t, c, "/f", "basic", 10)
	id := f.Attr().ID
	f.Close()
	inodes := 2 // / and /f
	linked := false
	res, err := c.Fsck(ctx, client.FsckOptions{Page: 1, Progress: func(pr client.FsckProgress) {
		if pr.Phase == "scan" && pr.Inodes == inodes && pr.Entries == 0 && !linked {
			linked = true
			if _, err := c.Link(ctx, id, "/g"); err != nil {
				t.Error(err)
			}
		}
	}})
	if err != nil || !linked {
		t.Fatalf("fsck: %v (linked during the scan: %v)", err, linked)
	}
	if len(res.Findings) != 0 {
		t.Errorf("a link during the scan: findings %v, want none", res.Findings)
	}
}

// A file or directory renamed from a directory the scan has yet to read
// into one it has read is in no entry the scan saw: it, and everything
// below it, looked unreachable, a finding for a healthy store (exit 1)
// whenever a rename across directories raced the scan.
func TestFsckRenameDuringScanIsNotUnreachable(t *testing.T) {
	for _, moved := range []string{"file", "dir"} {
		t.Run(moved, func(t *testing.T) {
			p := spawn(t)
			c := dial(t, p)
			ctx := context.Background()
			for _, d := range []string{"/a", "/b"} { // /a's entries come first: its ID is lower
				if err := c.Mkdir(ctx, d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			writeFile(t, c, "/a/y", "basic", 10).Close()
			x := "/b/x"
			if moved == "dir" {
				if err := c.Mkdir(ctx, x, 0o755); err != nil {
					t.Fatal(err)
				}
				writeFile(t, c, x+"/z", "basic", 10).Close()
			} else {
				writeFile(t, c, x, "basic", 10).Close()
			}
			renamed := false
			res, err := c.Fsck(ctx, client.FsckOptions{Page: 1, Progress: func(pr client.FsckProgress) {
				// The entries of / (a, b) and of /a (y) are read; /b's are not.
				if pr.Phase == "scan" && pr.Entries == 3 && !renamed {
					renamed = true
					if err := c.Rename(ctx, x, "/a/x"); err != nil {
						t.Error(err)
					}
				}
			}})
			if err != nil || !renamed {
				t.Fatalf("fsck: %v (renamed during the scan: %v)", err, renamed)
			}
			if len(res.Findings) != 0 {
				t.Errorf("a rename during the scan: findings %v, want none", res.Findings)
			}
		})
	}
}

// A file created during the scan, after its inodes and before its
// entries, with an ID below the scan's NextID (a pooled one: pools hold
// IDs taken before), has an entry and no inode in the view: a dry run
// called it a dangling entry on a healthy store (exit 1).
func TestFsckCreateDuringScanIsNotDangling(t *testing.T) {
	p := spawn(t)
	c := dial(t, p)
	ctx := context.Background()
	writeFile(t, c, "/f", "basic", 10).Close()
	created := false
	res, err := c.Fsck(ctx, client.FsckOptions{Page: 1, Progress: func(pr client.FsckProgress) {
		if pr.Phase == "scan" && pr.Inodes == 2 && pr.Entries == 0 && !created {
			created = true
			writeFile(t, c, "/new", "basic", 10).Close()
		}
	}})
	if err != nil || !created {
		t.Fatalf("fsck: %v (created during the scan: %v)", err, created)
	}
	if len(res.Findings) != 0 {
		t.Errorf("a create during the scan: findings %v, want none", res.Findings)
	}
}

// An empty file whose layout changes between the scan and the listing
// loses the datafiles of the servers it no longer uses: the view's inode,
// as scanned, still places them, and a dry run called them missing
// (lost data) on a healthy store.
func TestFsckLayoutChangeDuringCheckIsNotMissing(t *testing.T) {
	p := spawn(t)
	c := dial(t, p)
	ctx := context.Background()
	f, err := c.Create(ctx, "/empty", client.CreateOptions{Layout: mustLayout(t, "simple_stripe")})
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	changed := false
	res, err := c.Fsck(ctx, client.FsckOptions{Rules: fsck.Rules{DatafilesAtCreate: true}, Progress: func(pr client.FsckProgress) {
		if pr.Phase == "list" && !changed {
			changed = true // scanned, not listed yet
			if err := c.SetLayout(ctx, "/empty", mustLayout(t, "basic")); err != nil {
				t.Error(err)
			}
		}
	}})
	if err != nil || !changed {
		t.Fatalf("fsck: %v (layout changed: %v)", err, changed)
	}
	for _, f := range res.Findings {
		if f.Kind == fsck.MissingDatafile {
			t.Errorf("a layout change during fsck: %v", f)
		}
	}
}

package client_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pario/pario/client"
	"github.com/pario/pario/fsck"
	"github.com/pario/pario/internal/testenv"
	"github.com/pario/pario/server/meta"
)

// crashFile is what the workload knows of one file it created.
type crashFile struct {
	f       *client.File
	tag     uint64 // every 8-byte word written to the file is tag
	content []byte
	certain bool // every operation on it succeeded: content is what it holds
	synced  bool // certain, and synced since the last write
}

// tagged returns n bytes (n a multiple of 8) of tag words.
func tagged(tag uint64, n int) []byte {
	b := make([]byte, n)
	for i := 0; i < n; i += 8 {
		binary.LittleEndian.PutUint64(b[i:], tag)
	}
	return b
}

// A mixed workload of create, write, sync, rename and remove runs while
// servers (metadata and I/O) are SIGKILLed at random points and restarted
// (a bounded number of times). Afterwards every file synced since its last
// write reads back exactly; no file holds a word written to another (each
// file's words are its own tag or zero, and no two files share a tag);
// fsck finds nothing but orphan datafiles of files whose rm failed, which
// --repair removes, and then the store is clean.
func TestCrashConsistencyUnderKills(t *testing.T) {
	p := spawn(t)
	c := dial(t, p, fastRetries)
	ctx := context.Background()
	seed := uint64(time.Now().UnixNano())
	if s, err := strconv.ParseUint(os.Getenv("PARIO_CRASH_SEED"), 10, 64); err == nil {
		seed = s // replay a failure
	}
	t.Logf("seed %d (PARIO_CRASH_SEED replays it)", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	kills := 4
	if testenv.RaceEnabled {
		kills = 2
	}

	// The killer: a server at a random point, restarted after a while.
	var killed []string
	killerDone := make(chan error, 1)
	go func() {
		krng := rand.New(rand.NewPCG(seed, 8))
		names := []string{"meta", "data0", "data1", "data2", "data3"}
		for range kills {
			time.Sleep(time.Duration(100+krng.IntN(400)) * time.Millisecond)
			name := names[krng.IntN(len(names))]
			killed = append(killed, name)
			if err := p.Kill(name); err != nil {
				killerDone <- err
				return
			}
			time.Sleep(time.Duration(50+krng.IntN(300)) * time.Millisecond)
			var err error
			if name == "meta" {
				err = p.StartMeta(ctx)
			} else {
				err = p.StartData(ctx, int(name[4]-'0'))
			}
			if err != nil {
				killerDone <- fmt.Errorf("restart %s: %w", name, err)
				return
			}
		}
		killerDone <- nil
	}()

	live := map[string]*crashFile{}
	orphansOK := map[uint64]bool{} // IDs whose rm failed: their datafiles may stay
	// A create that failed may have made its (empty) datafiles before the
	// metadata server died uncommitted: at most one ID's worth each.
	failedCreates := 0
	var names int
	pick := func() (string, *crashFile) {
		for path, cf := range live { // map order is random enough here
			return path, cf
		}
		return "", nil
	}
	var errs []string
	step := func() {
		path, cf := pick()
		switch op := rng.IntN(10); {
		case cf == nil || op < 2 && len(live) < 12:
			names++
			path = fmt.Sprintf("/c%d", names)
			f, err := c.Create(ctx, path, client.CreateOptions{Layout: mustLayout(t, "simple_stripe:strip_size=4096")})
			if err != nil {
				errs = append(errs, err.Error())
				failedCreates++
				return // it may exist or not: the final walk checks it like any other
			}
			live[path] = &crashFile{f: f, tag: rng.Uint64() | 1, certain: true, synced: true}
		case op < 6:
			if !cf.certain {
				return
			}
			off, n := 8*rng.IntN(8192), 8*(1+rng.IntN(5000))
			b := tagged(cf.tag, n)
			if _, err := cf.f.WriteAt(b, int64(off)); err != nil {
				errs = append(errs, err.Error())
				cf.certain, cf.synced = false, false
				return
			}
			if len(cf.content) < off+n {
				cf.content = append(cf.content, make([]byte, off+n-len(cf.content))...)
			}
			copy(cf.content[off:], b)
			cf.synced = false
		case op < 8:
			if err := cf.f.Sync(); err != nil {
				errs = append(errs, err.Error())
				return
			}
			cf.synced = cf.certain
		case op < 9:
			names++
			to := fmt.Sprintf("/r%d", names)
			delete(live, path)
			if err := c.Rename(ctx, path, to); err != nil {
				errs = append(errs, err.Error())
				return // under one name or the other: checked by the walk
			}
			live[to] = cf
		default:
			delete(live, path)
			if err := c.Remove(ctx, path); err != nil {
				errs = append(errs, err.Error())
				orphansOK[uint64(cf.f.Attr().ID)] = true
			}
		}
	}
	deadline := time.Now().Add(time.Minute)
	for done := false; !done; {
		select {
		case err := <-killerDone:
			if err != nil {
				t.Fatal(err)
			}
			done = true
		default:
			if time.Now().After(deadline) {
				t.Fatal("the killer did not finish within a minute")
			}
			step()
		}
	}
	for range 20 { // a few operations with every server up again
		step()
	}
	t.Logf("killed %v; %d files live; %d operations failed, e.g. %q", killed, len(live), len(errs), first(errs))

	// Walk the namespace: every file's words are its own tag or zero.
	owner := map[uint64]string{}
	seen := map[string]bool{}
	var walk func(dir string)
	walk = func(dir string) {
		ents, err := c.Readdir(ctx, dir)
		if err != nil {
			t.Fatalf("readdir %s after the crashes: %v", dir, err)
		}
		for _, e := range ents {
			path := strings.TrimSuffix(dir, "/") + "/" + e.Name
			if e.Attr.Kind == meta.KindDir {
				walk(path)
				continue
			}
			seen[path] = true
			f, err := c.Open(ctx, path)
			if err != nil {
				t.Fatalf("open %s: %v", path, err)
			}
			fi, err := f.Stat()
			if err != nil {
				t.Fatalf("stat %s: %v", path, err)
			}
			got := readAll(t, f, fi.Size)
			var tag uint64
			for i := 0; i+8 <= len(got); i += 8 {
				w := binary.LittleEndian.Uint64(got[i:])
				if w == 0 {
					continue
				}
				if tag == 0 {
					tag = w
				}
				if w != tag {
					t.Fatalf("%s holds words %#x and %#x at %d: bytes of another file", path, tag, w, i)
				}
			}
			if tag != 0 {
				if other, dup := owner[tag]; dup {
					t.Fatalf("%s and %s hold the same file's words %#x", path, other, tag)
				}
				owner[tag] = path
			}
			if cf := live[path]; cf != nil && cf.synced && !bytes.Equal(got, cf.content) {
				t.Errorf("%s was synced with %d bytes; reads back %d bytes, different", path, len(cf.content), len(got))
			}
			if cf := live[path]; cf != nil && tag != 0 && tag != cf.tag {
				t.Errorf("%s holds words %#x, written to another file", path, tag)
			}
		}
	}
	walk("/")
	for path, cf := range live {
		if cf.certain && !seen[path] {
			t.Errorf("%s was created and never removed, but is gone", path)
		}
	}

	// fsck finds only what the test predicts, and repair leaves it clean.
	res, err := c.Fsck(ctx, client.FsckOptions{Rules: fsck.Rules{}})
	if err != nil {
		t.Fatal(err)
	}
	fromCreates := map[uint64]bool{}
	for _, f := range res.Findings {
		switch {
		case f.Kind == fsck.OrphanDatafile && orphansOK[f.ID]:
		case f.Kind == fsck.OrphanDatafile && f.Bytes == 0:
			fromCreates[f.ID] = true
		default:
			t.Errorf("fsck found %v, not predicted (rm failed for IDs %v)", f, orphansOK)
		}
	}
	if len(fromCreates) > failedCreates {
		t.Errorf("fsck found empty orphan datafiles of %d IDs whose rm did not fail (%v), but only %d creates failed", len(fromCreates), fromCreates, failedCreates)
	}
	t.Logf("fsck: %d findings, all orphans of a failed rm or create; %d files, %d datafiles", len(res.Findings), res.Files, res.Datafiles)
	if len(res.Unlisted) != 0 {
		t.Fatalf("fsck could not list %v", res.Unlisted)
	}
	if _, err := c.Fsck(ctx, client.FsckOptions{Repair: true}); err != nil {
		t.Fatal(err)
	}
	if res, err := c.Fsck(ctx, client.FsckOptions{}); err != nil || !res.Clean() {
		t.Fatalf("fsck after repair: %v, %v", res.Findings, err)
	}
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

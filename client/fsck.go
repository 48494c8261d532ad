package client

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/pario/pario/fsck"
	"github.com/pario/pario/server/data"
	"github.com/pario/pario/server/meta"
	"github.com/pario/pario/wire"
)

// FsckOptions tune Fsck.
type FsckOptions struct {
	Rules fsck.Rules
	// Repair removes orphan datafiles and dangling directory entries,
	// each re-checked against the live store just before.
	Repair bool
	// Page bounds the records of one scan or list request (0: the
	// servers' maximum); tests make it small to cross many pages.
	Page int
	// Progress, if set, is called after each page of the metadata scan,
	// each I/O server's listing and each finding re-checked or repaired,
	// from one goroutine at a time.
	Progress func(FsckProgress)
}

// FsckProgress says how far Fsck got: what it has read, re-checked and
// repaired. Fsck returns it with its error, so that an interrupted check
// (Ctrl-C on a large store) can say where it stopped.
type FsckProgress struct {
	Phase            string // "scan", "list", "re-check", "repair", "done"
	Inodes, Entries  int    // scanned so far
	Servers, Listed  int    // I/O servers, and those listed
	Datafiles        int    // listed so far
	Findings, Judged int    // findings to re-check, and those re-checked
	ToRepair, Tried  int    // findings repair acts on, and those tried
}

// String says how far fsck got, on one line.
func (p FsckProgress) String() string {
	s := fmt.Sprintf("during the %s: scanned %d inodes and %d entries, listed %d datafiles on %d of %d I/O servers",
		p.Phase, p.Inodes, p.Entries, p.Datafiles, p.Listed, p.Servers)
	if p.Phase == "re-check" || p.Phase == "repair" || p.Phase == "done" {
		s += fmt.Sprintf(", re-checked %d of %d findings", p.Judged, p.Findings)
	}
	if p.Phase == "repair" || p.Phase == "done" {
		s += fmt.Sprintf(", tried repairing %d of %d", p.Tried, p.ToRepair)
	}
	return s
}

// FsckResult is what Fsck found and did.
type FsckResult struct {
	fsck.Report
	// Repaired are the findings repair fixed; RepairErrors say, per
	// finding, why one could not be (the others are still tried).
	Repaired     []fsck.Finding
	RepairErrors []error
	// Changed counts findings that went away when re-checked against the
	// live store (a create, remove or rename between the scan and now).
	Changed int
	// Progress is how far Fsck got (all the way, without an error).
	Progress FsckProgress
}

// Remaining returns the findings repair did not fix (all of them without
// Repair).
func (r FsckResult) Remaining() []fsck.Finding {
	var out []fsck.Finding
	for _, f := range r.Findings {
		if !slices.Contains(r.Repaired, f) {
			out = append(out, f)
		}
	}
	return out
}

// Fsck checks the store: it scans every inode and directory entry of the
// metadata server and lists every datafile of every I/O server (in pages,
// as op scan and op list allow), asks fsck.Check what is wrong, re-checks
// each finding against the live store (dropping those a concurrent
// operation explains), and with Repair fixes orphan datafiles and dangling
// entries. An I/O server that cannot be listed is named in
// Report.Unlisted, not an error; a metadata server that cannot be scanned
// is.
func (c *Client) Fsck(ctx context.Context, opts FsckOptions) (FsckResult, error) {
	pr := &FsckProgress{Phase: "scan", Servers: len(c.servers)}
	report := func() {
		if opts.Progress != nil {
			opts.Progress(*pr)
		}
	}
	v, err := c.fsckView(ctx, opts.Page, pr, report)
	if err != nil {
		return FsckResult{Progress: *pr}, err
	}
	res := FsckResult{Report: fsck.Check(v, opts.Rules)}
	pr.Phase, pr.Findings = "re-check", len(res.Findings)
	fail := func(err error) (FsckResult, error) { return FsckResult{Progress: *pr}, err }
	// IDs handed out while the servers were listed.
	last, _, err := wire.Call(ctx, c.meta, meta.OpScan, meta.ScanRequest{Max: 1}, nil, nil)
	if err != nil {
		return fail(fmt.Errorf("fsck: %w", err))
	}
	// Pooled IDs recorded while the servers were listed: a refill takes
	// its IDs (below the scan's NextID, which is the counter's reserved
	// ceiling) before it records them, and makes their datafiles after, so
	// a listing can find datafiles whose record the scan came too early to
	// see. The pool is small (a few hundred IDs per server set). The
	// answer also names the datafiles a create is making ahead of its
	// commit: one the listing found is either named here, or its file is
	// committed (the re-check finds it), or its create failed and removed
	// it; so no grace period is needed to keep a create's datafiles.
	pooled, err := c.Pooled(ctx)
	if err != nil {
		return fail(fmt.Errorf("fsck: %w", err))
	}
	pooledNow := make(map[uint64][]uint32, len(pooled))
	for _, pl := range pooled {
		pooledNow[uint64(pl.ID)] = append(pooledNow[uint64(pl.ID)], pl.Servers...)
	}
	kept := res.Findings[:0]
	for _, f := range res.Findings {
		pr.Judged++
		report()
		if f.Kind == fsck.OrphanDatafile || f.Kind == fsck.UnknownDatafile {
			if slices.Contains(pooledNow[f.ID], uint32(f.Server)) {
				res.Changed++
				continue
			}
		}
		still, err := c.fsckStill(ctx, f, uint64(last.NextID))
		if err != nil {
			return fail(err)
		}
		if still {
			kept = append(kept, f)
		} else {
			res.Changed++
		}
	}
	res.Findings = kept
	if opts.Repair {
		pr.Phase = "repair"
		for _, f := range res.Findings {
			if f.Kind.Repairable() {
				pr.ToRepair++
			}
		}
		if err := c.fsckRepair(ctx, &res, pr, report); err != nil {
			res.Progress = *pr
			return res, err
		}
	}
	pr.Phase = "done"
	res.Progress = *pr
	return res, nil
}

// fsckView reads the store: the metadata scan first (its first page fixes
// NextID, so everything created after it is recognisably new), then every
// I/O server's datafiles, in parallel.
func (c *Client) fsckView(ctx context.Context, page int, pr *FsckProgress, report func()) (fsck.View, error) {
	v := fsck.View{Now: time.Now().UnixNano()}
	var cookie []byte
	for first := true; ; first = false {
		// An interruption stops before the next page: a call made with
		// a context already done may still be answered (the connection
		// was ready), and the progress would then count a page past it.
		if err := ctx.Err(); err != nil {
			return fsck.View{}, fmt.Errorf("fsck: scan metadata: %w", err)
		}
		resp, _, err := wire.Call(ctx, c.meta, meta.OpScan, meta.ScanRequest{Cookie: cookie, Max: uint32(page)}, nil, nil)
		if err != nil {
			return fsck.View{}, fmt.Errorf("fsck: scan metadata: %w", err)
		}
		if first {
			v.NextID = uint64(resp.NextID)
		}
		for _, a := range resp.Inodes {
			v.Inodes = append(v.Inodes, fsck.Inode{
				ID: uint64(a.ID), Dir: a.Kind == meta.KindDir, Servers: a.Servers, Stuffed: a.Stuffed, Ctime: a.Ctime, Nlink: a.Nlink,
			})
		}
		for _, d := range resp.Dirents {
			v.Dirents = append(v.Dirents, fsck.Dirent{Parent: uint64(d.Parent), Name: d.Name, Child: uint64(d.Child)})
		}
		v.Bad = append(v.Bad, resp.Bad...)
		pr.Inodes, pr.Entries = len(v.Inodes), len(v.Dirents)
		report()
		for _, pl := range resp.Pooled {
			if v.Pooled == nil {
				v.Pooled = map[uint64][]uint32{}
			}
			v.Pooled[uint64(pl.ID)] = append(v.Pooled[uint64(pl.ID)], pl.Servers...)
		}
		for _, p := range resp.Pending {
			v.Pending = append(v.Pending, fsck.Pending{ID: uint64(p.ID), Servers: p.Servers})
		}
		if resp.Done {
			break
		}
		if len(resp.Cookie) == 0 {
			return fsck.View{}, fmt.Errorf("fsck: scan metadata: %s answered a page without a cookie", c.meta.Name)
		}
		cookie = resp.Cookie
	}

	pr.Phase = "list"
	report()
	var mu sync.Mutex // pr and report, for the listings in parallel
	v.Servers = make([]fsck.Server, len(c.servers))
	var wg sync.WaitGroup
	for i, ep := range c.servers {
		v.Servers[i].Name = c.infos[i].Name
		wg.Go(func() {
			s := &v.Servers[i]
			dfs, now, err := listDatafiles(ctx, ep, page)
			if err != nil {
				*s = fsck.Server{Name: s.Name, Err: err}
				return
			}
			defer func() {
				mu.Lock()
				defer mu.Unlock()
				pr.Listed++
				pr.Datafiles += len(dfs)
				report()
			}()
			for _, d := range dfs {
				s.Datafiles = append(s.Datafiles, fsck.Datafile{ID: d.ID, Size: d.Size, Mtime: d.Mtime})
			}
			s.Now = now
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return fsck.View{}, fmt.Errorf("fsck: %w", err)
	}
	return v, nil
}

// ListDatafiles lists every datafile I/O server idx holds (those never
// written included, with size 0), in the server's List order.
func (c *Client) ListDatafiles(ctx context.Context, idx int) ([]data.DatafileInfo, error) {
	if idx < 0 || idx >= len(c.servers) {
		return nil, fmt.Errorf("list datafiles: no I/O server %d (the cluster has %d)", idx, len(c.servers))
	}
	dfs, _, err := listDatafiles(ctx, c.servers[idx], data.MaxListPage)
	return dfs, err
}

// listDatafiles pages through ep's datafiles, page at a time, and returns
// them with the server's clock at the last page.
func listDatafiles(ctx context.Context, ep *wire.Endpoint, page int) (dfs []data.DatafileInfo, now int64, err error) {
	for from := uint64(0); ; {
		resp, _, err := wire.Call(ctx, ep, data.OpList, data.ListRequest{From: from, Max: uint32(page)}, nil, nil)
		if err != nil {
			return nil, 0, err
		}
		dfs = append(dfs, resp.Datafiles...)
		if resp.Done {
			return dfs, resp.Now, nil
		}
		from = resp.Next
	}
}

// fsckStill re-checks finding f against the metadata server as it is now;
// nextID is the ID counter after the listing.
func (c *Client) fsckStill(ctx context.Context, f fsck.Finding, nextID uint64) (bool, error) {
	switch f.Kind {
	case fsck.OrphanDatafile, fsck.UnknownDatafile, fsck.MissingDatafile, fsck.Unreachable, fsck.WrongLinkCount, fsck.DanglingEntry:
	default:
		return true, nil // static
	}
	a, err := c.getByID(ctx, f.ID)
	if errors.Is(err, fs.ErrNotExist) {
		switch f.Kind {
		case fsck.DanglingEntry:
			// Still no inode (repair checks it once more, in the
			// transaction that removes the entry).
			return true, nil
		case fsck.UnknownDatafile:
			// Handed out during the listing: a create in flight, or a
			// file made and removed since; an orphan to a later fsck.
			return f.ID >= nextID, nil
		case fsck.OrphanDatafile:
			return true, nil
		}
		return false, nil // removed since the scan
	}
	if err != nil {
		return false, fmt.Errorf("fsck: re-check %v: %w", f, err)
	}
	switch f.Kind {
	case fsck.OrphanDatafile, fsck.UnknownDatafile:
		return !places(a, f.Server), nil
	case fsck.DanglingEntry:
		// Its file exists now: created during the scan, after the inodes
		// were read (pooled IDs are below the scan's NextID).
		return false, nil
	case fsck.MissingDatafile:
		// A layout change of the (empty) file since the scan removed the
		// datafiles of the servers it no longer uses.
		return places(a, f.Server), nil
	case fsck.WrongLinkCount:
		// A link or unlink since the inode was scanned set its ctime: the
		// entries may have been read after it, the count before.
		return a.Ctime == f.Ctime, nil
	case fsck.Unreachable:
		// A rename of the chain's top since the scan set its ctime: it may
		// have moved from a directory whose entries the scan had yet to
		// read into one it had read.
		top := a
		if f.Parent != f.ID && f.Parent != 0 {
			if top, err = c.getByID(ctx, f.Parent); errors.Is(err, fs.ErrNotExist) {
				return false, nil
			} else if err != nil {
				return false, fmt.Errorf("fsck: re-check %v: %w", f, err)
			}
		}
		return top.Ctime == f.Ctime, nil
	}
	return true, nil
}

func (c *Client) getByID(ctx context.Context, id uint64) (meta.Attr, error) {
	return metaAttr(ctx, c, meta.OpGetByID, meta.GetByIDRequest{ID: meta.FileID(id)})
}

// places says whether file a has a datafile on server s.
func places(a meta.Attr, s int) bool {
	return a.Kind == meta.KindFile && slices.Contains(a.Servers, uint32(s))
}

// fsckRepair removes the orphan datafiles and dangling entries of res.
// Each orphan's ID is looked up again just before its datafile is removed,
// so a file that appeared since keeps it; together with Rules.Grace (an
// orphan is at least that old) this protects a create in flight.
//
// An interruption (ctx done) stops it: the findings not tried yet are
// left, not each reported as a failed repair, and the error says so.
func (c *Client) fsckRepair(ctx context.Context, res *FsckResult, pr *FsckProgress, report func()) error {
	kept := res.Findings[:0]
	defer func() { res.Findings = kept }()
	for i, f := range res.Findings {
		if f.Kind.Repairable() && ctx.Err() != nil {
			kept = append(kept, res.Findings[i:]...)
			return fmt.Errorf("fsck: repair: %w", ctx.Err())
		}
		kept = append(kept, f)
		var err error
		switch f.Kind {
		case fsck.OrphanDatafile:
			err = c.removeOrphan(ctx, f)
		case fsck.DanglingEntry:
			_, _, err = wire.Call(ctx, c.meta, meta.OpUnlinkDangling,
				meta.UnlinkDanglingRequest{Parent: meta.FileID(f.Parent), Name: f.Entry, Child: meta.FileID(f.ID)}, nil, nil)
		default:
			continue
		}
		pr.Tried++
		report()
		if ctx.Err() != nil && err != nil {
			// Cut short by the interruption: not known to be done.
			pr.Tried--
			kept = append(kept, res.Findings[i+1:]...)
			return fmt.Errorf("fsck: repair: %w", ctx.Err())
		}
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESTALE) {
			res.Changed++ // the entry went, or now leads somewhere
			kept = kept[:len(kept)-1]
			continue
		}
		if err != nil {
			res.RepairErrors = append(res.RepairErrors, fmt.Errorf("repair %v: %w", f, err))
			continue
		}
		res.Repaired = append(res.Repaired, f)
	}
	return nil
}

func (c *Client) removeOrphan(ctx context.Context, f fsck.Finding) error {
	a, err := c.getByID(ctx, f.ID)
	switch {
	case err == nil && places(a, f.Server):
		return fmt.Errorf("ID %d now belongs to a file on this server, left alone: %w", f.ID, syscall.ESTALE)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return err
	}
	ep, err := c.server(uint32(f.Server))
	if err != nil {
		return err
	}
	_, _, err = wire.Call(ctx, ep, data.OpRemove, data.RemoveRequest{ID: f.ID, Incarnation: c.incarnation}, nil, nil)
	return err
}

// PooledDatafiles counts the datafiles the metadata server has made ahead
// of creates (its precreate pools): they are in the I/O servers' datafile
// counts (Statfs) but belong to no file yet.
func (c *Client) PooledDatafiles(ctx context.Context) (uint64, error) {
	pooled, err := c.Pooled(ctx)
	var n uint64
	for _, pl := range pooled {
		n += uint64(len(pl.Servers))
	}
	return n, err
}

// Pooled lists the metadata server's precreated IDs and the I/O servers
// holding (or about to hold: a pool's record precedes its datafiles)
// their datafiles.
func (c *Client) Pooled(ctx context.Context) ([]meta.Pooled, error) {
	var pooled []meta.Pooled
	cookie := meta.PoolCookie()
	for {
		resp, _, err := wire.Call(ctx, c.meta, meta.OpScan, meta.ScanRequest{Cookie: cookie, Max: meta.MaxScanPage}, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("list pooled datafiles: %w", err)
		}
		pooled = append(pooled, resp.Pooled...)
		if resp.Done || len(resp.Cookie) == 0 {
			return pooled, nil
		}
		cookie = resp.Cookie
	}
}

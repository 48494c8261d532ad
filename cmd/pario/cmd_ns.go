package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path"
	"strconv"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/pario/pario/client"
	"github.com/pario/pario/server/meta"
	"github.com/pario/pario/units"
)

// withClient runs fn with a client connected to the cluster.
func withClient(cmd *cobra.Command, fn func(ctx context.Context, c *client.Client) error) error {
	c, err := connect(cmd.Context())
	if err != nil {
		return err
	}
	defer c.Close()
	return fn(cmd.Context(), c)
}

func modeString(a meta.Attr) string {
	m := fs.FileMode(a.Mode & 0o777)
	for bit, mode := range map[uint32]fs.FileMode{0o4000: fs.ModeSetuid, 0o2000: fs.ModeSetgid, 0o1000: fs.ModeSticky} {
		if a.Mode&bit != 0 {
			m |= mode
		}
	}
	switch a.Kind {
	case meta.KindDir:
		m |= fs.ModeDir
	case meta.KindFIFO:
		m |= fs.ModeNamedPipe
	case meta.KindSocket:
		m |= fs.ModeSocket
	case meta.KindCharDev:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case meta.KindBlockDev:
		m |= fs.ModeDevice
	case meta.KindSymlink:
		// ls(1) writes a link's type as "l"; Go's FileMode.String as "L".
		return "l" + (m | fs.ModeSymlink).String()[1:]
	}
	return m.String()
}

func newLsCommand() *cobra.Command {
	var long bool
	cmd := &cobra.Command{
		Use:   "ls [-l] [PATH...]",
		Short: "List directories of the store",
		Long: `List the entries of directories in the store (default /). With -l, show mode,
owner, group, size (computed from the datafiles: "?", naming the file and the
I/O server, and exit status 1, when a server does not answer), modification
time and layout; a symbolic link as "name -> target". Owners are shown by name when this host
knows them, else by number. pario never follows symbolic links: a link named
last is the link itself (ls shows it, rm removes it, mv renames it; cp refuses
to copy it with ELOOP), and a link as a directory of a path is ENOTDIR.

  pario ls /
  pario ls -l pario:/`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				args = []string{"/"}
			}
			return withClient(cmd, func(ctx context.Context, c *client.Client) error {
				w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
				defer w.Flush()
				names := ownerNames{}
				// As ls(1): an entry whose size cannot be had is listed with
				// "?", the listing goes on, and the status is then 1.
				var sizeErrs []error
				for _, arg := range args {
					p := storePath(arg)
					a, err := c.Lookup(ctx, p)
					if err != nil {
						return err
					}
					// A directory streams a page at a time, in byte order of
					// names (which is GNU ls's order in the C locale).
					ents := func(yield func(meta.DirEntry, error) bool) { yield(meta.DirEntry{Name: p, Attr: a}, nil) }
					if a.Kind == meta.KindDir {
						ents = c.Dir(ctx, p)
						if len(args) > 1 {
							fmt.Fprintf(w, "%s:\n", quoteName(p))
						}
					}
					// A page of entries at a time: its columns are aligned
					// together (the tabwriter would otherwise hold the whole
					// listing), and with -l its files' sizes are asked for
					// together, one request per I/O server.
					page := make([]meta.DirEntry, 0, meta.MaxPageEntries)
					for e, err := range ents {
						if err != nil {
							return err
						}
						if page = append(page, e); len(page) == cap(page) {
							sizeErrs = append(sizeErrs, printLsPage(ctx, c, w, page, long, names, p, a.Kind == meta.KindDir)...)
							page = page[:0]
						}
					}
					sizeErrs = append(sizeErrs, printLsPage(ctx, c, w, page, long, names, p, a.Kind == meta.KindDir)...)
				}
				w.Flush()
				return errors.Join(sizeErrs...)
			})
		},
	}
	cmd.Flags().BoolVarP(&long, "long", "l", false, "long listing")
	return cmd
}

// printLsPage writes one page of a listing (of directory dir, or of the
// entry dir itself when not inDir) and flushes it. With long, a file's
// size is what its datafiles say, "?" when they cannot say; it returns
// why, for each such file.
func printLsPage(ctx context.Context, c *client.Client, w *tabwriter.Writer, page []meta.DirEntry, long bool, names ownerNames, dir string, inDir bool) []error {
	defer w.Flush()
	if !long {
		for _, e := range page {
			fmt.Fprintln(w, quoteName(e.Name))
		}
		return nil
	}
	attrs := make([]meta.Attr, len(page))
	for i, e := range page {
		attrs[i] = e.Attr
	}
	usages, errs := c.UsagesOf(ctx, attrs)
	var failed []error
	for i, e := range page {
		size := strconv.FormatInt(usages[i].Size, 10)
		if errs[i] != nil {
			size = "?"
			p := e.Name
			if inDir {
				p = joinStore(dir, e.Name)
			}
			failed = append(failed, fmt.Errorf("size of %s: %w", quoteName(p), errs[i]))
		}
		name := quoteName(e.Name)
		if e.Attr.Kind == meta.KindSymlink {
			size = strconv.Itoa(len(e.Attr.Target))
			name += " -> " + quoteName(e.Attr.Target)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", modeString(e.Attr), names.user(e.Attr.Uid), names.group(e.Attr.Gid), size,
			time.Unix(0, e.Attr.Mtime).Format("2006-01-02 15:04"), name, layoutOf(e.Attr))
	}
	return failed
}

// ownerNames names uids and gids as this host's user and group databases
// do, remembering each answer for one listing.
type ownerNames map[string]string

func (n ownerNames) user(uid uint32) string {
	return n.name("u", uid, func(id string) (string, error) {
		u, err := user.LookupId(id)
		if err != nil {
			return "", err
		}
		return u.Username, nil
	})
}

func (n ownerNames) group(gid uint32) string {
	return n.name("g", gid, func(id string) (string, error) {
		g, err := user.LookupGroupId(id)
		if err != nil {
			return "", err
		}
		return g.Name, nil
	})
}

func (n ownerNames) name(kind string, id uint32, lookup func(string) (string, error)) string {
	s := strconv.FormatUint(uint64(id), 10)
	if name, ok := n[kind+s]; ok {
		return name
	}
	name, err := lookup(s)
	if err != nil || name == "" {
		name = s
	}
	n[kind+s] = name
	return name
}

func joinStore(dir, name string) string {
	if dir == "/" {
		return "/" + name
	}
	return dir + "/" + name
}

func layoutOf(a meta.Attr) string {
	if a.Layout.IsZero() {
		return "-"
	}
	return a.Layout.String()
}

func newStatCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "stat PATH...",
		Short: "Show a file's or directory's metadata and layout",
		Long: `Show what the metadata server knows about a path (id, kind, mode, owner, times,
layout, datafile servers, stuffing) and, for files, the size computed from the
datafiles, like pvfs2-stat.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withClient(cmd, func(ctx context.Context, c *client.Client) error {
				// As stat(1): a path that cannot be shown is reported and the
				// others are still shown; the exit status is then 1.
				var errs []error
				for _, arg := range args {
					fi, err := c.Stat(ctx, storePath(arg))
					if err != nil {
						errs = append(errs, err)
						continue
					}
					fmt.Printf("  path:      %s\n  id:        %d\n  kind:      %s\n  mode:      %s\n", quoteName(fi.Path), fi.ID, kindNames[fi.Kind], modeString(fi.Attr))
					names := ownerNames{}
					fmt.Printf("  owner:     %s (%d)\n  group:     %s (%d)\n", names.user(fi.Uid), fi.Uid, names.group(fi.Gid), fi.Gid)
					fmt.Printf("  modified:  %s\n  changed:   %s\n", time.Unix(0, fi.Mtime).Format(time.RFC3339), time.Unix(0, fi.Ctime).Format(time.RFC3339))
					switch fi.Kind {
					case meta.KindFile:
						fmt.Printf("  size:      %d (%s)\n  layout:    %s\n  datafiles: %d on servers %v\n  stuffed:   %v\n",
							fi.Size, units.FormatBytes(fi.Size), fi.Layout, len(fi.Servers), serverNames(c, fi.Servers), fi.Stuffed)
					case meta.KindDir:
						fmt.Printf("  default layout for new files: %s\n", layoutOf(fi.Attr))
					case meta.KindSymlink:
						fmt.Printf("  target:    %s\n", quoteName(fi.Target))
					}
				}
				return errors.Join(errs...)
			})
		},
	}
}

// kindNames are stat(1)'s names of the kinds of entry (%F).
var kindNames = map[meta.Kind]string{
	meta.KindFile: "regular file", meta.KindDir: "directory", meta.KindSymlink: "symbolic link",
	meta.KindFIFO: "fifo", meta.KindSocket: "socket", meta.KindCharDev: "character special file",
	meta.KindBlockDev: "block special file",
}

func serverNames(c *client.Client, idx []uint32) []string {
	infos := c.Servers()
	out := make([]string, len(idx))
	for i, x := range idx {
		if int(x) < len(infos) {
			out[i] = infos[x].Name
		} else {
			out[i] = fmt.Sprintf("#%d?", x)
		}
	}
	return out
}

func newMkdirCommand() *cobra.Command {
	var parents bool
	cmd := &cobra.Command{
		Use:   "mkdir [-p] PATH...",
		Short: "Create directories in the store",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withClient(cmd, func(ctx context.Context, c *client.Client) error {
				for _, arg := range args {
					var err error
					if parents {
						err = c.MkdirAll(ctx, storePath(arg), 0o755)
					} else {
						err = c.Mkdir(ctx, storePath(arg), 0o755)
					}
					if err != nil {
						return err
					}
				}
				return nil
			})
		},
	}
	cmd.Flags().BoolVarP(&parents, "parents", "p", false, "create missing parents; no error if the directory exists")
	return cmd
}

func newRmCommand() *cobra.Command {
	var recursive bool
	cmd := &cobra.Command{
		Use:   "rm [-r] PATH...",
		Short: "Remove files (and their datafiles) or directories from the store",
		Long: `Remove each PATH. As rm does, a path that cannot be removed is reported and
the others are still removed; the exit status is then 1.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withClient(cmd, func(ctx context.Context, c *client.Client) error {
				var errs []error
				for _, arg := range args {
					removePath(ctx, c, storePath(arg), recursive, func(err error) { errs = append(errs, err) })
				}
				return errors.Join(errs...)
			})
		},
	}
	cmd.Flags().BoolVarP(&recursive, "recursive", "r", false, "remove directories and their contents")
	return cmd
}

// removePath removes p (and with recursive, everything under it), passing
// each failure to report and going on with the rest, as rm -r does; a
// directory is left when something in it was. It reports whether p is gone.
func removePath(ctx context.Context, c *client.Client, p string, recursive bool, report func(error)) bool {
	err := c.Remove(ctx, p)
	if recursive && errors.Is(err, errNotEmpty) {
		if !removeChildren(ctx, c, p, report) {
			return false
		}
		err = c.Remove(ctx, p)
	}
	if err != nil {
		report(err)
		return false
	}
	return true
}

// removeChildren empties directory dir page by page, each page's entries
// removed before the next page is asked for from the cookie of the last:
// the names removed (or left after a failure) sort before it, so nothing
// is listed twice, and memory holds one page per level of the tree.
func removeChildren(ctx context.Context, c *client.Client, dir string, report func(error)) bool {
	all := true
	cookie := ""
	for {
		page, next, err := c.ReaddirPage(ctx, dir, cookie, 0)
		if err != nil {
			report(err)
			return false
		}
		all = removeEach(ctx, c, dir, page, report) && all
		if next == "" {
			return all
		}
		cookie = next
	}
}

// rmParallel is how many files of a directory rm -r removes at once.
const rmParallel = 16

// removeEach removes the entries of one page of directory dir, reporting
// each failure, and says whether all are gone. Files go rmParallel at a
// time; directories one after the other, so that one page per level of
// the tree is held, not one per directory being removed.
func removeEach(ctx context.Context, c *client.Client, dir string, page []meta.DirEntry, report func(error)) bool {
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		all = true
		sem = make(chan struct{}, rmParallel)
	)
	done := func(ok bool) {
		mu.Lock()
		defer mu.Unlock()
		all = all && ok
	}
	locked := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		report(err)
	}
	for _, e := range page {
		if err := ctx.Err(); err != nil {
			locked(err)
			done(false)
			break
		}
		p := joinStore(dir, e.Name)
		if e.Attr.Kind == meta.KindDir {
			done(removePath(ctx, c, p, true, locked))
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			done(removePath(ctx, c, p, true, locked))
		})
	}
	wg.Wait()
	return all
}

func newMvCommand() *cobra.Command {
	var targetDir string
	var noTarget bool
	cmd := &cobra.Command{
		Use:   "mv [-T] SOURCE DEST | mv SOURCE... DIRECTORY | mv -t DIRECTORY SOURCE...",
		Short: "Rename or move files and directories within the store",
		Long: `Rename SOURCE to DEST, or move SOURCEs into DIRECTORY, as mv(1) does: a DEST that
is a directory receives SOURCE under its own name, unless -T. A trailing slash on
DEST asks for a directory.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if targetDir != "" && noTarget {
				return usageError{errors.New("-t and -T: give one")}
			}
			if targetDir == "" && len(args) < 2 {
				return usageError{fmt.Errorf("missing destination after %q", args[0])}
			}
			if noTarget && len(args) > 2 {
				return usageError{fmt.Errorf("-T takes one source and one destination, not %d arguments", len(args))}
			}
			return withClient(cmd, func(ctx context.Context, c *client.Client) error {
				moves, err := mvPlan(ctx, c, args, targetDir, noTarget)
				if err != nil {
					return err
				}
				// As mv(1): a source that cannot be moved does not stop the others.
				var errs []error
				for _, m := range moves {
					if err := mvOne(ctx, c, m[0], m[1]); err != nil {
						errs = append(errs, err)
					}
				}
				return errors.Join(errs...)
			})
		},
	}
	cmd.Flags().StringVarP(&targetDir, "target-directory", "t", "", "move every SOURCE into `DIRECTORY`")
	cmd.Flags().BoolVarP(&noTarget, "no-target-directory", "T", false, "treat DEST as a name, even if it is a directory")
	return cmd
}

// mvPlan turns mv's arguments into renames (from, to), as GNU mv reads
// them: with -t or more than one source the last argument (or -t's) must
// be a directory; with one source a DEST that is a directory receives it,
// unless -T.
func mvPlan(ctx context.Context, c *client.Client, args []string, targetDir string, noTarget bool) ([][2]string, error) {
	srcs, dest := args, targetDir
	if dest == "" {
		srcs, dest = args[:len(args)-1], args[len(args)-1]
	}
	into := false
	switch {
	case noTarget:
	case targetDir != "" || len(srcs) > 1:
		a, err := c.Lookup(ctx, storePath(dest))
		if err != nil {
			return nil, fmt.Errorf("target %s: %w", dest, err)
		}
		if a.Kind != meta.KindDir {
			return nil, fmt.Errorf("target %s: %w", dest, syscall.ENOTDIR)
		}
		into = true
	default:
		a, err := c.Lookup(ctx, storePath(dest))
		switch {
		case err == nil:
			into = a.Kind == meta.KindDir
		case !errors.Is(err, fs.ErrNotExist):
			return nil, err
		}
	}
	moves := make([][2]string, 0, len(srcs))
	for _, src := range srcs {
		to := dest
		if into {
			to = path.Join(storePath(dest), path.Base(storePath(src)))
		}
		moves = append(moves, [2]string{src, to})
	}
	return moves, nil
}

// mvOne renames one source. A trailing slash on either name asks for a
// directory: the metadata server checks it (ENOTDIR), as rename(2) does.
func mvOne(ctx context.Context, c *client.Client, from, to string) error {
	return c.Rename(ctx, storePath(from), storePath(to))
}

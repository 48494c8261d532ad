package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/pario/pario/client"
	"github.com/pario/pario/fsck"
	"github.com/pario/pario/units"
)

// exitStatus ends pario with a chosen status; msg, if any, is printed as
// an error would be.
type exitStatus struct {
	code int
	msg  string
}

func (e exitStatus) Error() string { return e.msg }

// fsck's exit statuses (like e2fsck's, simplified).
const (
	fsckClean    = 0 // nothing wrong, or everything found was repaired
	fsckProblems = 1 // problems found and left (a dry run, or not repairable)
	fsckError    = 2 // fsck could not do its work: a server unreachable, a repair failed
)

func newFsckCommand() *cobra.Command {
	var (
		repair  bool
		missing bool
		grace   time.Duration
	)
	cmd := &cobra.Command{
		Use:   "fsck [--repair]",
		Short: "Check the store for orphan datafiles, dangling entries and lost data",
		Long: `Check the whole store: every inode and directory entry of the metadata server
against every datafile of every I/O server. It reports

  orphan datafile    a datafile no file points to (a mount that crashed holding a
                     removed file open, a lost inode, a create cut by a crash)
  dangling entry     a directory entry whose file or directory does not exist
  missing datafile   a file's datafile absent from its server (lost data; files
                     made before creates made their datafiles: --check-missing=false)
  unknown datafile   a datafile with an ID the metadata server never handed out
                     (a restored meta.db): kept, since it may be the only copy
  unreachable        an inode that no path from / leads to
  bad record         a metadata record that does not decode
  wrong link count   a file whose link count is not the number of its names

and a summary, which counts datafiles of removed files that the metadata server
is still removing as "pending removal" (not problems). It is a dry run unless
--repair is given, which removes orphan
datafiles and dangling entries, re-checking each against the live store just
before. Datafiles changed and files created less than --grace ago are not
judged, so a create or write in flight is never taken for an orphan.

Exit status: 0 clean (or everything found repaired), 1 problems found and
left, 2 fsck could not finish (a server unreachable, a repair failed, or
interrupted: it then says how far it got).

  pario fsck
  pario fsck --repair --cluster /etc/pario/cluster`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if grace < 0 {
				return usageError{fmt.Errorf("--grace %v is negative", grace)}
			}
			c, err := connect(cmd.Context())
			if err != nil {
				return exitStatus{fsckError, err.Error()}
			}
			defer c.Close()
			return runFsck(cmd.Context(), c, os.Stdout, client.FsckOptions{
				Rules:  fsck.Rules{Grace: grace, DatafilesAtCreate: missing},
				Repair: repair,
			})
		},
	}
	cmd.Flags().BoolVar(&repair, "repair", false, "remove orphan datafiles and dangling entries (default: report only)")
	cmd.Flags().BoolVar(&missing, "check-missing", true, "report files whose datafiles are absent (creates make every datafile, so one absent is lost data; false for a store written before they did, where it may be a hole)")
	cmd.Flags().DurationVar(&grace, "grace", fsck.DefaultGrace, "leave alone datafiles modified and files created less than this long ago")
	return cmd
}

// runFsck checks (and repairs) the store, prints the findings and the
// summary to w, and returns the exit status as an error (nil when clean).
func runFsck(ctx context.Context, c *client.Client, w io.Writer, opts client.FsckOptions) error {
	res, err := c.Fsck(ctx, opts)
	if err != nil && res.Progress.Phase != "repair" {
		// Nothing judged yet: say how far it got (Ctrl-C on a large store).
		fmt.Fprintf(w, "stopped %s\n", res.Progress)
		return exitStatus{fsckError, err.Error()}
	}
	r := res.Report
	repaired := map[fsck.Finding]bool{}
	for _, f := range res.Repaired {
		repaired[f] = true
	}
	for _, f := range r.Findings {
		if repaired[f] {
			fmt.Fprintf(w, "%s  [repaired]\n", f)
		} else {
			fmt.Fprintln(w, f)
		}
	}
	for _, e := range res.RepairErrors {
		fmt.Fprintf(w, "repair failed: %v\n", e)
	}
	for _, u := range r.Unlisted {
		fmt.Fprintf(w, "not checked: I/O server %s\n", u)
	}

	fmt.Fprintf(w, "\nchecked %d files, %d directories, %d entries, %d datafiles (%s) on %d I/O servers\n",
		r.Files, r.Dirs, r.Entries, r.Datafiles, units.FormatBytes(r.DatafileBytes), len(c.Servers())-len(r.Unlisted))
	if r.Pending > 0 {
		fmt.Fprintf(w, "pending removal: %d datafiles (%s) of removed files, which the metadata server is removing (retrying while their I/O servers are down)\n",
			r.Pending, units.FormatBytes(r.PendingBytes))
	}
	if r.Young > 0 || res.Changed > 0 {
		fmt.Fprintf(w, "not judged: %d datafiles or files younger than %v or created during the check, %d findings changed since\n",
			r.Young, opts.Rules.Grace, res.Changed)
	}
	fmt.Fprintf(w, "%d orphan datafiles (%s reclaimable), %d dangling entries, %d missing datafiles, %d unknown datafiles, %d unreachable inodes, %d bad records, %d wrong link counts\n",
		r.Count(fsck.OrphanDatafile), units.FormatBytes(r.Reclaimable()), r.Count(fsck.DanglingEntry), r.Count(fsck.MissingDatafile),
		r.Count(fsck.UnknownDatafile), r.Count(fsck.Unreachable), r.Count(fsck.BadRecord), r.Count(fsck.WrongLinkCount))

	left := res.Remaining()
	if len(r.Unlisted) > 0 {
		// What the unlisted servers hold was not looked at: their orphans,
		// and files missing datafiles there, are unknown.
		fmt.Fprintf(w, "incomplete: %d of %d I/O servers not checked\n", len(r.Unlisted), len(c.Servers()))
	}
	switch {
	case r.Clean():
		fmt.Fprintln(w, "clean")
	case len(r.Findings) == 0:
	case opts.Repair:
		fmt.Fprintf(w, "repaired %d of %d findings\n", len(res.Repaired), len(r.Findings))
	case len(left) > 0:
		n := r.Count(fsck.OrphanDatafile) + r.Count(fsck.DanglingEntry)
		fmt.Fprintf(w, "dry run: nothing changed; `pario fsck --repair` fixes %d of these\n", n)
	}
	if err != nil {
		// Repair interrupted: what is marked [repaired] was; the rest was left.
		fmt.Fprintf(w, "stopped %s\n", res.Progress)
		return exitStatus{fsckError, err.Error()}
	}
	switch {
	case len(r.Unlisted) > 0 || len(res.RepairErrors) > 0:
		return exitStatus{code: fsckError}
	case len(left) > 0:
		return exitStatus{code: fsckProblems}
	}
	return nil
}

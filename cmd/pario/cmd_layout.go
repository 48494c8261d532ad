package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/pario/pario/client"
	"github.com/pario/pario/dist"
	"github.com/pario/pario/server/meta"
	"github.com/pario/pario/units"
	"github.com/pario/pario/wire"
)

func newLayoutCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "layout",
		Short: "Get or set the layout of a file or directory (like lfs getstripe/setstripe)",
		Long: `A layout is a distribution function and its parameters:

  simple_stripe:strip_size=65536          round robin, 64 KiB strips (the default)
  basic                                   everything on one datafile
  varstrip:strips=0:200000;1:4000000      explicit (datafile:bytes) strips, repeated
  twod_stripe:num_groups=2,strip_size=65536,group_strip_factor=256

Any layout also takes num_datafiles=N (stripe count). Sizes accept k, m, g.
On a directory the layout is the default its new files inherit; on a file it
can be set only while the file is empty. A native client (pario cp, bench,
farm) that opened the file before keeps placing bytes by the old layout:
set a file's layout before anything opens it (pario cp notices, and fails).`,
	}
	cmd.AddCommand(newLayoutGetCommand(), newLayoutSetCommand())
	return cmd
}

func newLayoutGetCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "get PATH...",
		Short: "Print the layout of files or the default layout of directories",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withClient(cmd, func(ctx context.Context, c *client.Client) error {
				// As lfs getstripe: a path that cannot be read is reported and
				// the others are still shown; the exit status is then 1.
				var errs []error
				for _, arg := range args {
					p := storePath(arg)
					a, err := c.Lookup(ctx, p)
					if err != nil {
						errs = append(errs, err)
						continue
					}
					switch {
					case a.Kind == meta.KindDir && a.Layout.IsZero():
						fmt.Printf("%s: (no default set: inherits from its parents or the server default)\n", quoteName(p))
					case a.Kind == meta.KindDir:
						fmt.Printf("%s: default %s\n", quoteName(p), a.Layout)
					case a.Kind == meta.KindFile:
						fmt.Printf("%s: %s  datafiles=%d servers=%v stuffed=%v\n", quoteName(p), a.Layout, len(a.Servers), serverNames(c, a.Servers), a.Stuffed)
					default:
						fmt.Printf("%s: a %s, which has no layout\n", quoteName(p), kindNames[a.Kind])
					}
				}
				return errors.Join(errs...)
			})
		},
	}
}

func newLayoutSetCommand() *cobra.Command {
	var (
		count     int
		stripSize int64
		distName  string
		strips    string
		clear     bool
	)
	cmd := &cobra.Command{
		Use:   "set PATH [LAYOUT]",
		Short: "Set the layout of a directory (inherited by new files) or of an empty file",
		Long: `Set a layout from its text form, or build one with lfs-style flags.

  pario mkdir -p /runs/out
  pario layout set /runs simple_stripe:strip_size=1m
  pario layout set /runs -c 2 -S 4m          # like lfs setstripe -c 2 -S 4m
  pario layout set /runs/out varstrip:strips="0:200000;1:4000000"
  pario layout set /runs --clear             # back to inheriting`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			var l dist.Layout
			// -c -1 is lfs setstripe's "every server": pario's default
			// stripe count, so no num_datafiles.
			if count < -1 {
				return usageError{fmt.Errorf("-c %d: want a stripe count of at least 1, or -1 for every I/O server", count)}
			}
			flagsUsed := count != 0 || stripSize != 0 || distName != "" || strips != ""
			switch {
			case clear:
				if len(args) > 1 || flagsUsed {
					return usageError{fmt.Errorf("--clear takes no layout")}
				}
			case len(args) == 2:
				if flagsUsed {
					return usageError{fmt.Errorf("give a layout string or flags, not both")}
				}
				var err error
				if l, err = dist.ParseLayout(args[1]); err != nil {
					return usageError{err}
				}
			case flagsUsed:
				hints := map[string]string{}
				if distName != "" {
					hints["dist"] = distName
				}
				if stripSize != 0 {
					hints["strip_size"] = units.FormatSize(stripSize)
				}
				if strips != "" {
					hints["strips"] = strips
				}
				if count > 0 {
					hints["num_datafiles"] = strconv.Itoa(count)
				}
				if len(hints) == 0 { // -c -1 alone: the default stripes, set
					hints["dist"] = dist.SimpleStripe
				}
				var err error
				if l, err = dist.ParseHints(hints); err != nil {
					return usageError{err}
				}
			default:
				return usageError{fmt.Errorf("give a layout, layout flags, or --clear")}
			}
			return withClient(cmd, func(ctx context.Context, c *client.Client) error {
				if err := c.SetLayout(ctx, storePath(args[0]), l); err != nil {
					return err
				}
				a, err := c.Lookup(ctx, storePath(args[0]))
				if err != nil {
					return err
				}
				fmt.Printf("%s: %s\n", quoteName(storePath(args[0])), layoutOf(a))
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.IntVarP(&count, "count", "c", 0, "number of datafiles (stripe count); -1: every I/O server, as lfs setstripe -c -1")
	f.VarP(units.SizeFlag(&stripSize), "strip-size", "S", "strip size, e.g. 1m (binary suffixes k, m, g, t)")
	f.StringVarP(&distName, "dist", "d", "", "distribution: simple_stripe, basic, varstrip, twod_stripe")
	f.StringVar(&strips, "strips", "", "varstrip strips, e.g. 0:200000;1:4000000")
	f.BoolVar(&clear, "clear", false, "remove a directory's default layout")
	return cmd
}

func newViewdistCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "viewdist PATH",
		Short: "Show which I/O server holds each datafile of a file and how many bytes",
		Long: `Show a file's distribution: for each datafile, the I/O server holding it and
the bytes stored there (like pvfs2-viewdist).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withClient(cmd, func(ctx context.Context, c *client.Client) error {
				f, err := c.Open(ctx, storePath(args[0]))
				if err != nil {
					return err
				}
				defer f.Close()
				dfs, err := f.Datafiles(ctx)
				if err != nil {
					return err
				}
				a := f.Attr()
				var total int64
				for _, d := range dfs {
					total += d.Size
				}
				fmt.Printf("%s: %s, %d datafiles, %s stored", quoteName(f.Name()), a.Layout, len(dfs), units.FormatBytes(total))
				if a.Stuffed {
					fmt.Print(", stuffed on datafile 0")
				}
				fmt.Println()
				w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
				fmt.Fprintln(w, "datafile\tserver\taddress\tbytes\t")
				for _, d := range dfs {
					fmt.Fprintf(w, "%d\t%s\t%s\t%d\t\n", d.Datafile, d.Server.Name, d.Server.Addr, d.Size)
				}
				return w.Flush()
			})
		},
	}
}

// fileSystems says how many distinct file systems the df total counts.
func fileSystems(n int) string {
	if n == 1 {
		return "1 file system"
	}
	return fmt.Sprintf("%d file systems", n)
}

func newDfCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "df",
		Short: "Show capacity and bytes used on every I/O server",
		Long: `Show, per I/O server, the capacity of the file system holding its data
directory, the bytes held by pario datafiles, and what is still available
(like pvfs2-statfs and lfs df). The total counts each file system once, however
many servers share it. A server that does not answer is named. With the
metadata server down, the I/O servers the cluster file's data lines name are
asked directly, and df exits 1 saying the metadata server did not answer.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			c, err := connect(ctx)
			if err != nil {
				return dfWithoutMeta(ctx, err)
			}
			defer c.Close()
			failed := printDf(c.Statfs(ctx))
			if files, dirs, err := c.MetaStats(ctx); err == nil {
				fmt.Printf("namespace: %d files, %d directories\n", files, dirs)
			}
			return failed
		},
	}
}

// dfWithoutMeta is df while the metadata server does not answer (why):
// the I/O servers the cluster file names still say how full they are, as
// lfs df reports each target; the command still fails, naming why.
func dfWithoutMeta(ctx context.Context, why error) error {
	cf, err := loadClusterFile(ctx)
	if err != nil || len(cf.Data) == 0 {
		return why // nothing to ask without it
	}
	secret, err := cf.Secret()
	if err != nil {
		return why
	}
	servers := make([]meta.ServerInfo, len(cf.Data))
	for i, d := range cf.Data {
		servers[i] = meta.ServerInfo{Name: d.Name, Addr: d.Addr}
	}
	ctx, cancel := context.WithTimeout(ctx, globalOpTimeout)
	defer cancel()
	opts := client.Options{Secret: secret, Endpoint: wire.EndpointOptions{Protection: cf.Protection, Timeout: globalOpTimeout}}
	failed := printDf(client.StatfsServers(ctx, opts, servers))
	fmt.Println("namespace: not known (the I/O servers above are those the cluster file names)")
	return errors.Join(fmt.Errorf("df: the metadata server did not answer: %w", why), failed)
}

// printDf prints the table of df and returns an error naming the servers
// that did not answer, or nil.
func printDf(stats []client.ServerStat) error {
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "server\taddress\tsize\tpario used\tavailable\tuse%\tdatafiles\t")
	var failed []error
	for _, s := range stats {
		if s.Err != nil {
			fmt.Fprintf(w, "%s\t%s\t-\t-\t-\t-\t-\t\n", s.Name, s.Addr)
			failed = append(failed, s.Err)
			continue
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t\n", s.Name, s.Addr,
			units.FormatBytes(int64(s.Total)), units.FormatBytes(int64(s.Used)), units.FormatBytes(int64(s.Avail)),
			usePercent(s.Total, s.Free, s.Avail), s.Datafiles)
	}
	sp := client.SumSpace(stats)
	fmt.Fprintf(w, "total\t%s\t%s\t%s\t%s\t%s\t\t\n", fileSystems(sp.FileSystems),
		units.FormatBytes(int64(sp.Total)), units.FormatBytes(int64(sp.Used)), units.FormatBytes(int64(sp.Avail)),
		usePercent(sp.Total, sp.Free, sp.Avail))
	w.Flush()
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d I/O servers did not answer: %w", len(failed), len(stats), failed[0])
	}
	return nil
}

// usePercent is df(1)'s Use%: the used part of the space a user can have,
// used / (used + available) with used = size - free, rounded up, so a
// file system whose reserved blocks are all that is left shows 100%.
func usePercent(total, free, avail uint64) string {
	used := total - min(free, total)
	den := used + avail
	if den == 0 {
		return "-"
	}
	// Integer arithmetic: exact for any size below 2^64/100 bytes.
	return fmt.Sprintf("%d%%", (used*100+den-1)/den)
}

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	runtimedebug "runtime/debug"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/pario/pario/client"
	"github.com/pario/pario/cluster"
	"github.com/pario/pario/fusefs"
	"github.com/pario/pario/units"
)

func newMountCommand() *cobra.Command {
	var (
		embedded    bool
		dir         string
		servers     int
		stuffing    bool
		layout      string
		opts        fusefs.Options
		allowOther  bool
		syncOnClose bool
		debug       bool
		directIO    string
		readAhead   = int64(4 << 20)
		writeBehind = int64(8 << 20)
		memory      = int64(fusefs.DefaultMemory)
		mf          metricsFlags
	)
	cmd := &cobra.Command{
		Use:   "mount MOUNTPOINT",
		Short: "Mount the store as a POSIX file system (FUSE) until Ctrl-C or 'pario umount'",
		Long: `Mount a pario cluster on MOUNTPOINT, an existing directory, so that any program
reads and writes striped pario files through ordinary system calls. The mount is
served by this process, in the foreground: Ctrl-C or SIGTERM unmounts it and
exits 0, as does 'pario umount MOUNTPOINT' from elsewhere. Without --embedded
it mounts the cluster of the cluster file (--cluster, $PARIO_CLUSTER, or the
one 'pario up' wrote); with --embedded it starts a cluster in this process
first (data under --dir, or a temporary directory removed on exit).

  mkdir -p /mnt/pario
  pario mount /mnt/pario &                    # the running cluster
  pario mount --embedded /mnt/pario &         # a throwaway cluster of 4 I/O servers
  cp big.dat /mnt/pario/ && pario umount /mnt/pario

Consistency is close-to-open: what one mount closed, another sees at open.
Layouts are extended attributes:

  getfattr -n user.pario.layout /mnt/pario/big.dat
  mkdir /mnt/pario/runs
  setfattr -n user.pario.layout -v simple_stripe:strip_size=1m /mnt/pario/runs

Files keep their owner, group and mode, and the metadata server checks every
request as its caller: with --allow-other each user acts as itself (a cluster
file's root-squash makes root nobody). Hard and symbolic links work as on a
local disk. See docs/mount.md.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			log := newLogger()
			var err error
			if opts.DirectIO, err = fusefs.ParseDirectIO(directIO); err != nil {
				return usageError{fmt.Errorf("--direct-io: %w", err)}
			}
			if err := checkMountTimeouts(&opts); err != nil {
				return usageError{err}
			}
			stopMetrics, err := mf.start(log)
			if err != nil {
				return err
			}
			defer stopMetrics()
			var (
				c    *client.Client
				desc string
			)
			if embedded {
				if servers < 1 {
					return usageError{fmt.Errorf("--servers %d: want at least 1 I/O server", servers)}
				}
				l, err := parseOptionalLayout(layout)
				if err != nil {
					return usageError{err}
				}
				if dir == "" {
					tmp, err := os.MkdirTemp("", "pario-mount-")
					if err != nil {
						return err
					}
					defer os.RemoveAll(tmp)
					dir = tmp
				}
				local, err := cluster.Start(ctx, cluster.Config{
					Dir: dir, DataServers: servers, Stuffing: stuffing, DefaultLayout: l, Logger: log,
					Observe: mf.observe(),
				})
				if err != nil {
					return err
				}
				defer local.Close()
				co := client.Options{Meta: local.Meta.Addr, Secret: local.Secret, Endpoint: fusefs.EndpointOptions()}
				mf.observeClient(&co)
				c, err = client.Dial(ctx, co)
				if err != nil {
					return err
				}
				desc = fmt.Sprintf("embedded cluster in %s (cluster file %s)", dir, local.ClusterFile)
			} else {
				if cmd.Flags().Changed("dir") || cmd.Flags().Changed("servers") || cmd.Flags().Changed("stuffing") || cmd.Flags().Changed("layout") {
					return usageError{fmt.Errorf("--dir, --servers, --stuffing and --layout go with --embedded")}
				}
				if c, err = dialForMount(ctx, mf.observeClient); err != nil {
					return err
				}
				desc = "cluster of " + clusterFilePath()
			}
			defer c.Close()
			opts.Logger = log
			opts.AllowOther, opts.SyncOnClose, opts.Debug = allowOther, syncOnClose, debug
			ra := readAhead
			// Whole KiB, rounded up: below 1k it would be 0, the default.
			opts.ReadAheadKB = int((ra + 1023) / 1024)
			if ra == 0 {
				opts.ReadAheadKB = -1
			}
			wb := writeBehind
			opts.WriteBehind = wb
			if wb == 0 {
				opts.WriteBehind = -1
			}
			opts.Memory = memory
			if !embedded {
				// The process serves only the mount: hold the Go heap near
				// the budget (servers run in it with --embedded, and have
				// budgets of their own).
				runtimedebug.SetMemoryLimit(fusefs.MemoryLimit(memory))
			}
			mounted := mf.observeMount(&opts)
			srv, err := fusefs.Mount(c, args[0], opts)
			if errors.Is(err, syscall.ENOTCONN) {
				return fmt.Errorf("%w (a mount whose process died is still there: 'pario umount %s' clears it)", err, quoteName(args[0]))
			}
			if err != nil {
				return err
			}
			mounted(srv)
			fmt.Printf("pario mounted on %s: %s, %d I/O servers\n", srv.Dir, desc, len(c.Servers()))
			fmt.Printf("unmount with Ctrl-C here or: pario umount %s\n", srv.Dir)
			select {
			case <-ctx.Done():
				fmt.Printf("unmounting %s\n", srv.Dir)
				return srv.Unmount()
			case <-srv.Done():
				fmt.Printf("%s was unmounted\n", srv.Dir)
				return nil
			}
		},
	}
	f := cmd.Flags()
	f.BoolVar(&embedded, "embedded", false, "start a metadata server and I/O servers in this process and mount them")
	f.StringVar(&dir, "dir", "", "with --embedded: data directory (default: a temporary one, removed on exit)")
	f.IntVar(&servers, "servers", 4, "with --embedded: number of I/O servers")
	f.BoolVar(&stuffing, "stuffing", false, "with --embedded: keep small files on one datafile until they outgrow the first strip")
	f.StringVar(&layout, "layout", "", "with --embedded: default layout for new files, e.g. simple_stripe:strip_size=1m")
	f.DurationVar(&opts.EntryTimeout, "entry-timeout", time.Second, "how long the kernel caches directory names without a lease (0: not at all; file names are looked up at every open)")
	f.DurationVar(&opts.AttrTimeout, "attr-timeout", 0, "how long the kernel caches sizes and times (0: stat always asks the servers)")
	f.DurationVar(&opts.OpTimeout, "op-timeout", fusefs.DefaultOpTimeout, "longest wait for the servers in one request before it fails with EIO (longer than a restarted metadata server's grace, 45 s)")
	f.Var(units.SizeFlag(&readAhead, units.AllowZero), "read-ahead", "kernel read-ahead of the mount (as root; 0 leaves the kernel's 128k)")
	f.Var(units.SizeFlag(&writeBehind, units.AllowZero), "write-behind", "writes per open file that may still be on their way to the servers after write(2) returns (0: none)")
	f.Var(units.SizeFlag(&memory), "memory", "memory for write-behind over all open files; writers wait when it is full (the process's Go heap is held near it)")
	f.StringVar(&directIO, "direct-io", "writers", `which descriptors bypass the kernel's page cache, so that writers of one file write in parallel:
writers: write-only ones, and read-write ones that create the file or open one another writes
(IOR, MPI-IO and HDF5 open O_RDWR); wronly: write-only ones only (read-write ones keep the page cache,
for programs that read back what they write in small pieces); rdwr: every descriptor that writes; none: all cached`)
	f.BoolVar(&syncOnClose, "sync-on-close", false, "close(2) of a written file waits until its data is on disk on the I/O servers")
	f.BoolVar(&allowOther, "allow-other", false, "let other users use the mount, each as itself (needs user_allow_other in /etc/fuse.conf unless root)")
	f.BoolVar(&debug, "debug", false, "log every FUSE request")
	mf.add(cmd)
	return cmd
}

// checkMountTimeouts refuses the times fusefs.Options would otherwise
// replace in silence (a zero or negative --op-timeout became 30s, a
// negative --entry-timeout or --attr-timeout 0) and turns an
// --entry-timeout of 0 into the Options' "none" (its zero value means
// the 1s default).
func checkMountTimeouts(o *fusefs.Options) error {
	if o.OpTimeout <= 0 {
		return fmt.Errorf("--op-timeout %v: want a positive time such as 30s", o.OpTimeout)
	}
	if o.EntryTimeout < 0 {
		return fmt.Errorf("--entry-timeout %v: want 0 (no caching) or a positive time such as 1s", o.EntryTimeout)
	}
	if o.AttrTimeout < 0 {
		return fmt.Errorf("--attr-timeout %v: want 0 (no caching) or a positive time such as 1s", o.AttrTimeout)
	}
	if o.EntryTimeout == 0 {
		o.EntryTimeout = -1
	}
	return nil
}

// dialForMount connects to the cluster of the cluster file with the
// mount's bounded retries and timeouts.
func dialForMount(ctx context.Context, opts ...func(*client.Options)) (*client.Client, error) {
	cf, err := loadClusterFile(ctx)
	if err != nil {
		return nil, err
	}
	secret, err := cf.Secret()
	if err != nil {
		return nil, err
	}
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	eo := fusefs.EndpointOptions()
	eo.Protection = cf.Protection
	co := client.Options{Meta: cf.Meta, Secret: secret, Endpoint: eo}
	for _, o := range opts {
		o(&co)
	}
	return client.Dial(dctx, co)
}

func newUmountCommand() *cobra.Command {
	var lazy bool
	cmd := &cobra.Command{
		Use:   "umount MOUNTPOINT",
		Short: "Unmount a pario mount (fusermount3 -u, or umount2 as root)",
		Long: `Unmount a file system mounted with 'pario mount'; its 'pario mount' process
then exits 0. A mount in use (an open file, a shell's working directory) is
refused with EBUSY unless --lazy, which detaches it at once and lets it go
when the last user leaves. This also clears a mount whose process died.
Only FUSE mounts are unmounted: anything else (a tmpfs, a disk) is left
mounted, with an error, even as root.

  pario umount /mnt/pario
  pario umount --lazy /mnt/pario`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			err := fusefs.Unmount(args[0], lazy)
			if errors.Is(err, syscall.EBUSY) && !lazy {
				return fmt.Errorf("%w (a process has a file open or its working directory there; 'pario umount --lazy %s' detaches it now)", err, quoteName(args[0]))
			}
			return err
		},
	}
	cmd.Flags().BoolVarP(&lazy, "lazy", "z", false, "detach now even if busy (MNT_DETACH, fusermount3 -z)")
	return cmd
}

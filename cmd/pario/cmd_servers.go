package main

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/pario/pario/cluster"
	"github.com/pario/pario/dist"
	"github.com/pario/pario/server/meta"
	"github.com/pario/pario/units"
	"github.com/pario/pario/wire"
)

func newUpCommand() *cobra.Command {
	var (
		dir      string
		servers  int
		host     string
		port     int
		stuffing bool
		layout   string
		limits   cluster.Limits
		adopt    bool
		protect  string
		mf       metricsFlags
		emu      cluster.Emulation
		metaSync syncIntervalFlag
	)
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start a metadata server and N I/O servers in this process",
		Long: `Start a whole pario cluster in this process: one metadata server and --servers
I/O servers (default 4), listening on --host (default 127.0.0.1), with all
data under --dir. It writes DIR/cluster, which the other commands read, and
runs until interrupted (Ctrl-C or SIGTERM), syncing data on the way out.
Data persists: running 'pario up' again on the same --dir brings it back.
Commands started while it is starting ('pario up &' and the next line of
a script) wait for its cluster file. It holds DIR/cluster.lock while it
runs: a second 'pario up' on DIR is refused, and the cluster file of a
'pario up' that was killed is not used.

  pario up                          # default data directory, 4 I/O servers
  pario up --dir /scratch/pario --servers 8 --layout simple_stripe:strip_size=1m

An emulated cluster on one machine (I/O server i stands for node i, with
a disk of its own): --disk-rate caps each I/O server's datafile reads and
writes, --disk-seek charges each one that does not continue the previous
one on its datafile (two ranks interleaving on one server pay it on every
request); --lock-revoke emulates Lustre's extent locks, one writer per
client or per process writing through a mount, and charges each write
that takes a lock from another writer (two ranks alternating strips of one
datafile pay it on most writes: docs/hdf5.md); --net-rate and
--net-rate-local cap each client's link to the I/O server of another node
and of its own node (pario mcmc's ranks say which node they are on). The
rates go into the cluster file (docs/mfg.md).

  pario up --servers 8 --disk-rate 40MB/s --net-rate 100MB/s --net-rate-local 1GB/s
  pario up --servers 10 --disk-rate 4MB/s --disk-seek 10ms --lock-revoke 65ms`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := parseOptionalLayout(layout)
			if err != nil {
				return usageError{err}
			}
			ports, err := cluster.UpPorts(servers, port, l, layout)
			if err != nil {
				return usageError{err}
			}
			prot, err := wire.ParseProtection(protect)
			if err != nil {
				return usageError{fmt.Errorf("--wire-protection: %w", err)}
			}
			if err := emu.Check(); err != nil {
				return usageError{fmt.Errorf("--%w", err)}
			}
			if dir == "" && cmd.Flags().Changed("dir") {
				// As an empty argument: it names no directory, and the
				// default is someone else's cluster, perhaps.
				return usageError{errors.New("--dir is empty: '' names no directory (leave --dir out for the default, " + defaultDataDir() + ")")}
			}
			if dir == "" {
				dir = defaultDataDir()
			} else if err := checkDirFlag("--dir", dir); err != nil {
				return err
			}
			logger := newLogger()
			stopMetrics, err := mf.start(logger)
			if err != nil {
				return err
			}
			defer stopMetrics()
			c, err := cluster.Start(cmd.Context(), cluster.Config{
				Dir: dir, DataServers: servers, Host: host, Ports: ports,
				Stuffing: stuffing, DefaultLayout: l, Logger: logger, AdoptData: adopt, MetaSyncInterval: metaSync.options(),
				Limits: limits, Listen: netListen, Protection: prot, Observe: mf.observe(),
				Emulation: emu,
			})
			if err != nil && cmd.Context().Err() != nil {
				// Ctrl-C or SIGTERM before it was up: a stop, as later.
				fmt.Println("stopped: interrupted while starting")
				return nil
			}
			if err != nil {
				return err
			}
			c.WriteSummary(os.Stdout, dir != defaultDataDir())
			cluster.LimitHeap(int64(len(c.Data)+1) * wire.DefaultMemoryBudget)
			fmt.Println("press Ctrl-C to stop")
			if err := c.Wait(cmd.Context()); err != nil {
				// A server that no longer accepts must not look alive.
				return errors.Join(err, c.Close())
			}
			fmt.Println("stopping: syncing data")
			return c.Close()
		},
	}
	f := cmd.Flags()
	f.StringVar(&dir, "dir", "", "data directory (default $PARIO_HOME, else ~/.local/share/pario)")
	f.IntVar(&servers, "servers", 4, "number of I/O servers (at least 1)")
	f.StringVar(&host, "host", "127.0.0.1", "address to listen on")
	f.IntVar(&port, "port", 0, "metadata server port; I/O servers take the ports after it (default: any free port)")
	f.BoolVar(&stuffing, "stuffing", false, "keep small files on one datafile until they outgrow the first strip")
	f.StringVar(&layout, "layout", "", "default layout for new files, e.g. simple_stripe:strip_size=1m")
	f.StringVar(&protect, "wire-protection", "aead", "how frames are protected on the network: aead (encrypted and authenticated) or integrity (authenticated, in the clear: trusted networks only); written into the cluster file")
	limitFlags(cmd, &limits)
	f.Var(units.RateFlag(&emu.DiskRate), "disk-rate", "emulated disk: cap each I/O server's datafile reads and writes, bytes/s, decimal (40m = 40MB/s = 40e6; default unlimited)")
	f.DurationVar(&emu.DiskSeek, "disk-seek", 0, "emulated disk: time charged for each datafile read or write that does not start where the previous one on that datafile ended (e.g. 8ms; default none)")
	f.DurationVar(&emu.LockRevoke, "lock-revoke", 0, "emulated disk: emulate Lustre's extent locks and charge this time for each lock a write takes from another writer (e.g. 65ms, a 256 KiB strip at 4MB/s; default none)")
	f.Var(units.RateFlag(&emu.NetRate), "net-rate", "emulated network: cap each client's link to an I/O server of another node, bytes/s, decimal (100m = 100MB/s; default unlimited)")
	f.Var(units.RateFlag(&emu.NetLocalRate), "net-rate-local", "emulated network: cap a client's link to the I/O server of its own node, bytes/s, decimal (1g = 1GB/s; default: --net-rate)")
	f.BoolVar(&adopt, "adopt-data", false, "as pario meta --adopt-data: a new, empty namespace over I/O server directories holding another cluster incarnation's datafiles")
	metaSync.add(cmd)
	mf.add(cmd)
	return cmd
}

// netListen opens the servers' listeners; tests replace it to make one fail.
var netListen cluster.Listener = net.Listen

// syncIntervalFlag is --meta-sync-interval of the commands that run a
// metadata server.
type syncIntervalFlag time.Duration

func (f *syncIntervalFlag) add(cmd *cobra.Command) {
	*f = syncIntervalFlag(meta.DefaultSyncInterval)
	cmd.Flags().DurationVar((*time.Duration)(f), "meta-sync-interval", meta.DefaultSyncInterval,
		"how long an answered namespace change (create, remove, rename...) may wait for the metadata server's fdatasync: a kill -9 of the server never loses one, a power cut loses at most this much (0: every change is fsynced before it is answered, about 4-6x slower; see docs/store.md)")
}

// options is the flag as meta.Options.SyncInterval.
func (f syncIntervalFlag) options() time.Duration {
	if f <= 0 {
		return -1
	}
	return time.Duration(f)
}

// limitFlags adds the connection limit flags of the server commands.
func limitFlags(cmd *cobra.Command, l *cluster.Limits) {
	f := cmd.Flags()
	f.IntVar(&l.MaxConnsPerPeer, "max-conns-per-peer", 0, "connections one host may hold to each server (default 1024, or the cluster file's max-conns-per-peer)")
	f.IntVar(&l.MaxConns, "max-conns", 0, "connections each server accepts at once (default: 3/4 of the open file limit, or the cluster file's max-conns)")
}

func parseOptionalLayout(s string) (dist.Layout, error) {
	if s == "" {
		return dist.Layout{}, nil
	}
	return dist.ParseLayout(s)
}

func newMetaCommand() *cobra.Command {
	var (
		dir        string
		listen     string
		stuffing   bool
		layout     string
		secretFile string
		dataFlags  []string
		limits     cluster.Limits
		adoptData  bool
		renamed    bool
		mf         metricsFlags
		metaSync   syncIntervalFlag
	)
	cmd := &cobra.Command{
		Use:   "meta",
		Short: "Run the metadata server of a cluster described by a cluster file",
		Long: `Run the metadata server on its own (one per cluster). It listens on the
'meta' address of the cluster file (or --listen), keeps the namespace in
DIR/meta.db, and tells clients where the I/O servers of the cluster file are.

A cluster file (see 'pario up', which writes one) looks like:

  secret-file secret
  meta 10.0.0.1:7000
  data data0 10.0.0.2:7001
  data data1 10.0.0.3:7001

  pario meta --cluster /etc/pario/cluster --dir /var/lib/pario/meta

or, without a cluster file:

  pario meta --dir /var/lib/pario/meta --listen 10.0.0.1:7000 --secret-file /etc/pario/secret \
             --data data0=10.0.0.2:7001,data1=10.0.0.3:7001`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := parseOptionalLayout(layout)
			if err != nil {
				return usageError{err}
			}
			if dir == "" {
				return usageError{fmt.Errorf("--dir is required")}
			}
			var servers []cluster.ServerEntry
			if len(dataFlags) > 0 || secretFile != "" {
				// Flags instead of a cluster file.
				if len(dataFlags) == 0 || secretFile == "" || listen == "" {
					return usageError{fmt.Errorf("without a cluster file, give --listen, --secret-file and --data")}
				}
				if servers, err = parseDataFlags(dataFlags); err != nil {
					return usageError{err}
				}
			}
			secret, cf, err := serverSecret(secretFile)
			if err != nil {
				return err
			}
			if cf != nil {
				if err := cf.CheckServers(); err != nil {
					return fmt.Errorf("%s: %w", clusterFilePath(), err)
				}
				servers = cf.Data
				if listen == "" {
					listen = cf.Meta
				}
				lock, err := cluster.LockServed(clusterFilePath())
				if err != nil {
					return err
				}
				defer lock.Unlock()
			}
			logger := newLogger()
			stopMetrics, err := mf.start(logger)
			if err != nil {
				return err
			}
			defer stopMetrics()
			lim, prot, _, squash := cluster.ServerSettings(cf, limits)
			return cluster.RunMeta(cmd.Context(), netListen, listen, cluster.MetaServerConfig{
				Dir: dir, Secret: secret, Data: servers, Stuffing: stuffing, DefaultLayout: l, Logger: logger,
				Limits: lim, Protection: prot, AdoptData: adoptData, RenameServers: renamed, SyncInterval: metaSync.options(), Observe: mf.observe(),
				RootSquash: squash,
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&dir, "dir", "", "directory for the namespace database (required)")
	f.StringVar(&listen, "listen", "", "address to listen on (default: the cluster file's meta address)")
	f.BoolVar(&stuffing, "stuffing", false, "keep small files on one datafile until they outgrow the first strip")
	f.StringVar(&layout, "layout", "", "default layout for new files, e.g. simple_stripe:strip_size=1m")
	f.StringVar(&secretFile, "secret-file", "", "shared secret file (instead of a cluster file)")
	f.StringSliceVar(&dataFlags, "data", nil, "I/O servers as NAME=HOST:PORT, in server-index order (instead of a cluster file)")
	limitFlags(cmd, &limits)
	f.BoolVar(&renamed, "rename-servers", false, "accept I/O server names that differ from those the database recorded at their place in the order (servers renamed on purpose; write each new name into its data directory's SERVER file too)")
	f.BoolVar(&adoptData, "adopt-data", false, "let I/O servers holding another cluster incarnation's datafiles join this new, empty namespace (their old datafiles become orphans for pario fsck; see docs/store.md)")
	metaSync.add(cmd)
	mf.add(cmd)
	return cmd
}

// parseDataFlags turns --data NAME=HOST:PORT values into cluster entries,
// checked as a cluster file's lines are.
func parseDataFlags(vals []string) ([]cluster.ServerEntry, error) {
	servers, err := cluster.ParseServers(vals)
	if err != nil {
		return nil, fmt.Errorf("--data %w", err)
	}
	return servers, nil
}

func newDataCommand() *cobra.Command {
	var (
		dir        string
		listen     string
		name       string
		secretFile string
		limits     cluster.Limits
		budget     int64
		mf         metricsFlags
	)
	cmd := &cobra.Command{
		Use:   "data",
		Short: "Run one I/O server of a cluster described by a cluster file",
		Long: `Run one I/O server. --name picks its line in the cluster file ('data NAME
HOST:PORT'); it listens on that address (or --listen) and keeps one local
file per pario file under --dir, touching nothing outside it.

  pario data --cluster /etc/pario/cluster --name data0 --dir /var/lib/pario/data0
  pario data --name data0 --dir /srv/pario --listen 10.0.0.2:7001 --secret-file /etc/pario/secret`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" || name == "" {
				return usageError{fmt.Errorf("--dir and --name are required")}
			}
			if cmd.Flags().Changed("memory-budget") && budget < 1<<20 {
				return usageError{fmt.Errorf("--memory-budget %s: want at least 1m", units.FormatSize(budget))}
			}
			if secretFile != "" && listen == "" {
				return usageError{fmt.Errorf("--secret-file without a cluster file needs --listen")}
			}
			secret, cf, err := serverSecret(secretFile)
			if err != nil {
				return err
			}
			if cf != nil {
				addr, ok := cf.DataAddr(name)
				if !ok {
					return usageError{fmt.Errorf("no I/O server named %q in %s", name, clusterFilePath())}
				}
				listen = cmp.Or(listen, addr)
			}
			logger := newLogger()
			stopMetrics, err := mf.start(logger)
			if err != nil {
				return err
			}
			defer stopMetrics()
			lim, prot, emu, _ := cluster.ServerSettings(cf, limits)
			return cluster.RunData(cmd.Context(), netListen, listen, cluster.DataServerConfig{
				Name: name, Dir: dir, Secret: secret, Logger: logger.With("server", name),
				Limits: lim, MemoryBudget: budget, Protection: prot, Observe: mf.observe(), Emulation: emu,
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&dir, "dir", "", "data directory (required)")
	f.StringVar(&name, "name", "", "this server's name in the cluster file (required)")
	f.StringVar(&listen, "listen", "", "address to listen on (default: this server's address in the cluster file)")
	f.StringVar(&secretFile, "secret-file", "", "shared secret file (instead of a cluster file; needs --listen)")
	f.Var(units.SizeFlag(&budget), "memory-budget", "memory for request data and read answers in flight, e.g. 1g (default 256m: four of the largest frames)")
	limitFlags(cmd, &limits)
	mf.add(cmd)
	return cmd
}

// serverSecret reads the shared secret from --secret-file when given, else
// from the cluster file, which it then also returns.
func serverSecret(secretFile string) ([]byte, *cluster.File, error) {
	if secretFile != "" {
		secret, err := cluster.ReadSecret(secretFile)
		return secret, nil, err
	}
	// Read as it is: whether a `pario up` that wrote it still runs
	// (cluster.Await's question for clients) does not matter to a server
	// told to serve what it describes.
	cf, err := cluster.ReadFile(clusterFilePath())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("no cluster file at %s: point --cluster / $PARIO_CLUSTER at the cluster's file, or give --secret-file and the servers' flags instead", clusterFilePath())
	}
	if err != nil {
		return nil, nil, err
	}
	secret, err := cf.Secret()
	return secret, cf, err
}

func newSecretCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "secret FILE",
		Short: "Write a new random shared secret for a cluster file",
		Long: `Write a fresh random 256-bit secret (hex) to FILE, readable by its owner only
(mode 0600), making FILE's directory (mode 0700) if it is missing. It
refuses to overwrite an existing file. Copy FILE to every host
of the cluster, keeping it 0600: servers and clients refuse a secret file
that others may read, and secrets under 128 bits or visibly not random.

  pario secret /etc/pario/secret`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			// (An empty FILE is refused with every empty argument: main.go.)
			if args[0] == "-" {
				return usageError{fmt.Errorf("FILE -: pario secret writes a file of mode 0600, not standard output (name the file, e.g. ./secret)")}
			}
			if err := cluster.CreateSecretFile(args[0]); err != nil {
				return err
			}
			fmt.Printf("wrote a new secret to %s (mode 0600)\n", args[0])
			return nil
		},
	}
}

// checkDirFlag refuses a directory flag that names something else than a
// directory, or a path through a file, naming the flag (usage error). A
// missing directory is fine: the servers make it.
func checkDirFlag(flag, dir string) error {
	for p := filepath.Clean(dir); ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err == nil {
			if !fi.IsDir() {
				if p == filepath.Clean(dir) {
					return usageError{fmt.Errorf("%s %s: not a directory", flag, dir)}
				}
				return usageError{fmt.Errorf("%s %s: %s is not a directory", flag, dir, p)}
			}
			return nil
		}
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) || p == filepath.Dir(p) {
			return nil // the servers' own errors say the rest
		}
	}
}

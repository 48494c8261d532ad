package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/pario/pario/client"
	"github.com/pario/pario/cluster"
	"github.com/pario/pario/rank"
	"github.com/pario/pario/server/meta"
	"github.com/pario/pario/wire"
)

var (
	globalClusterFile string
	globalLogLevel    string
	// globalOpTimeout bounds each call a command makes to a server, its
	// retries included (--op-timeout): a hung server (stopped, or its disk
	// stuck) fails the command after this long, naming the server.
	globalOpTimeout = defaultOpTimeout
)

// defaultOpTimeout is --op-timeout's default, the client library's
// (wire.EndpointOptions.Timeout).
const defaultOpTimeout = 60 * time.Second

// checkGlobalFlags refuses global flags no command can work with.
func checkGlobalFlags() error {
	if globalOpTimeout <= 0 {
		return usageError{fmt.Errorf("--op-timeout %v: want a positive time such as 30s", globalOpTimeout)}
	}
	return nil
}

// defaultDataDir is where `pario up` keeps its data when given no --dir:
// $PARIO_HOME, else $XDG_DATA_HOME/pario, else ~/.local/share/pario.
func defaultDataDir() string {
	if d := os.Getenv("PARIO_HOME"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "pario")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "share", "pario")
	}
	return filepath.Join(os.TempDir(), "pario")
}

// clusterFilePath finds the cluster file: --cluster, $PARIO_CLUSTER, or
// the one `pario up` writes into the default data directory.
func clusterFilePath() string {
	if globalClusterFile != "" {
		return globalClusterFile
	}
	if p := os.Getenv("PARIO_CLUSTER"); p != "" {
		return p
	}
	return filepath.Join(defaultDataDir(), "cluster")
}

// How long a command waits for the cluster file of a `pario up` that is
// starting: so that a script's `pario up &` followed by a command works
// (cluster.Await).
var (
	// appearWait: no cluster file, or only one a killed `pario up` left,
	// and no `pario up` holding the directory yet; one started a moment
	// ago (`pario up &` on the line before) may not have run far enough
	// to take it.
	appearWait = 2 * time.Second
	// startWait: a `pario up` holds the directory (DIR/cluster.lock) and
	// has not written the cluster file yet.
	startWait = time.Minute
)

// loadClusterFile reads the cluster file, waiting for a `pario up` that is
// starting to write it (see appearWait and startWait).
func loadClusterFile(ctx context.Context) (*cluster.File, error) {
	cf, err := cluster.Await(ctx, clusterFilePath(), appearWait, startWait)
	if errors.Is(err, cluster.ErrNoCluster) {
		return nil, fmt.Errorf("%w: start one with `pario up`, or point --cluster / $PARIO_CLUSTER at yours", err)
	}
	return cf, err
}

// connect dials the cluster named by the cluster file.
func connect(ctx context.Context) (*client.Client, error) { return connectFrom(ctx, -1) }

// connectFrom dials the cluster as a client on emulated node node (-1:
// none), whose links to the I/O servers the cluster file's network rates
// slow down (cluster.Emulation).
func connectFrom(ctx context.Context, node int) (*client.Client, error) {
	cf, err := loadClusterFile(ctx)
	if err != nil {
		return nil, err
	}
	secret, err := cf.Secret()
	if err != nil {
		return nil, err
	}
	// The connection's first call (the metadata server's list of I/O
	// servers) is bounded by --op-timeout like every other.
	ctx, cancel := context.WithTimeout(ctx, globalOpTimeout)
	defer cancel()
	eo := wire.EndpointOptions{Protection: cf.Protection, Timeout: globalOpTimeout}
	return client.Dial(ctx, client.Options{Meta: cf.Meta, Secret: secret, Endpoint: eo, Links: cf.Emulation.Links(node)})
}

// storePath strips the optional "pario:" prefix of a path in the store and
// makes it absolute.
func storePath(p string) string {
	p = strings.TrimPrefix(p, "pario:")
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	return p
}

func isStorePath(p string) bool { return strings.HasPrefix(p, "pario:") }

// applyDir checks the directory an --apply flag names (arg, as typed) and
// returns its store path. A path that cannot be in the store (a . or ..
// component), a local path that the store does not have, or a file are
// mistakes in the call (exit status 2); a store directory that is not
// there is an error like any other lookup (status 1). Each message names
// the path.
func applyDir(ctx context.Context, c *client.Client, arg string) (string, error) {
	if arg == "" {
		return "", usageError{fmt.Errorf("--apply needs a directory of the store, e.g. pario:/runs")}
	}
	dir := storePath(arg)
	depth := 0
	for _, el := range strings.Split(dir, "/") {
		switch el {
		case "", ".":
		case "..":
			if depth--; depth < 0 {
				return "", usageError{fmt.Errorf("--apply %s: outside the store: it climbs above the store's root (store paths start at /, e.g. pario:/runs)", arg)}
			}
		default:
			depth++
		}
	}
	if strings.Contains("/"+dir+"/", "/./") || strings.Contains("/"+dir+"/", "/../") {
		return "", usageError{fmt.Errorf("--apply %s: a store path has no . or .. components: say %s", arg, path.Clean(dir))}
	}
	a, err := c.Lookup(ctx, dir)
	if errors.Is(err, fs.ErrNotExist) && !isStorePath(arg) {
		if _, lerr := os.Stat(arg); lerr == nil {
			return "", usageError{fmt.Errorf("--apply %s: outside the store: a local path, and the store has no %s (--apply takes a directory of the store, e.g. pario:/runs)", arg, dir)}
		}
	}
	if err != nil {
		return "", fmt.Errorf("--apply %s: %w", arg, err)
	}
	if a.Kind != meta.KindDir {
		return "", usageError{fmt.Errorf("--apply %s: not a directory: --apply sets the default layout of a directory", arg)}
	}
	return dir, nil
}

func newLogger() *slog.Logger {
	var level slog.Level
	if err := level.UnmarshalText([]byte(globalLogLevel)); err != nil {
		level = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

// errNotEmpty is what removing a non-empty directory fails with.
var errNotEmpty error = syscall.ENOTEMPTY

// interrupted reports whether a rank's err comes of an interrupt: this
// process's (Ctrl-C, SIGTERM: ctx ended), or another rank's, which gave
// up the collective call this one is in before this one's own signal came
// (rank.RankError matches context.Canceled then). Either way the run was
// stopped, not broken, and is reported once, as interrupted.
func interrupted(ctx context.Context, err error) bool {
	var peer *rank.RankError
	return ctx.Err() != nil || errors.As(err, &peer) && errors.Is(peer, context.Canceled)
}

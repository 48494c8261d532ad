package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/pario/pario/client"
	"github.com/pario/pario/cluster"
	"github.com/pario/pario/wire"
)

var (
	globalClusterFile string
	globalLogLevel    string
)

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

func loadClusterFile() (*cluster.File, error) {
	p := clusterFilePath()
	cf, err := cluster.ReadFile(p)
	if os.IsNotExist(err) {
		return nil, fmt.Errorf("no cluster file at %s: start one with `pario up`, or point --cluster / $PARIO_CLUSTER at yours", p)
	}
	return cf, err
}

// connect dials the cluster named by the cluster file.
func connect(ctx context.Context) (*client.Client, error) {
	cf, err := loadClusterFile()
	if err != nil {
		return nil, err
	}
	secret, err := cf.Secret()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return client.Dial(ctx, client.Options{Meta: cf.Meta, Secret: secret, Endpoint: wire.EndpointOptions{Protection: cf.Protection}})
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

func newLogger() *slog.Logger {
	var level slog.Level
	if err := level.UnmarshalText([]byte(globalLogLevel)); err != nil {
		level = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

// errNotEmpty is what removing a non-empty directory fails with.
var errNotEmpty error = syscall.ENOTEMPTY

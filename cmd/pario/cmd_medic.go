package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pario/pario/medic"
	_ "github.com/pario/pario/medic/plugin/blast"
	_ "github.com/pario/pario/medic/plugin/periodic"
	_ "github.com/pario/pario/medic/plugin/zstd"
)

func newMedicCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "medic",
		Short: "Move outputs between sites as small metadata and regenerate them there (ParaMEDIC)",
		Long: `medic moves an application's output from the compute site to the storage site
as metadata: a plugin turns the output into something much smaller (the hits of
a BLAST search, the differences of a periodic trace, or just zstd), the
metadata is sealed (encrypted or at least checksummed) and sent, and the
storage site regenerates the output with its own resources, checks it against
the original's SHA-256, and only then moves it into place.

  pario medic keygen site.key                       # once; copy it to both sites
  pario medic serve --key site.key --dir archive &  # storage site (here, this host)
  pario medic plan report.txt --all --bandwidth 1MB/s
  pario medic send report.txt localhost:7070 --key site.key --auto   # or STORAGE-HOST:7070

Plugins: ` + strings.Join(medic.Names(), ", ") + `. See docs/medic.md.`,
	}
	cmd.AddCommand(newMedicKeygenCommand(), newMedicServeCommand(), newMedicSendCommand(), newMedicPlanCommand())
	return cmd
}

func newMedicKeygenCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "keygen FILE",
		Short: "Write a new random key file (32 bytes, hex, mode 0600)",
		Long: `Write a new random key file. Both sites need the same file: the sender proves
it holds it when it connects, and it seals and opens encrypted metadata.
Copy it over a secure channel (scp). An existing file is never overwritten.`,
		Args: exactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			if err := medic.GenerateKey(args[0]); err != nil {
				return err
			}
			fmt.Printf("wrote %s\n", args[0])
			return nil
		},
	}
}

func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usageError{fmt.Errorf("%s takes %d argument(s), got %d; see --help", cmd.CommandPath(), n, len(args))}
		}
		return nil
	}
}

// parseKV parses repeated key=value flags.
func parseKV(flag string, kvs []string) (map[string]string, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usageError{fmt.Errorf("--%s %q: want KEY=VALUE", flag, kv)}
		}
		m[k] = v
	}
	return m, nil
}

func loadKeyFlag(path string) ([]byte, error) {
	if path == "" {
		return nil, usageError{errors.New("--key FILE is required (make one with `pario medic keygen FILE` and copy it to both sites)")}
	}
	return medic.LoadKey(path)
}

// checkResources is medic.CheckResources with a wrong resource a usage
// error naming the flag.
func checkResources(ctx context.Context, res map[string]string) error {
	err := medic.CheckResources(ctx, res)
	var re *medic.ResourceError
	if errors.As(err, &re) {
		return usageError{fmt.Errorf("--resource %s=%s: %w", re.Key, re.Value, re.Err)}
	}
	return err
}

func newMedicServeCommand() *cobra.Command {
	var (
		listen, keyFile, dir, to, staging, cert, keyPEM string
		resources                                       []string
		maxConns, maxPerPeer, maxRegens                 int
		stagingTTL                                      time.Duration
	)
	cmd := &cobra.Command{
		Use:   "serve --key FILE (--dir DIR | --to pario:/DIR) [--listen ADDR]",
		Short: "Run the storage-site receiver: verify, regenerate, check, store",
		Long: `Run the storage-site daemon. It accepts senders that hold the same key file,
stages each container under --staging (so an interrupted transfer resumes
where it stopped), checks every chunk, regenerates the output with the plugin
named in the container, checks its SHA-256 against the original's, and only
then renames it into --dir (or into a directory of the pario store with
--to pario:/DIR, using the cluster file). On any failure nothing is left
under the destination name and the sender is told why. Programs that
plugins run die with the receiver; a receiver started on the staging
directory of one that was killed removes what it left (and logs it).

Plugins find local resources through --resource, e.g.
  --resource blast.db=/data/nr --resource blast.bin=/usr/bin
  --resource blast.workers=8   (BLAST searches at once; default: the CPUs)
  --resource blast.chunks=32   (searches in all; default: 4 per worker)
Each is checked at the start (blast.db with blastdbcmd -info): a wrong one is
refused then, not at the first regeneration that needs it.

TLS: --tls-cert and --tls-key (PEM); senders then use --tls (and --tls-ca).`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if (dir == "") == (to == "") {
				return usageError{errors.New("give exactly one of --dir DIR and --to pario:/DIR")}
			}
			for _, l := range []struct {
				flag string
				v    int
			}{{"--max-conns", maxConns}, {"--max-conns-per-peer", maxPerPeer}, {"--max-regens", maxRegens}} {
				if l.v < 1 {
					return usageError{fmt.Errorf("%s %d: want at least 1", l.flag, l.v)}
				}
			}
			if stagingTTL == 0 {
				return usageError{errors.New("--staging-ttl 0 would remove every staged part at once: give a duration, or -1s to keep them")}
			}
			res, err := parseKV("resource", resources)
			if err != nil {
				return err
			}
			// Now, not at the first regeneration that needs one.
			if err := checkResources(cmd.Context(), res); err != nil {
				return err
			}
			key, err := loadKeyFlag(keyFile)
			if err != nil {
				return err
			}
			var store medic.Store
			if dir != "" {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					return err
				}
				store = medic.DirStore(dir)
				if staging == "" {
					staging = filepath.Join(dir, ".medic-staging")
				}
			} else {
				if !isStorePath(to) {
					return usageError{fmt.Errorf("--to %q: want pario:/DIR", to)}
				}
				c, err := connect(cmd.Context())
				if err != nil {
					return err
				}
				defer c.Close()
				store = medic.ParioStore(c, storePath(to))
				if staging == "" {
					staging = filepath.Join(defaultDataDir(), "medic-staging")
				}
			}
			var tc *tls.Config
			if cert != "" || keyPEM != "" {
				if cert == "" || keyPEM == "" {
					return usageError{errors.New("--tls-cert and --tls-key go together")}
				}
				kp, err := tls.LoadX509KeyPair(cert, keyPEM)
				if err != nil {
					return fmt.Errorf("TLS certificate: %w", err)
				}
				tc = &tls.Config{Certificates: []tls.Certificate{kp}, MinVersion: tls.VersionTLS13}
			}
			srv, err := medic.NewServer(medic.ServerConfig{Key: key, Store: store, StagingDir: staging, Resources: res, TLS: tc, Logger: newLogger(),
				MaxConns: maxConns, MaxConnsPerPeer: maxPerPeer, StagingTTL: stagingTTL, MaxRegens: maxRegens})
			if err != nil {
				return err
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return err
			}
			proto := "tcp"
			if tc != nil {
				proto = "tls"
			}
			fmt.Printf("pario medic serve: listening on %s (%s), storing into %s, staging in %s, plugins %s\n",
				ln.Addr(), proto, store, staging, strings.Join(medic.Names(), ","))
			go func() {
				<-cmd.Context().Done()
				srv.Close()
			}()
			return srv.Serve(ln)
		},
	}
	f := cmd.Flags()
	f.StringVar(&listen, "listen", ":7070", "TCP address to listen on")
	f.StringVar(&keyFile, "key", "", "shared key `FILE` (make one with: pario medic keygen FILE)")
	f.StringVar(&dir, "dir", "", "store outputs in this local directory")
	f.StringVar(&to, "to", "", "store outputs in this pario directory (pario:/DIR)")
	f.StringVar(&staging, "staging", "", "keep partial uploads here (default DIR/.medic-staging, or DATA_DIR/medic-staging with --to)")
	f.StringArrayVar(&resources, "resource", nil, "local resource for plugins, KEY=VALUE (repeatable)")
	f.StringVar(&cert, "tls-cert", "", "TLS certificate (PEM)")
	f.StringVar(&keyPEM, "tls-key", "", "TLS private key (PEM)")
	f.IntVar(&maxRegens, "max-regens", medic.DefaultMaxRegens, "regenerations run at once; outputs arriving meanwhile wait their turn (each may search on every CPU)")
	f.DurationVar(&stagingTTL, "staging-ttl", medic.DefaultStagingTTL, "remove staged parts no send has touched for this long (-1s: keep them)")
	f.IntVar(&maxConns, "max-conns", medic.DefaultMaxConns, "connections held at once; more are refused with the reason")
	f.IntVar(&maxPerPeer, "max-conns-per-peer", medic.DefaultMaxConnsPerPeer, "connections one host may hold at once (raise it for many senders behind one NAT)")
	return cmd
}

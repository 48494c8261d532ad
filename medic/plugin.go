package medic

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"sync"
)

// Plugin turns an application's output into metadata at the compute site
// (Encode) and the metadata back into the very same output at the storage
// site (Decode).
//
// The contract:
//
//   - Regeneration is deterministic and lossless: Decode must write exactly
//     the bytes Encode was given. The framework records the SHA-256 of the
//     original output in the container header and checks the regenerated
//     bytes against it before it keeps anything, so a plugin that cannot
//     reproduce its input fails safely, but it fails.
//   - Encode reads the output from src.Path (and whatever src.Params names)
//     and writes its metadata to meta. Anything the storage site cannot be
//     assumed to have (a query file, program options) belongs in the
//     metadata; only the large shared resources (a database replica, a
//     binary) are looked up at the storage site, through env.Resources.
//   - Decode reads the metadata and writes the regenerated output to out,
//     in order. It may use env.TempDir for scratch files (the framework
//     removes it afterwards). out is a temporary file: on error the
//     framework discards what was written.
//   - Errors name what is missing or wrong so that an operator can act:
//     "blast: replica /data/nr lacks sequence XP_123" rather than "exit
//     status 1". Wrap ErrMissing when the storage site lacks something
//     (a resource, a sequence, a program), so callers can tell it apart
//     from corrupt metadata.
//   - Both halves honour ctx (cancellation) and are safe to call
//     concurrently on different inputs.
type Plugin interface {
	// Name is the registry key and what the container header records;
	// lower case, no spaces ("zstd", "blast", "periodic").
	Name() string
	// Encode writes the metadata for the output src.Path to meta.
	Encode(ctx context.Context, src Source, meta io.Writer) error
	// Decode regenerates the output from meta into out.
	Decode(ctx context.Context, meta io.Reader, out io.Writer, env Env) error
}

// Source is what a plugin encodes, at the compute site.
type Source struct {
	// Path is the output file to be moved.
	Path string
	// Params are plugin-specific settings given by the user
	// (`pario medic send --param key=value`), e.g. for blast the query
	// file, the database and the program options. The framework records
	// them in the container header too (informational; see Env.Params).
	Params map[string]string
	// Dir is the working directory relative paths in Params are taken
	// against ("" means the process's).
	Dir string
}

// Env is what a plugin may use at the storage site.
type Env struct {
	// Resources are the storage site's local resources, configured on
	// `pario medic serve --resource key=value`, conventionally keyed
	// "plugin.what": "blast.db" = "/data/nr", "blast.bin" = "/usr/bin".
	Resources map[string]string
	// Params are the Source.Params the compute site recorded in the
	// container header.
	Params map[string]string
	// TempDir is a private scratch directory, removed after Decode.
	TempDir string
	// Logger receives progress and diagnostics; never nil when the
	// framework calls Decode.
	Logger *slog.Logger
}

// Resource returns env.Resources[key], or an error wrapping ErrMissing that
// tells the operator how to provide it.
func (e Env) Resource(key string) (string, error) {
	if v, ok := e.Resources[key]; ok && v != "" {
		return v, nil
	}
	return "", fmt.Errorf("%w: storage site has no resource %q (start `pario medic serve` with --resource %s=VALUE)", ErrMissing, key, key)
}

// ErrMissing is wrapped by plugins' errors when the storage site lacks
// something regeneration needs (a resource, a sequence in a replica, a
// program).
var ErrMissing = errors.New("storage site lacks what regeneration needs")

var (
	regMu    sync.RWMutex
	registry = map[string]Plugin{}
)

// Register makes a plugin available by name; plugin packages call it from
// init. It panics on an empty or duplicate name.
func Register(p Plugin) {
	regMu.Lock()
	defer regMu.Unlock()
	n := p.Name()
	if n == "" || len(n) > 255 {
		panic("medic: Register: bad plugin name")
	}
	if _, dup := registry[n]; dup {
		panic("medic: Register: duplicate plugin " + n)
	}
	registry[n] = p
}

// Lookup returns the plugin registered under name.
func Lookup(name string) (Plugin, error) {
	regMu.RLock()
	p, ok := registry[name]
	regMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("medic: no plugin %q (have: %v)", name, Names())
	}
	return p, nil
}

// Names lists the registered plugins, sorted.
func Names() []string {
	regMu.RLock()
	defer regMu.RUnlock()
	ns := make([]string, 0, len(registry))
	for n := range registry {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return ns
}

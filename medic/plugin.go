package medic

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sort"
	"strings"
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

// ResourceChecker is implemented by a plugin that can check the storage
// site's resources it uses, so that the receiver refuses a wrong one when
// it starts instead of failing the first regeneration that needs it, on
// the sender's side, long after.
type ResourceChecker interface {
	// CheckResources checks the resources keyed with the plugin's name
	// ("blast.db"); it is given them all, since one may depend on another
	// (blast.bin holds the programs that read blast.db). Its errors are
	// *ResourceError naming the key.
	CheckResources(ctx context.Context, res map[string]string) error
}

// ResourceError is a resource that is wrong: the key and value as given,
// and why.
type ResourceError struct {
	Key, Value string
	Err        error
}

func (e *ResourceError) Error() string {
	return fmt.Sprintf("resource %s=%s: %v", e.Key, e.Value, e.Err)
}

func (e *ResourceError) Unwrap() error { return e.Err }

// CheckResources checks res as `pario medic serve --resource` gives them:
// each key names a registered plugin before its first dot (a key that names
// none would be read by nothing: a typo), and each plugin that implements
// ResourceChecker checks its own. The first wrong one, in key order, is
// returned as a *ResourceError.
func CheckResources(ctx context.Context, res map[string]string) error {
	keys := make([]string, 0, len(res))
	for k := range res {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var checkers []string
	for _, k := range keys {
		name, _, ok := strings.Cut(k, ".")
		if !ok {
			return &ResourceError{Key: k, Value: res[k], Err: errors.New("want PLUGIN.NAME as the key, e.g. blast.db")}
		}
		p, err := Lookup(name)
		if err != nil {
			return &ResourceError{Key: k, Value: res[k], Err: fmt.Errorf("no plugin %q uses it (have: %s)", name, strings.Join(Names(), ", "))}
		}
		if _, ok := p.(ResourceChecker); ok && !slices.Contains(checkers, name) {
			checkers = append(checkers, name)
		}
	}
	for _, name := range checkers {
		p, _ := Lookup(name)
		if err := p.(ResourceChecker).CheckResources(ctx, res); err != nil {
			return err
		}
	}
	return nil
}

package layering

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/pario/pario"

// A rule says which packages of the module the packages matching pkg may
// import in their non-test code. Patterns are module-relative paths; "dir/..."
// matches dir and every package under it. The most specific rule of a
// package applies: its own path, else the longest "dir/..." that matches.
type rule struct {
	pkg   string
	allow []string // patterns, or anyPackage
	pure  bool     // arithmetic only: none of the standard library's I/O packages (impure)
}

// anyPackage allows every package of the module except the programs
// (cmd/..., tools/...), the test-only packages (test/...) and the test
// helpers.
const anyPackage = "*"

// rules is the table docs/ARCHITECTURE.md states
// (TestArchitectureDocStatesTheRules keeps the two the same). Dependencies
// point downwards: pure arithmetic at the bottom, then the protocol, the
// servers, the client, the cluster, what is built on them, and the programs
// at the top. A "dir/..." row leaves room for new packages under dir.
var rules = []rule{
	{pkg: "units", pure: true},
	{pkg: "dist", pure: true},
	{pkg: "wire/...", allow: []string{"wire/..."}},
	{pkg: "vfs/...", allow: []string{"vfs/..."}},
	{pkg: "rank"},
	{pkg: "pattern", allow: []string{"dist"}, pure: true},
	{pkg: "mfg", allow: []string{"dist"}, pure: true},
	{pkg: "mfg/mcmc", allow: []string{"mfg", "dist"}, pure: true},
	{pkg: "hdf5", pure: true},
	{pkg: "hdf5/advise", allow: []string{"hdf5", "pattern", "dist"}, pure: true},
	{pkg: "hdf5/inspect", allow: []string{"internal/filekind"}},
	{pkg: "template", allow: []string{"rank", "template/annot", "template/seg"}},
	{pkg: "template/annot", pure: true},
	{pkg: "template/seg", pure: true},
	{pkg: "template/dock", allow: []string{"template/seg"}, pure: true},
	{pkg: "template/farm", allow: []string{"rank", "template", "template/annot", "template/seg", "template/dock", "client", "internal/child"}},
	{pkg: "server/meta/...", allow: []string{"wire/...", "dist", "server/meta/..."}},
	{pkg: "server/data/...", allow: []string{"wire/...", "vfs/...", "server/data/..."}},
	{pkg: "fsck", pure: true},
	{pkg: "client", allow: []string{"wire/...", "dist", "server/meta/...", "server/data/...", "fsck"}},
	{pkg: "cluster", allow: []string{"client", "wire/...", "dist", "server/meta/...", "server/data/...", "vfs/..."}},
	{pkg: "fusefs", allow: []string{"client", "wire/...", "dist", "server/meta/..."}},
	{pkg: "metrics", allow: []string{"wire/..."}},
	{pkg: "metrics/metricstest"},
	{pkg: "bench", allow: []string{"rank", "pattern", "dist", "bench/backend/...", "internal/atomicfile"}},
	{pkg: "bench/backend"},
	{pkg: "bench/backend/...", allow: []string{"bench/backend/...", "client", "cluster", "dist", "server/meta/...", "wire/...", "hdf5", "internal/filekind"}},
	{pkg: "bench/sweep", allow: []string{"bench", "internal/heatmap", "internal/atomicfile"}},
	{pkg: "tune/model", pure: true},
	{pkg: "tune/sim", allow: []string{"tune/model"}, pure: true},
	{pkg: "tune/estimate", pure: true},
	{pkg: "tune/...", allow: []string{"tune/...", "bench", "bench/backend/...", "pattern", "dist", "internal/heatmap", "internal/atomicfile", "internal/filekind"}},
	{pkg: "medic", allow: []string{"client", "wire/...", "medic/cost", "internal/child", "internal/filekind"}},
	{pkg: "medic/cost", pure: true},
	{pkg: "medic/plugin/...", allow: []string{"medic", "medic/cost"}},
	{pkg: "medic/medictest", allow: []string{"medic", "medic/cost"}},
	{pkg: "internal/..."},
	{pkg: "cmd/...", allow: []string{anyPackage}},
	{pkg: "tools/...", allow: []string{anyPackage}},
	{pkg: "test/...", allow: []string{anyPackage}},
}

// everywhere may be imported by every package: it is pure and at the very
// bottom.
var everywhere = []string{"units"}

// testHelpers are imported by tests only, never by the code they test.
var testHelpers = []string{"internal/testbin", "internal/testenv", "internal/golden", "bench/backend/backendtest", "medic/medictest", "wire/optest", "wire/floodtest", "metrics/metricstest"}

// neverImported are the programs and the test-only packages: nothing
// imports them, not even a test. What a program has that others need
// belongs in a package below it.
var neverImported = []string{"cmd/...", "tools/...", "test/..."}

// impure are the standard library's packages that reach outside the
// process; pure packages import none of them.
var impure = []string{"os", "os/...", "net", "net/...", "syscall", "io/fs", "io/ioutil", "path/filepath", "log", "log/slog"}

// match reports whether the module-relative path p matches pattern.
func match(pattern, p string) bool {
	if dir, ok := strings.CutSuffix(pattern, "/..."); ok {
		return p == dir || strings.HasPrefix(p, dir+"/")
	}
	return p == pattern
}

func matchAny(patterns []string, p string) bool {
	return slices.ContainsFunc(patterns, func(pat string) bool { return match(pat, p) })
}

// ruleFor finds the most specific rule for the module-relative path p.
func ruleFor(p string) (rule, bool) {
	var best rule
	found := false
	for _, r := range rules {
		if !match(r.pkg, p) {
			continue
		}
		if r.pkg == p {
			return r, true
		}
		if !found || len(r.pkg) > len(best.pkg) {
			best, found = r, true
		}
	}
	return best, found
}

// allowed says why importer (whose rule is r) may not import imported, or
// "" when it may. Both are module-relative.
func allowed(r rule, importer, imported string, test bool) string {
	switch {
	case matchAny(neverImported, imported):
		return "nothing imports a program or a test-only package"
	case test:
		return ""
	case matchAny(testHelpers, imported) && !matchAny(testHelpers, importer):
		return "a test helper is for tests only"
	case matchAny(everywhere, imported):
		return ""
	case slices.Contains(r.allow, anyPackage), matchAny(r.allow, imported):
		return ""
	}
	if len(r.allow) == 0 {
		return fmt.Sprintf("rule %q allows no package of pario", r.pkg)
	}
	return fmt.Sprintf("rule %q allows only %s", r.pkg, strings.Join(r.allow, ", "))
}

// pkg is what `go list -json` says of one package.
type pkg struct {
	ImportPath                         string
	Imports, TestImports, XTestImports []string
}

// rel is the module-relative path of a package of the module, or "" for
// any other package.
func rel(importPath string) string {
	if importPath == module {
		return "."
	}
	p, ok := strings.CutPrefix(importPath, module+"/")
	if !ok {
		return ""
	}
	return p
}

// moduleRoot is the directory of the module's go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

// goList lists the module's packages with their imports.
func goList(t *testing.T) []pkg {
	t.Helper()
	root := moduleRoot(t)
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports,TestImports,XTestImports", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./... in %s: %v\n%s", root, err, stderr.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) == 0 {
		t.Fatal("go list ./... found no packages")
	}
	return pkgs
}

// violations checks one package against the rules and returns what is
// wrong with it.
func violations(p pkg) []string {
	me := rel(p.ImportPath)
	r, ok := ruleFor(me)
	if !ok {
		return []string{fmt.Sprintf("package %s has no layering rule: add it to the rules table in test/layering/layering_test.go and to docs/ARCHITECTURE.md (its package map and its dependency table)", me)}
	}
	var bad []string
	check := func(imports []string, test bool) {
		for _, imp := range imports {
			other := rel(imp)
			switch {
			case other == me:
			case other == "":
				if r.pure && !test && matchAny(impure, imp) {
					bad = append(bad, fmt.Sprintf("%s imports %s: it is pure (no I/O) by its rule %q", me, imp, r.pkg))
				}
			default:
				if why := allowed(r, me, other, test); why != "" {
					what := "imports"
					if test {
						what = "has tests that import"
					}
					bad = append(bad, fmt.Sprintf("%s %s %s: %s (see docs/ARCHITECTURE.md)", me, what, other, why))
				}
			}
		}
	}
	check(p.Imports, false)
	check(slices.Concat(p.TestImports, p.XTestImports), true)
	return bad
}

// TestLayering enforces the rules on every package of the module.
func TestLayering(t *testing.T) {
	pkgs := goList(t)
	for _, p := range pkgs {
		for _, v := range violations(p) {
			t.Error(v)
		}
	}
}

// The checker itself: each kind of violation is caught, with a message
// that says what to do.
func TestViolations(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    pkg
		want string // "" for no violation
	}{
		{"downwards", pkg{ImportPath: module + "/client", Imports: []string{module + "/wire", module + "/dist", "fmt"}}, ""},
		{"units from anywhere", pkg{ImportPath: module + "/wire", Imports: []string{module + "/units"}}, ""},
		{"upwards", pkg{ImportPath: module + "/wire", Imports: []string{module + "/client"}}, `wire imports client: rule "wire/..." allows only wire/...`},
		{"sideways", pkg{ImportPath: module + "/fusefs", Imports: []string{module + "/bench"}}, "fusefs imports bench"},
		{"pure imports nothing", pkg{ImportPath: module + "/dist", Imports: []string{module + "/wire"}}, `rule "dist" allows no package of pario`},
		{"pure does no I/O", pkg{ImportPath: module + "/tune/model", Imports: []string{"os"}}, "tune/model imports os: it is pure"},
		{"pure tests may", pkg{ImportPath: module + "/dist", TestImports: []string{"os", module + "/internal/testenv"}}, ""},
		{"the command", pkg{ImportPath: module + "/cmd/pario", Imports: []string{module + "/bench"}}, ""},
		{"a command imported", pkg{ImportPath: module + "/bench", Imports: []string{module + "/cmd/pario"}}, "nothing imports a program"},
		{"a tool imported by a test", pkg{ImportPath: module + "/client", XTestImports: []string{module + "/tools/storebench"}}, "client has tests that import tools/storebench"},
		{"a test helper in code", pkg{ImportPath: module + "/cmd/pario", Imports: []string{module + "/internal/testenv"}}, "a test helper is for tests only"},
		{"a test helper in a test", pkg{ImportPath: module + "/rank", TestImports: []string{module + "/internal/testenv"}}, ""},
		{"tests import upwards", pkg{ImportPath: module + "/client", XTestImports: []string{module + "/cluster"}}, ""},
		{"a new package under a rule", pkg{ImportPath: module + "/tune/new", Imports: []string{module + "/tune/model"}}, ""},
		{"the new file-system seam", pkg{ImportPath: module + "/server/data", Imports: []string{module + "/vfs", module + "/wire"}}, ""},
		{"an unknown package", pkg{ImportPath: module + "/newthing"}, "package newthing has no layering rule: add it to the rules table in test/layering/layering_test.go and to docs/ARCHITECTURE.md"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := strings.Join(violations(tc.p), "\n")
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Errorf("violations = %q, want %q", got, tc.want)
			}
		})
	}
}

// The architecture document shows the rules table as it is here.
func TestArchitectureDocStatesTheRules(t *testing.T) {
	doc := readDoc(t)
	want := rulesMarkdown()
	if !strings.Contains(doc, want) {
		t.Errorf("docs/ARCHITECTURE.md does not state the rules of test/layering; its dependency table should read:\n\n%s", want)
	}
}

// rulesMarkdown renders the rules as the table in docs/ARCHITECTURE.md.
func rulesMarkdown() string {
	var b strings.Builder
	b.WriteString("| package | may import (besides `units`) | pure |\n|---|---|---|\n")
	for _, r := range rules {
		var allow []string
		for _, a := range r.allow {
			if a == anyPackage {
				allow = append(allow, "any package but cmd/..., tools/..., test/... and the test helpers")
			} else {
				allow = append(allow, "`"+a+"`")
			}
		}
		if len(allow) == 0 {
			allow = []string{"nothing of pario"}
		}
		pure := ""
		if r.pure {
			pure = "yes"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", r.pkg, strings.Join(allow, ", "), pure)
	}
	return b.String()
}

// entry is a line of the package map in docs/ARCHITECTURE.md: a
// module-relative path with a trailing slash at the start of the line.
var entry = regexp.MustCompile(`(?m)^([a-z][a-z0-9_]*(?:/[a-z0-9_]+)*)/(?:\s|$)`)

// The architecture document's package map lists every package of the
// module, and only those.
func TestArchitectureDocListsEveryPackage(t *testing.T) {
	doc := readDoc(t)
	block, ok := packageMap(doc)
	if !ok {
		t.Fatal("docs/ARCHITECTURE.md has no package map (its first ``` block)")
	}
	listed := map[string]bool{}
	for _, m := range entry.FindAllStringSubmatch(block, -1) {
		listed[m[1]] = true
	}
	pkgs := goList(t)
	exists := map[string]bool{}
	for _, p := range pkgs {
		me := rel(p.ImportPath)
		exists[me] = true
		if !listed[me] {
			t.Errorf("docs/ARCHITECTURE.md: the package map does not list %s (a line starting %q)", me, me+"/")
		}
	}
	for p := range listed {
		if !exists[p] {
			t.Errorf("docs/ARCHITECTURE.md: the package map lists %s/, which is not a package of the module", p)
		}
	}
}

// packageMap is the first ``` block of the document.
func packageMap(doc string) (string, bool) {
	_, rest, ok := strings.Cut(doc, "```\n")
	if !ok {
		return "", false
	}
	block, _, ok := strings.Cut(rest, "```")
	return block, ok
}

func readDoc(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(moduleRoot(t), "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

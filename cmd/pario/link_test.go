package main

import (
	"context"
	"strings"
	"testing"

	"github.com/pario/pario/client"
	"github.com/pario/pario/cluster"
)

// TestSymlinksInTheCLI: ls -l shows a link as "name -> target"; pario
// never follows a link: cp refuses one (ELOOP), a link as a directory
// of a path is ENOTDIR, rm removes the link and not its target.
func TestSymlinksInTheCLI(t *testing.T) {
	ctx := context.Background()
	l := startLocal(t, cluster.Config{})
	c := dialLocal(t, l)
	if err := c.Mkdir(ctx, "/d", 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(ctx, "/d/f", client.CreateOptions{Exclusive: true}); err != nil {
		t.Fatal(err)
	}
	for target, link := range map[string]string{"f": "/d/l", "/d": "/dl"} {
		if _, err := c.Symlink(ctx, target, link); err != nil {
			t.Fatal(err)
		}
	}
	cf := l.ClusterFile
	out := run(t, cf, "ls", "-l", "/d")
	if !strings.Contains(out, "l -> f") || !strings.HasPrefix(strings.Split(out, "\n")[1], "lrwxrwxrwx") {
		t.Errorf("pario ls -l /d:\n%s", out)
	}
	if out, err := runErr(cf, "cp", "pario:/d/l", t.TempDir()+"/x"); err == nil || !strings.Contains(out, "symbolic link") {
		t.Errorf("pario cp of a link: %v\n%s", err, out)
	}
	if out, err := runErr(cf, "ls", "/dl/f"); err == nil || !strings.Contains(out, "not a directory") {
		t.Errorf("pario ls through a link: %v\n%s", err, out)
	}
	run(t, cf, "rm", "/d/l")
	if _, err := c.Lookup(ctx, "/d/f"); err != nil {
		t.Errorf("target after rm of its link: %v", err)
	}
}

// pario stat names every kind as stat(1) does (a link was "kind: file"
// with a "default layout for new files"), shows a link's target, and, as
// stat(1), goes on past a path it cannot show, exiting 1.
func TestStatKindsAndMissingPaths(t *testing.T) {
	ctx := context.Background()
	l := startLocal(t, cluster.Config{DataServers: 1})
	c := dialLocal(t, l)
	if _, err := c.Symlink(ctx, "somewhere", "/l"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(ctx, "/f", client.CreateOptions{Exclusive: true}); err != nil {
		t.Fatal(err)
	}
	out, err := runErr(l.ClusterFile, "stat", "/l", "/missing", "/f")
	if err == nil {
		t.Errorf("pario stat with a missing path succeeded:\n%s", out)
	}
	for _, want := range []string{"kind:      symbolic link", "target:    somewhere", "kind:      regular file", "lookup /missing: no such file"} {
		if !strings.Contains(out, want) {
			t.Errorf("pario stat /l /missing /f: no %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, "default layout") {
		t.Errorf("pario stat shows a default layout for a link or file:\n%s", out)
	}
	// layout get, as lfs getstripe: a link has none, a name is quoted as
	// ls quotes it (a newline or an escape is not written raw), and a
	// missing path does not hide the others.
	if err := c.Mkdir(ctx, "/n\nd", 0o755); err != nil {
		t.Fatal(err)
	}
	out, err = runErr(l.ClusterFile, "layout", "get", "/l", "/missing", "/n\nd")
	if err == nil {
		t.Errorf("pario layout get with a missing path succeeded:\n%s", out)
	}
	for _, want := range []string{"/l: a symbolic link, which has no layout", "lookup /missing: no such file", `'/n'$'\n''d': (no default set`} {
		if !strings.Contains(out, want) {
			t.Errorf("pario layout get /l /missing /n\\nd: no %q in\n%s", want, out)
		}
	}
}

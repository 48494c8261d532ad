package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// pario mv reads its arguments as GNU mv does: into a directory, several
// sources, -t, -T and trailing slashes.
func TestMv(t *testing.T) {
	cf := up(t)
	src := filepath.Join(t.TempDir(), "x")
	if err := os.WriteFile(src, []byte("pario"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"/d", "/e", "/empty", "/dir5"} {
		run(t, cf, "mkdir", d)
	}
	for _, f := range []string{"/f1", "/f2", "/f3", "/f4", "/f6", "/f7", "/f8", "/f9", "/f10"} {
		run(t, cf, "cp", "-q", src, "pario:"+f)
	}
	exists := func(p string) bool { _, err := runErr(cf, "stat", p); return err == nil }
	for _, tc := range []struct {
		args        []string
		wantErr     string // empty: success
		gone, there []string
	}{
		{[]string{"/f1", "/d"}, "", []string{"/f1"}, []string{"/d/f1"}},
		{[]string{"/f2", "/f3", "/d/"}, "", []string{"/f2", "/f3"}, []string{"/d/f2", "/d/f3"}},
		{[]string{"-t", "/d", "/f9"}, "", []string{"/f9"}, []string{"/d/f9"}},
		{[]string{"-T", "/e", "/empty"}, "", []string{"/e"}, []string{"/empty"}},
		{[]string{"/f4", "/new/"}, "not a directory", nil, []string{"/f4"}},
		{[]string{"/f4/", "/new4"}, "not a directory", []string{"/new4"}, []string{"/f4"}},
		{[]string{"/dir5", "/new5/"}, "", []string{"/dir5"}, []string{"/new5"}},
		{[]string{"/f6", "/f7", "/f8"}, "not a directory", nil, []string{"/f6", "/f7", "/f8"}},
		{[]string{"-T", "/f10", "/d"}, "is a directory", nil, []string{"/f10", "/d"}},
		{[]string{"/f10"}, "missing destination", nil, []string{"/f10"}},
	} {
		out, err := runErr(cf, append([]string{"mv"}, tc.args...)...)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("mv %v: %v\n%s", tc.args, err, out)
		case tc.wantErr != "" && (err == nil || !strings.Contains(strings.ToLower(out), tc.wantErr)):
			t.Errorf("mv %v: %v %q, want an error saying %q", tc.args, err, out, tc.wantErr)
		}
		for _, p := range tc.gone {
			if exists(p) {
				t.Errorf("mv %v: %s still there", tc.args, p)
			}
		}
		for _, p := range tc.there {
			if !exists(p) {
				t.Errorf("mv %v: no %s", tc.args, p)
			}
		}
	}
}

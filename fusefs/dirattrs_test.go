package fusefs_test

import (
	"os"
	"testing"
	"time"
)

// The stat of a directory right after its listing (rm -r's fstat of every
// directory it opens again: the kernel drops a directory's atime after
// each readdir) is answered with the attributes the mount answered last,
// and still shows every change: another mount's chmod, this mount's own
// chmod, and a name this mount adds.
func TestDirectoryStatAfterAListing(t *testing.T) {
	_, a, b := twoMounts(t)
	dir := a.path("d")
	makeFiles(t, dir, 5)
	statAfterListing := func() os.FileInfo {
		t.Helper()
		f, err := os.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.ReadDir(-1); err != nil {
			t.Fatal(err)
		}
		fi, err := f.Stat()
		if err != nil {
			t.Fatal(err)
		}
		return fi
	}
	statAfterListing()
	before := a.Stats().DirAttrsAgain
	fi := statAfterListing()
	if got := a.Stats().DirAttrsAgain - before; got < 1 {
		t.Errorf("the stat after a listing went to the metadata server (%d answered again)", got)
	}
	if !fi.IsDir() {
		t.Fatalf("stat of a directory: mode %v", fi.Mode())
	}

	// Another mount's chmod shows at once.
	if err := os.Chmod(b.path("d"), 0o700); err != nil {
		t.Fatal(err)
	}
	if got := statAfterListing().Mode().Perm(); got != 0o700 {
		t.Fatalf("after another mount's chmod the directory's mode is %v, want 0700", got)
	}
	// So does this mount's own.
	if err := os.Chmod(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if got := statAfterListing().Mode().Perm(); got != 0o750 {
		t.Fatalf("after this mount's chmod the directory's mode is %v, want 0750", got)
	}
	// And a name this mount adds moves its mtime.
	old := statAfterListing().ModTime()
	time.Sleep(10 * time.Millisecond)
	if err := os.WriteFile(a.path("d", "more"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := statAfterListing().ModTime(); !got.After(old) {
		t.Fatalf("after a create the directory's mtime is %v, was %v", got, old)
	}
}

package fusefs_test

import (
	"os"
	"testing"
	"time"

	"github.com/pario/pario/fusefs"
)

// A file this mount just created is empty and has the attributes the
// create answered: fstat and futimens of it before its first write cost
// no metadata lookup and no size request (known.go, created).
func TestCreatedFileAnsweredHere(t *testing.T) {
	p := spawn(t)
	var calls callCounter
	m := mountCounting(t, p, &calls)
	waitLease(t, m)
	f, err := os.OpenFile(m.path("new"), os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	getbyid, size := calls.get("meta getbyid"), calls.sizeRequests()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() != 0 || st.Mode().Perm() != 0o640 {
		t.Errorf("fstat of the new file: size %d, mode %v; want 0, -rw-r-----", st.Size(), st.Mode())
	}
	when := time.Unix(1_000_000, 0)
	if err := os.Chtimes(m.path("new"), when, when); err != nil {
		t.Fatal(err)
	}
	if st, err = f.Stat(); err != nil || !st.ModTime().Equal(when) {
		t.Errorf("fstat after futimens: %v, mtime %v; want %v", err, st.ModTime(), when)
	}
	if n := calls.get("meta getbyid") - getbyid; n != 0 {
		t.Errorf("fstat and futimens of a file just created here sent %d metadata getbyid requests, want 0", n)
	}
	if n := calls.sizeRequests() - size; n != 0 {
		t.Errorf("fstat and futimens of a file just created here sent %d size requests to the I/O servers, want 0", n)
	}
	// Written, it is asked afresh.
	if _, err := f.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if st, err = f.Stat(); err != nil || st.Size() != 5 {
		t.Errorf("fstat after a write: %v, size %d, want 5", err, st.Size())
	}
}

// What the mount remembers of a file it created does not hide a change
// made through another mount right after: fstat through the new
// descriptor shows it at once.
func TestCreatedFileNotStaleAcrossMounts(t *testing.T) {
	p := spawn(t)
	a := mount(t, p, fusefs.Options{})
	b := mount(t, p, fusefs.Options{})
	waitLease(t, a)
	waitLease(t, b)
	for i := range 20 {
		name := "f" + string(rune('a'+i))
		f, err := os.OpenFile(a.path(name), os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(b.path(name), 0o604); err != nil {
			t.Fatal(err)
		}
		st, err := f.Stat()
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o604 {
			t.Fatalf("round %d: fstat through the creating mount after a chmod through another: %v, want -rw----r--", i, st.Mode())
		}
	}
}

package fusefs_test

import (
	"os"
	"testing"

	"github.com/pario/pario/fusefs"
)

// What the mount remembers of a file it just created does not outlive a
// change of its size: a write through another descriptor of this mount
// (direct, write-only), a truncate through this mount by name, or a
// truncate through another mount each show at the next fstat.
func TestCreatedFileSizeNotStale(t *testing.T) {
	p := spawn(t)
	a := mount(t, p, fusefs.Options{})
	b := mount(t, p, fusefs.Options{})
	waitLease(t, a)
	waitLease(t, b)
	cases := []struct {
		name   string
		change func(t *testing.T, name string)
		want   int64
	}{
		{"write through another descriptor", func(t *testing.T, name string) {
			w, err := os.OpenFile(a.path(name), os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.Write([]byte("hello")); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
		}, 5},
		{"truncate by name here", func(t *testing.T, name string) {
			if err := os.Truncate(a.path(name), 7); err != nil {
				t.Fatal(err)
			}
		}, 7},
		{"truncate through another mount", func(t *testing.T, name string) {
			if err := os.Truncate(b.path(name), 9); err != nil {
				t.Fatal(err)
			}
		}, 9},
	}
	for round := range 5 {
		for i, tc := range cases {
			name := "c" + string(rune('a'+i)) + string(rune('0'+round))
			f, err := os.OpenFile(a.path(name), os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o666)
			if err != nil {
				t.Fatal(err)
			}
			tc.change(t, name)
			st, err := f.Stat()
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			if st.Size() != tc.want {
				t.Errorf("%s (round %d): fstat of the new file: size %d, want %d", tc.name, round, st.Size(), tc.want)
			}
		}
	}
}

package meta

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// The I/O servers' names are recorded in index order; servers that trade
// places (their cluster file lines swapped, names and addresses together)
// are refused, since each would serve the other's strips. Servers added at
// the end, fewer servers, and renames said to be on purpose are not.
func TestServerNamesKeepTheirPlaces(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meta.db")
	open := func(rename bool, names ...string) error {
		s, err := Open(path, Options{Servers: len(names), ServerNames: names, RenameServers: rename})
		if err == nil {
			s.Close()
		}
		return err
	}
	for _, step := range []struct {
		rename bool
		names  []string
		moved  string // "" if Open must succeed
	}{
		{false, []string{"data0", "data1"}, ""},
		{false, []string{"data1", "data0"}, "I/O server 0: data1 here, data0 in the database"},
		{false, []string{"data0", "data1", "data2"}, ""}, // one added at the end
		{false, []string{"data0"}, ""},                   // started with fewer
		{false, []string{"data0", "data2"}, "I/O server 1: data2 here, data1 in the database"},
		{true, []string{"data0", "fast1", "data2"}, ""}, // renamed on purpose
		{false, []string{"data0", "fast1", "data2"}, ""},
		{false, []string{"data0", "data1", "data2"}, "I/O server 1: data1 here, fast1 in the database"},
	} {
		err := open(step.rename, step.names...)
		var oe *ServerOrderError
		switch {
		case step.moved == "" && err != nil:
			t.Errorf("Open with %v (rename %v): %v", step.names, step.rename, err)
		case step.moved != "" && (!errors.As(err, &oe) || !strings.Contains(err.Error(), step.moved) || !strings.Contains(err.Error(), "--rename-servers")):
			t.Errorf("Open with %v: %v, want a ServerOrderError saying %q", step.names, err, step.moved)
		}
	}
}

package data

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/pario/pario/wire"
)

// A data directory is one I/O server's: every server holds a file's
// datafile under the file's ID, so data1's directory opened as data0
// would serve data1's strips for data0's, silently. The first named Open
// records the name; another name is refused, naming both.
func TestOpenRefusesAnotherServersDirectory(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, StoreOptions{Name: "data1"})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if b, err := os.ReadFile(filepath.Join(dir, identityName)); err != nil || string(b) != "data1\n" {
		t.Fatalf("%s after the first Open: %q, %v", identityName, b, err)
	}
	_, err = Open(dir, StoreOptions{Name: "data0"})
	if !errors.Is(err, ErrWrongServer) || !strings.Contains(err.Error(), `I/O server "data1", not of "data0"`) {
		t.Fatalf("Open of data1's directory as data0: %v, want ErrWrongServer naming both", err)
	}
	for _, name := range []string{"data1", ""} {
		s, err := Open(dir, StoreOptions{Name: name})
		if err != nil {
			t.Fatalf("Open as %q: %v", name, err)
		}
		s.Close()
	}
	if _, err := os.Stat(filepath.Join(dir, identityName+".tmp")); !os.IsNotExist(err) {
		t.Errorf("the record's temporary file is left: %v", err)
	}
}

// A claim names the server the metadata server means at this address: a
// server of another name refuses it (ENXIO, ErrWrongServer), one that
// does not know the name, or a store opened without one, does not check.
func TestClaimChecksTheName(t *testing.T) {
	s, err := Open(t.TempDir(), StoreOptions{Name: "data1"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h := &Handler{Store: s}
	claim := func(name string) error {
		var e wire.Enc
		ClaimRequest{Incarnation: 5, Name: name}.Encode(&e)
		_, err := h.ServeWire(ctx, &wire.Request{Op: OpClaim.Code, Args: e.Bytes()})
		return err
	}
	if err := claim("data0"); !errors.Is(err, syscall.ENXIO) || !errors.Is(err, ErrWrongServer) ||
		!strings.Contains(err.Error(), `this address serves I/O server "data1"`) || !strings.Contains(err.Error(), `not "data0"`) {
		t.Errorf("claim for data0 by data1: %v, want ENXIO naming both", err)
	}
	if s.Incarnation() != 0 {
		t.Errorf("a refused claim recorded incarnation %x", s.Incarnation())
	}
	for _, name := range []string{"data1", ""} {
		if err := claim(name); err != nil {
			t.Errorf("claim for %q: %v", name, err)
		}
	}
}

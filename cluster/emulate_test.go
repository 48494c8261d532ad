package cluster

import (
	"strings"
	"testing"
	"time"
)

func TestEmulationFile(t *testing.T) {
	base := "secret-file s\nmeta 127.0.0.1:7000\ndata data0 127.0.0.1:7001\ndata data1 127.0.0.1:7002\n"
	f, err := ParseFile([]byte(base + "disk-rate 40MB/s\ndisk-seek 7.5ms\nlock-revoke 12ms\nnet-rate 100m\nnet-rate-local 1GB/s\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := Emulation{DiskRate: 40e6, DiskSeek: 7500 * time.Microsecond, LockRevoke: 12 * time.Millisecond, NetRate: 100e6, NetLocalRate: 1e9}
	if f.Emulation != want {
		t.Fatalf("parsed %+v, want %+v", f.Emulation, want)
	}
	g, err := ParseFile(f.Format())
	if err != nil {
		t.Fatalf("reparsing %q: %v", f.Format(), err)
	}
	if g.Emulation != want {
		t.Errorf("round trip gives %+v, want %+v", g.Emulation, want)
	}
	for _, bad := range []string{"disk-rate\n", "disk-rate fast\n", "net-rate 0\n", "disk-seek\n", "disk-seek 8\n", "disk-seek -1ms\n", "disk-seek 0s\n", "lock-revoke\n", "lock-revoke 3\n", "lock-revoke -2ms\n", "disk-rate 1\n", "net-rate 9kB/s\n", "disk-seek 100h\n", "lock-revoke 11s\n"} {
		if _, err := ParseFile([]byte(base + bad)); err == nil || !strings.Contains(err.Error(), "line 5") {
			t.Errorf("%q: error %v, want one naming line 5", bad, err)
		}
	}
	if _, err := ParseFile([]byte(base + "disk-rate 1m\ndisk-rate 2m\n")); err == nil || !strings.Contains(err.Error(), "line 6: disk-rate given twice") {
		t.Errorf("disk-rate twice: error %v", err)
	}
	if _, err := ParseFile([]byte(base + "disk-seek 1ms\ndisk-seek 2ms\n")); err == nil || !strings.Contains(err.Error(), "line 6: disk-seek given twice") {
		t.Errorf("disk-seek twice: error %v", err)
	}
	if s := string((&File{SecretFile: "s", Meta: "a:1"}).Format()); strings.Contains(s, "rate") || strings.Contains(s, "seek") {
		t.Error("a file without emulation writes a rate")
	}
}

func TestEmulationLinks(t *testing.T) {
	if l := (Emulation{DiskRate: 1}).Links(0); l != nil {
		t.Errorf("no network rate gives links %+v", l)
	}
	l := Emulation{NetRate: 10e6}.Links(3)
	if l.Local != 10e6 || l.Remote != 10e6 || l.Node != 3 {
		t.Errorf("net-rate alone: %+v, want both links at 10 MB/s on node 3", l)
	}
	l = Emulation{NetRate: 10e6, NetLocalRate: 1e9}.Links(1)
	if l.Bucket(1).Rate() != 1e9 || l.Bucket(0).Rate() != 10e6 {
		t.Errorf("own node's link %v, another's %v", l.Bucket(1).Rate(), l.Bucket(0).Rate())
	}
}

// Emulation.Check refuses what the flags of pario up could give and no
// hardware is like: negative times (the flags took --disk-seek -1s and
// --lock-revoke -1ms and emulated nothing), and rates and times under
// which every request takes seconds or more (--disk-rate 1, one byte a
// second: a run that looks hung).
func TestEmulationCheck(t *testing.T) {
	for _, tc := range []struct {
		e    Emulation
		want string
	}{
		{Emulation{DiskSeek: -time.Second}, "disk-seek -1s: want a positive time"},
		{Emulation{LockRevoke: -time.Millisecond}, "lock-revoke -1ms: want a positive time"},
		{Emulation{DiskSeek: 100 * time.Hour}, "disk-seek 100h0m0s: longer than any disk"},
		{Emulation{DiskRate: 1}, "disk-rate 1 B/s: slower than any disk"},
		{Emulation{NetRate: 9999}, "net-rate"},
		{Emulation{NetLocalRate: 5}, "net-rate-local"},
	} {
		if err := tc.e.Check(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error saying %q", tc.e, err, tc.want)
		}
	}
	for _, ok := range []Emulation{{}, {DiskRate: 4e6, DiskSeek: 10 * time.Millisecond, LockRevoke: 65 * time.Millisecond, NetRate: 100e6, NetLocalRate: 1e9}, {DiskRate: MinEmulatedRate, DiskSeek: MaxEmulatedDelay}} {
		if err := ok.Check(); err != nil {
			t.Errorf("%+v: %v", ok, err)
		}
	}
}

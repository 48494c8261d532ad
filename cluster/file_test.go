package cluster

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/pario/pario/wire"
)

const sample = `# a cluster
secret-file secret          # relative to this file

meta 10.0.0.1:7000
data data0 10.0.0.2:7001    # name and address
	data   data1   10.0.0.3:7001
data d2 [::1]:7002
data d3 host.example:65535
`

func TestParseFile(t *testing.T) {
	f, err := ParseFile([]byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	want := &File{
		SecretFile: "secret",
		Meta:       "10.0.0.1:7000",
		Data: []ServerEntry{
			{"data0", "10.0.0.2:7001"}, {"data1", "10.0.0.3:7001"},
			{"d2", "[::1]:7002"}, {"d3", "host.example:65535"},
		},
	}
	if !reflect.DeepEqual(f, want) {
		t.Fatalf("got %+v\nwant %+v", f, want)
	}
	// The order of directives does not matter, only that of data lines;
	// CRLF line ends and a missing final newline are fine.
	f, err = ParseFile([]byte("data b h:2\r\n#\r\n   \r\nmeta m:1\r\ndata a h:3\r\nsecret-file /abs/s"))
	if err != nil {
		t.Fatal(err)
	}
	if f.Meta != "m:1" || f.SecretFile != "/abs/s" || len(f.Data) != 2 || f.Data[0].Name != "b" || f.Data[1].Name != "a" {
		t.Fatalf("%+v", f)
	}
}

// A file for clients alone names the metadata server and the secret: the
// client learns the I/O servers from the metadata server. Only the
// metadata server, which must know them, refuses it.
func TestParseFileForClients(t *testing.T) {
	f, err := ParseFile([]byte("secret-file s\nmeta h:1\n"))
	if err != nil {
		t.Fatalf("a file with meta and secret-file only: %v", err)
	}
	if f.Meta != "h:1" || f.SecretFile != "s" || len(f.Data) != 0 {
		t.Fatalf("%+v", f)
	}
	if err := f.CheckServers(); err == nil || !strings.Contains(err.Error(), "no `data NAME HOST:PORT` line") {
		t.Fatalf("CheckServers of a file without data lines: %v", err)
	}
	if f, err = ParseFile([]byte(sample)); err != nil || f.CheckServers() != nil {
		t.Fatalf("CheckServers of the sample: %v, %v", err, f.CheckServers())
	}
}

func TestParseFileErrors(t *testing.T) {
	const ok = "secret-file s\nmeta h:1\ndata d0 h:2\n"
	for _, tc := range []struct{ name, text, want string }{
		{"unknown directive", ok + "\n# comment\nmetadata h:1\n", `line 6: unknown directive "metadata"`},
		{"directive case", "Meta h:1\n" + ok, `line 1: unknown directive "Meta"`},
		{"duplicate meta", ok + "meta h:9\n", "line 4: meta given twice"},
		{"duplicate secret", ok + "secret-file t\n", "line 4: secret-file given twice"},
		{"duplicate data name", ok + "data d1 h:3\ndata d0 h:4\n", `line 5: I/O server name "d0" used twice`},
		{"duplicate data address", ok + "data d1 h:3\ndata d2 h:2\n", "line 5: I/O server d2 has the address h:2 of I/O server d0"},
		{"meta arity", "meta\n" + ok, "line 1: want `meta HOST:PORT`"},
		{"meta extra field", "meta h:1 h:2\n" + ok, "line 1: want `meta HOST:PORT`"},
		{"data arity", "secret-file s\nmeta h:1\ndata h:2\n", "line 3: want `data NAME HOST:PORT`"},
		{"secret arity", "secret-file a b\nmeta h:1\ndata d h:2\n", "line 1: want `secret-file PATH`"},
		{"meta no port", "secret-file s\nmeta h\ndata d h:2\n", "line 2: meta address"},
		{"meta no host", "secret-file s\nmeta :7000\ndata d h:2\n", "line 2: meta address"},
		{"meta port 0", "secret-file s\nmeta h:0\ndata d h:2\n", "line 2: meta address"},
		{"meta port 00", "secret-file s\nmeta h:00\ndata d h:2\n", "line 2: meta address"},
		{"meta empty port", "secret-file s\nmeta h:\ndata d h:2\n", "line 2: meta address"},
		{"data port 0", "secret-file s\nmeta h:1\n\n\ndata d h:0\n", "line 5: address of I/O server d"},
		{"data port too big", "secret-file s\nmeta h:1\ndata d h:65536\n", "line 3: address of I/O server d"},
		{"data port name", "secret-file s\nmeta h:1\ndata d h:http\n", "line 3: address of I/O server d"},
		{"data negative port", "secret-file s\nmeta h:1\ndata d h:-1\n", "line 3: address of I/O server d"},
		{"data bad address", "secret-file s\nmeta h:1\ndata d [::1\n", "line 3: address of I/O server d"},
		{"data ipv6 unbracketed", "secret-file s\nmeta h:1\ndata d ::1:7000\n", "line 3: address of I/O server d"},
		{"missing meta", "secret-file s\ndata d h:2\n", "no `meta HOST:PORT` line"},
		{"missing secret", "meta h:1\ndata d h:2\n", "no `secret-file PATH` line"},
		{"empty", "", "no `meta HOST:PORT` line"},
		{"only comments", "# nothing\n\n  # here\n", "no `meta HOST:PORT` line"},
		{"limit arity", ok + "max-conns-per-peer\n", "line 4: want `max-conns-per-peer N`"},
		{"limit zero", ok + "max-conns 0\n", `line 4: max-conns "0": want a number`},
		{"limit negative", ok + "max-conns-per-peer -5\n", `line 4: max-conns-per-peer "-5"`},
		{"limit huge", ok + "max-conns 4294967296\n", `line 4: max-conns "4294967296"`},
		{"limit twice", ok + "max-conns 5\nmax-conns 6\n", "line 5: max-conns given twice"},
		{"protection arity", ok + "wire-protection\n", "line 4: want `wire-protection aead` or `wire-protection integrity`"},
		{"protection unknown", ok + "wire-protection none\n", `line 4: wire protection "none": want aead or integrity`},
		{"protection twice", ok + "wire-protection aead\nwire-protection integrity\n", "line 5: wire-protection given twice"},
		{"root-squash value", ok + "root-squash maybe\n", "line 4: want `root-squash on` or `root-squash off`"},
		{"root-squash twice", ok + "root-squash on\nroot-squash off\n", "line 5: root-squash given twice"},
		{"line too long", ok + "# " + strings.Repeat("x", 70<<10) + "\n", "line 4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := ParseFile([]byte(tc.text))
			if err == nil {
				t.Fatalf("accepted: %+v", f)
			}
			if f != nil {
				t.Fatal("a File returned with the error")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not contain %q", err, tc.want)
			}
			if !strings.HasPrefix(err.Error(), "cluster file") {
				t.Fatalf("error %q does not say it is about the cluster file", err)
			}
		})
	}
}

// The connection limits of the servers are part of the cluster file, so
// that every server of a cluster gets the same.
func TestParseFileLimits(t *testing.T) {
	f, err := ParseFile([]byte(sample + "max-conns-per-peer 4096\nmax-conns 20000 # all hosts\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := (Limits{MaxConns: 20000, MaxConnsPerPeer: 4096}); f.Limits != want {
		t.Fatalf("limits %+v, want %+v", f.Limits, want)
	}
	g, err := ParseFile(f.Format())
	if err != nil || !reflect.DeepEqual(f, g) {
		t.Fatalf("round trip: %+v, %v", g, err)
	}
}

// The wire protection is one line for the whole cluster; integrity (in
// the clear) is only ever an explicit choice.
func TestParseFileProtection(t *testing.T) {
	for _, tc := range []struct {
		text string
		want wire.Protection
	}{
		{sample, wire.ProtectAEAD},
		{sample + "wire-protection aead\n", wire.ProtectAEAD},
		{sample + "wire-protection integrity # trusted network\n", wire.ProtectIntegrity},
	} {
		f, err := ParseFile([]byte(tc.text))
		if err != nil {
			t.Fatal(err)
		}
		if f.Protection != tc.want {
			t.Fatalf("%q: protection %s, want %s", tc.text, f.Protection, tc.want)
		}
		g, err := ParseFile(f.Format())
		if err != nil || !reflect.DeepEqual(f, g) {
			t.Fatalf("round trip: %+v, %v", g, err)
		}
	}
}

// Root is squashed unless the file says root-squash off.
func TestParseFileRootSquash(t *testing.T) {
	for _, tc := range []struct {
		text   string
		squash bool
	}{
		{sample, true},
		{sample + "root-squash on\n", true},
		{sample + "root-squash off # admin host\n", false},
	} {
		f, err := ParseFile([]byte(tc.text))
		if err != nil {
			t.Fatal(err)
		}
		if f.NoRootSquash == tc.squash {
			t.Errorf("%q: NoRootSquash %v, want %v", tc.text, f.NoRootSquash, !tc.squash)
		}
		g, err := ParseFile(f.Format())
		if err != nil || !reflect.DeepEqual(f, g) {
			t.Fatalf("round trip: %+v, %v", g, err)
		}
	}
}

func TestFormatRoundTrip(t *testing.T) {
	f, err := ParseFile([]byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	text := f.Format()
	g, err := ParseFile(text)
	if err != nil {
		t.Fatalf("%v parsing:\n%s", err, text)
	}
	if !reflect.DeepEqual(f, g) {
		t.Fatalf("round trip changed %+v into %+v", f, g)
	}
	if !bytes.Equal(g.Format(), text) {
		t.Fatal("Format is not stable")
	}
}

func TestReadWriteFile(t *testing.T) {
	dir := t.TempDir()
	f := &File{SecretFile: "secret", Meta: "127.0.0.1:7000", Data: []ServerEntry{{"data0", "127.0.0.1:7001"}}}
	path := filepath.Join(dir, "cluster")
	if err := f.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + ".tmp"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("temporary file left behind: %v", err)
	}
	g, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if g.Dir != dir {
		t.Fatalf("Dir %q, want %q", g.Dir, dir)
	}
	g.Dir = ""
	if !reflect.DeepEqual(f, g) {
		t.Fatalf("%+v != %+v", f, g)
	}
	// Secret resolves against the file's directory.
	secret := NewSecret()
	if err := os.WriteFile(filepath.Join(dir, "secret"), []byte(hex.EncodeToString(secret)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	g.Dir = dir
	if s, err := g.Secret(); err != nil || !bytes.Equal(s, secret) {
		t.Fatalf("%x, %v", s, err)
	}
	// An absolute secret-file is used as is.
	g.SecretFile = filepath.Join(dir, "secret")
	g.Dir = "/nonexistent"
	if s, err := g.Secret(); err != nil || !bytes.Equal(s, secret) {
		t.Fatalf("absolute: %x, %v", s, err)
	}

	if err := os.WriteFile(path, []byte("meta x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(path); err == nil || !strings.HasPrefix(err.Error(), path+": cluster file line 1") {
		t.Fatalf("bad file: %v", err)
	}
	if _, err := ReadFile(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}

func TestReadSecret(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	raw := []byte("a raw secret of more than sixteen bytes")
	key := make([]byte, 32)
	rand.Read(key)
	bin := make([]byte, 16)
	rand.Read(bin)
	bin[0], bin[15] = 0xff, 0x80 // not all hex digits, not all printable, not space
	b64 := []byte(base64.RawStdEncoding.EncodeToString(key[:16]))
	for _, tc := range []struct {
		name string
		file []byte
		want []byte
	}{
		{"hex", []byte(hex.EncodeToString(key) + "\n"), key},
		{"hex upper, spaced", []byte("  " + strings.ToUpper(hex.EncodeToString(key)) + " \r\n"), key},
		{"hex of 16 bytes", []byte(hex.EncodeToString(key[:16])), key[:16]},
		{"raw", append(append([]byte(nil), raw...), '\n'), raw},
		{"binary of 16 bytes", bin, bin},
		{"base64 of 16 bytes", b64, b64},
	} {
		got, err := ReadSecret(write(tc.name, tc.file))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !bytes.Equal(got, tc.want) {
			t.Fatalf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
	// Weak secrets are refused with an error that names the file, says
	// what is wrong and how to make a good one.
	for _, tc := range []struct {
		name string
		file []byte
		want string
	}{
		{"empty", nil, "at most 0 bits"},
		{"blank", []byte(" \n\t\n"), "at most 0 bits"},
		{"short", []byte("fifteen bytes!!"), "at most 90 bits"},
		{"short after trimming", []byte("   short secret   \n"), "at most 72 bits"},
		{"16 a's", []byte("aaaaaaaaaaaaaaaa"), "at most 64 bits"},
		{"16 printable", []byte("0123456789abcdeX"), "at most 96 bits"},
		{"hex of 15 bytes", []byte(hex.EncodeToString(key[:15])), "at most 120 bits"},
		{"odd hex", []byte(hex.EncodeToString(key) + "a"), "odd number"},
		{"32 a's", []byte(strings.Repeat("a", 32)), "distinct"},
		{"64 zeros", []byte(strings.Repeat("0", 64)), "distinct"},
		{"long run of x", []byte(strings.Repeat("x", 100)), "distinct"},
		{"few symbols", []byte(strings.Repeat("abcdefg", 5)), "distinct"},
		// Eight distinct bytes: random ones collide one time in ten, and
		// then the distinct-bytes check answers first.
		{"repeated key", []byte(strings.Repeat("3a915ce207b468df", 2)), "repeats every 8 bytes"},
		{"repeated text", []byte(strings.Repeat("Passw0rd!", 4)), "repeats every 9 bytes"},
		{"counting hex", []byte("000102030405060708090a0b0c0d0e0f"), "count"},
		{"counting text", []byte("abcdefghijklmnopqrstuvwxyz"), "count"},
	} {
		p := write(tc.name, tc.file)
		_, err := ReadSecret(p)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "pario secret") {
			t.Errorf("%s: %v; want an error naming %s with %q", tc.name, err, p, tc.want)
		}
	}
	if _, err := ReadSecret(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing: %v", err)
	}
}

// TestReadSecretPermissions: as ssh with a private key, a secret file that
// its group or the world may read (or write) is refused, whatever it holds.
func TestReadSecretPermissions(t *testing.T) {
	p := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(p, []byte(hex.EncodeToString(NewSecret())), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []os.FileMode{0o400, 0o600, 0o700} {
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadSecret(p); err != nil {
			t.Errorf("mode %04o: %v", mode, err)
		}
	}
	for _, mode := range []os.FileMode{0o666, 0o644, 0o640, 0o604, 0o620, 0o602, 0o610} {
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		_, err := ReadSecret(p)
		if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "chmod 600") || !strings.Contains(err.Error(), fmt.Sprintf("%04o", mode)) {
			t.Errorf("mode %04o: %v; want a refusal naming the file and chmod 600", mode, err)
		}
	}
	// Through a cluster file too: the servers and clients all read it so.
	cf := &File{SecretFile: "secret", Meta: "h:1", Data: []ServerEntry{{"d", "h:2"}}, Dir: filepath.Dir(p)}
	if _, err := cf.Secret(); err == nil {
		t.Fatal("a world-readable secret was accepted through the cluster file")
	}
}

func TestCheckSecretRandom(t *testing.T) {
	// Every secret pario makes passes, whatever its bytes.
	for i := 0; i < 10000; i++ {
		s := NewSecret()
		if _, err := CheckSecret([]byte(hex.EncodeToString(s))); err != nil {
			t.Fatalf("%x: %v", s, err)
		}
		if _, err := CheckSecret([]byte(hex.EncodeToString(s[:16]))); err != nil {
			t.Fatalf("%x: %v", s[:16], err)
		}
	}
}

func TestEnsureSecret(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "secret")
	s1, err := EnsureSecret(p)
	if err != nil || len(s1) != 32 {
		t.Fatalf("%x, %v", s1, err)
	}
	st, err := os.Stat(p)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("secret file mode %v, %v", st.Mode(), err)
	}
	s2, err := EnsureSecret(p)
	if err != nil || !bytes.Equal(s1, s2) {
		t.Fatalf("second EnsureSecret: %x, %v", s2, err)
	}
	if _, err := WriteSecret(p); !errors.Is(err, os.ErrExist) {
		t.Fatalf("WriteSecret over an existing secret: %v", err)
	}
	if err := os.WriteFile(p, []byte("short"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := EnsureSecret(p); err == nil {
		t.Fatal("a bad secret file was replaced or accepted")
	}
	// A secret that is fine but open to others is refused, not replaced.
	if err := os.WriteFile(p, []byte(hex.EncodeToString(s1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := EnsureSecret(p); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("a world-readable secret: %v", err)
	}
	// A restrictive umask or not, a new secret is 0600.
	old := syscall.Umask(0)
	q := filepath.Join(dir, "secret2")
	_, err = WriteSecret(q)
	syscall.Umask(old)
	if st, serr := os.Stat(q); err != nil || serr != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("WriteSecret with umask 0: %v %v %v", err, serr, st)
	}
}

func FuzzParseFile(f *testing.F) {
	f.Add([]byte(sample))
	f.Add([]byte("secret-file s\nmeta h:1\ndata d h:2\n"))
	f.Add([]byte("meta [::1]:1 # x\r\ndata a b:3\ndata a c:4\n"))
	f.Add([]byte("secret-file s\nmeta h:1\ndata d h:2\nmax-conns 7\nmax-conns-per-peer 3\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		fl, err := ParseFile(b)
		if err != nil {
			if fl != nil {
				t.Fatal("File returned with an error")
			}
			if !strings.HasPrefix(err.Error(), "cluster file") {
				t.Fatalf("error %q", err)
			}
			return
		}
		if fl.Meta == "" || fl.SecretFile == "" {
			t.Fatalf("incomplete file accepted: %+v", fl)
		}
		names := map[string]bool{}
		for _, d := range fl.Data {
			if names[d.Name] {
				t.Fatalf("duplicate name %q accepted", d.Name)
			}
			names[d.Name] = true
			if err := checkAddr(d.Addr); err != nil {
				t.Fatalf("bad address %q accepted: %v", d.Addr, err)
			}
		}
		text := fl.Format()
		g, err := ParseFile(text)
		if err != nil {
			t.Fatalf("formatted file does not parse: %v\n%s", err, text)
		}
		if !reflect.DeepEqual(fl, g) {
			t.Fatalf("round trip changed %+v into %+v", fl, g)
		}
	})
}

// A --cluster that names something other than a cluster file (a device
// such as /dev/zero, a huge file) is refused after at most MaxFileSize
// bytes, naming the file, instead of being read whole into memory.
func TestReadFileTooLarge(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cluster")
	text := "secret-file s\nmeta h:1\ndata d0 h:2\n"
	text += strings.Repeat("# padding\n", (1<<20)/10+1) // just over MaxFileSize
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := ReadFile(path)
	if err == nil {
		t.Fatalf("a %d-byte file read as a cluster file: %+v", len(text), f)
	}
	if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("error %q does not name the file and say it is too large", err)
	}
	if _, err := ReadFile("/dev/zero"); err == nil || !strings.Contains(err.Error(), "/dev/zero: larger than") {
		t.Fatalf("/dev/zero: %v", err)
	}
}

// ParseServers checks pario meta --data's values as data lines are, and
// quotes the value at fault.
func TestParseServers(t *testing.T) {
	got, err := ParseServers([]string{"data0=10.0.0.2:7001", "data1=[::1]:7001"})
	if want := []ServerEntry{{"data0", "10.0.0.2:7001"}, {"data1", "[::1]:7001"}}; err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("ParseServers: %v, %v; want %v", got, err, want)
	}
	for vals, want := range map[string]string{
		"a=h:1,a=h:2":  `"a=h:2": I/O server name "a" used twice`,
		"a=h:1,b=h:1":  `"b=h:1": I/O server b has the address h:1 of I/O server a`,
		"a=h:0":        `"a=h:0": address of I/O server a`,
		"a":            `"a": want NAME=HOST:PORT`,
		"=h:1":         `"=h:1": want NAME=HOST:PORT`,
		"my data=h:1":  `"my data=h:1": want NAME=HOST:PORT`,
		"a=h:1,b=h:+2": `"b=h:+2": address of I/O server b`,
	} {
		if _, err := ParseServers(strings.Split(vals, ",")); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseServers(%s): %v, want an error with %q", vals, err, want)
		}
	}
}

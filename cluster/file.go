package cluster

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"

	"github.com/pario/pario/wire"
)

// File is a cluster file: where the servers of one pario cluster listen and
// where the shared secret is. The same file serves every host: metadata and
// I/O servers find their own address in it, clients find the metadata
// server (a file for clients alone needs only secret-file and meta). Its
// text form, one directive per line ('#' starts a comment):
//
//	secret-file secret          # path, relative to the cluster file's directory
//	meta 10.0.0.1:7000
//	data data0 10.0.0.2:7001    # name and address, in server-index order
//	data data1 10.0.0.3:7001
//	max-conns-per-peer 4096     # optional: connections one host may hold to a server
//	max-conns 20000             # optional: connections one server accepts at once
//	wire-protection integrity   # optional: aead (the default) or integrity
//	root-squash off             # optional: on (the default) or off
//	disk-rate 40MB/s            # optional: the emulated cluster (Emulation)
//
// wire-protection says how frames are protected after the handshake: aead
// encrypts and authenticates every frame; integrity authenticates every
// frame but sends it in the clear, for trusted networks. Every server and
// client of the cluster must use the same (they refuse each other
// otherwise), which one file for all makes easy.
//
// root-squash on makes the metadata server treat requests from a client
// host's root (uid 0) as from nobody (65534), as NFS's root_squash does;
// off lets root be root on the file system (to set up directories and
// owners, say).
//
// Server order matters: files record their datafiles by server index, so
// new servers are appended, never inserted.
type File struct {
	SecretFile string // absolute, or relative to the cluster file's directory
	Meta       string
	Data       []ServerEntry
	// Limits caps every server's connections (zero fields: the defaults).
	Limits Limits
	// Protection is the wire protection of the cluster's connections.
	Protection wire.Protection
	// NoRootSquash is `root-squash off`: root on a client is root on the
	// file system. The zero value squashes root to nobody.
	NoRootSquash bool
	// Emulation slows the servers and links down (emulate.go).
	Emulation Emulation
	// Dir is the directory the file was read from (relative paths resolve
	// against it); empty for a file not read from disk.
	Dir string
}

// ServerEntry is one I/O server line of a cluster file.
type ServerEntry struct {
	Name string
	Addr string
}

// ParseFile parses the text form. Errors give the line number.
func ParseFile(b []byte) (*File, error) {
	f := &File{}
	protectionSet, squashSet := false, false
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if i := strings.IndexByte(text, '#'); i >= 0 {
			text = text[:i]
		}
		fields := strings.Fields(text)
		if len(fields) == 0 {
			continue
		}
		bad := func(format string, args ...any) error {
			return fmt.Errorf("cluster file line %d: %s", line, fmt.Sprintf(format, args...))
		}
		if ok, err := f.Emulation.directive(fields); ok {
			if err != nil {
				return nil, bad("%v", err)
			}
			continue
		}
		switch fields[0] {
		case "secret-file":
			if len(fields) != 2 {
				return nil, bad("want `secret-file PATH`")
			}
			if f.SecretFile != "" {
				return nil, bad("secret-file given twice")
			}
			f.SecretFile = fields[1]
		case "meta":
			if len(fields) != 2 {
				return nil, bad("want `meta HOST:PORT`")
			}
			if f.Meta != "" {
				return nil, bad("meta given twice (one metadata server per cluster)")
			}
			if err := checkAddr(fields[1]); err != nil {
				return nil, bad("meta address: %v", err)
			}
			f.Meta = fields[1]
		case "data":
			if len(fields) != 3 {
				return nil, bad("want `data NAME HOST:PORT`")
			}
			e := ServerEntry{Name: fields[1], Addr: fields[2]}
			if err := checkServer(f.Data, e); err != nil {
				return nil, bad("%v", err)
			}
			f.Data = append(f.Data, e)
		case "max-conns", "max-conns-per-peer":
			if len(fields) != 2 {
				return nil, bad("want `%s N`", fields[0])
			}
			n, err := strconv.ParseUint(fields[1], 10, 31)
			if err != nil || n == 0 {
				return nil, bad("%s %q: want a number of connections from 1 to 2147483647", fields[0], fields[1])
			}
			p := &f.Limits.MaxConns
			if fields[0] == "max-conns-per-peer" {
				p = &f.Limits.MaxConnsPerPeer
			}
			if *p != 0 {
				return nil, bad("%s given twice", fields[0])
			}
			*p = int(n)
		case "wire-protection":
			if len(fields) != 2 {
				return nil, bad("want `wire-protection aead` or `wire-protection integrity`")
			}
			if protectionSet {
				return nil, bad("wire-protection given twice")
			}
			p, err := wire.ParseProtection(fields[1])
			if err != nil {
				return nil, bad("%v", err)
			}
			f.Protection, protectionSet = p, true
		case "root-squash":
			if len(fields) != 2 || fields[1] != "on" && fields[1] != "off" {
				return nil, bad("want `root-squash on` or `root-squash off`")
			}
			if squashSet {
				return nil, bad("root-squash given twice")
			}
			f.NoRootSquash, squashSet = fields[1] == "off", true
		default:
			return nil, bad("unknown directive %q (want secret-file, meta, data, max-conns, max-conns-per-peer, wire-protection, root-squash, disk-rate, net-rate or net-rate-local)", fields[0])
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("cluster file line %d: %w", line+1, err)
	}
	// No data line is fine: clients learn the I/O servers from the
	// metadata server, so a file for clients of servers configured by
	// flags needs only meta and secret-file. The metadata server asks for
	// them (CheckServers).
	switch {
	case f.Meta == "":
		return nil, errors.New("cluster file: no `meta HOST:PORT` line")
	case f.SecretFile == "":
		return nil, errors.New("cluster file: no `secret-file PATH` line")
	}
	return f, nil
}

// checkServer checks an I/O server's entry, and it against the entries
// before it.
func checkServer(prev []ServerEntry, e ServerEntry) error {
	if err := checkAddr(e.Addr); err != nil {
		return fmt.Errorf("address of I/O server %s: %v", e.Name, err)
	}
	for _, d := range prev {
		switch {
		case d.Name == e.Name:
			return fmt.Errorf("I/O server name %q used twice", e.Name)
		// One server answers at one address, under one name: a second
		// entry with the address is a copy-and-paste mistake that would
		// put two "servers'" datafiles on one disk.
		case d.Addr == e.Addr:
			return fmt.Errorf("I/O server %s has the address %s of I/O server %s", e.Name, e.Addr, d.Name)
		}
	}
	return nil
}

// ParseServers reads I/O servers given as NAME=HOST:PORT values (pario
// meta --data), checked as a cluster file's data lines are; an error
// quotes the value at fault.
func ParseServers(vals []string) ([]ServerEntry, error) {
	var out []ServerEntry
	for _, v := range vals {
		name, addr, ok := strings.Cut(v, "=")
		if !ok || name == "" || strings.ContainsFunc(name, unicode.IsSpace) {
			return nil, fmt.Errorf("%q: want NAME=HOST:PORT", v)
		}
		e := ServerEntry{Name: name, Addr: addr}
		if err := checkServer(out, e); err != nil {
			return nil, fmt.Errorf("%q: %w", v, err)
		}
		out = append(out, e)
	}
	return out, nil
}

func checkAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if host == "" {
		return fmt.Errorf("%q has no host", addr)
	}
	// A number, not a service name, and not 0 (or 00...): a server must
	// listen where the file says, not on a port the kernel picks.
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
		return fmt.Errorf("%q has no fixed port (want 1 to 65535)", addr)
	}
	return nil
}

// CheckServers is the check of a metadata server reading the file: it
// needs the I/O servers, which a file for clients alone may leave out.
func (f *File) CheckServers() error {
	if len(f.Data) == 0 {
		return errors.New("cluster file: no `data NAME HOST:PORT` line: the metadata server needs its I/O servers")
	}
	return nil
}

// MaxFileSize bounds what ReadFile reads: a cluster file of tens of
// thousands of servers fits, and a --cluster naming /dev/zero or a huge
// file by mistake is an error instead of every byte of memory.
const MaxFileSize = 1 << 20

// ReadFile reads and parses a cluster file.
func ReadFile(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, err // a *PathError: it names the file
	}
	if len(b) > MaxFileSize {
		return nil, fmt.Errorf("%s: larger than %d bytes: not a cluster file (a cluster file is a few lines of text: docs/store.md)", path, MaxFileSize)
	}
	cf, err := ParseFile(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	cf.Dir = filepath.Dir(path)
	return cf, nil
}

// Format renders the text form.
func (f *File) Format() []byte {
	var b bytes.Buffer
	b.WriteString("# pario cluster file\n")
	fmt.Fprintf(&b, "secret-file %s\n", f.SecretFile)
	fmt.Fprintf(&b, "meta %s\n", f.Meta)
	for _, d := range f.Data {
		fmt.Fprintf(&b, "data %s %s\n", d.Name, d.Addr)
	}
	if f.Limits.MaxConnsPerPeer > 0 {
		fmt.Fprintf(&b, "max-conns-per-peer %d\n", f.Limits.MaxConnsPerPeer)
	}
	if f.Limits.MaxConns > 0 {
		fmt.Fprintf(&b, "max-conns %d\n", f.Limits.MaxConns)
	}
	if f.Protection != wire.ProtectAEAD {
		fmt.Fprintf(&b, "wire-protection %s\n", f.Protection)
	}
	if f.NoRootSquash {
		b.WriteString("root-squash off\n")
	}
	b.WriteString(f.Emulation.format())
	return b.Bytes()
}

// WriteFile writes the cluster file atomically (temporary file, rename).
func (f *File) WriteFile(path string) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, f.Format(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// Secret reads the shared secret the file points at.
func (f *File) Secret() ([]byte, error) {
	p := f.SecretFile
	if !filepath.IsAbs(p) && f.Dir != "" {
		p = filepath.Join(f.Dir, p)
	}
	return ReadSecret(p)
}

// MinSecretBits is the least key material a secret must hold: 128 bits,
// 16 random bytes, 32 hex digits.
const MinSecretBits = 128

// secretHowTo says how to make a good secret, for the errors below.
const secretHowTo = "`pario secret FILE` writes a good one (or: head -c 32 /dev/urandom | xxd -p -c 64 > FILE; chmod 600 FILE)"

// ReadSecret reads a secret file: hex text (as pario writes it) or raw
// bytes. Like ssh with a private key, it refuses a file that others may
// read or write, and it refuses a secret weaker than MinSecretBits (see
// CheckSecret): a guessable secret lets anyone on the network in.
func ReadSecret(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read secret: %w", err)
	}
	defer f.Close()
	// Stat the open file, not the path: what is checked is what is read.
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read secret: %w", err)
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("secret file %s is open to others (mode %04o): anyone who can read it can use and change the store; run chmod 600 %s", path, perm, path)
	}
	b, err := io.ReadAll(io.LimitReader(f, 64<<10))
	if err != nil {
		return nil, fmt.Errorf("read secret %s: %w", path, err)
	}
	key, err := CheckSecret(b)
	if err != nil {
		return nil, fmt.Errorf("secret file %s: %w; %s", path, err, secretHowTo)
	}
	return key, nil
}

// CheckSecret returns the key a secret file's text holds and refuses a
// weak one. Text made only of hex digits is hex (4 bits a digit; pario
// writes 64 of them); other text counts 6 bits a character when printable
// (as much as base64 carries), raw bytes 8. Under MinSecretBits is
// refused, and so is key material that is obviously not random: few
// distinct symbols, a repeated pattern or a counting sequence ("aaaa...",
// "abab...", "0123..."). These tests cannot prove a secret random; they
// catch the secrets people type by hand.
func CheckSecret(text []byte) ([]byte, error) {
	t := bytes.TrimSpace(text)
	key, bits := t, 8*len(t)
	if isHex(t) {
		if len(t)%2 != 0 {
			return nil, fmt.Errorf("%d hex digits, an odd number", len(t))
		}
		key, _ = hex.DecodeString(string(t))
		bits = 4 * len(t)
	} else if isPrintable(t) {
		bits = 6 * len(t)
	}
	if bits < MinSecretBits {
		return nil, fmt.Errorf("the secret holds at most %d bits; want at least %d (32 hex digits)", bits, MinSecretBits)
	}
	if why := wire.NotRandom(key); why != "" {
		return nil, fmt.Errorf("the secret is not random (%s)", why)
	}
	return key, nil
}

func isHex(b []byte) bool {
	for _, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return len(b) > 0
}

func isPrintable(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}

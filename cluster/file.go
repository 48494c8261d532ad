package cluster

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/pario/pario/wire"
)

// File is a cluster file: where the servers of one pario cluster listen and
// where the shared secret is. The same file serves every host: metadata and
// I/O servers find their own address in it, clients find the metadata
// server. Its text form, one directive per line ('#' starts a comment):
//
//	secret-file secret          # path, relative to the cluster file's directory
//	meta 10.0.0.1:7000
//	data data0 10.0.0.2:7001    # name and address, in server-index order
//	data data1 10.0.0.3:7001
//	max-conns-per-peer 4096     # optional: connections one host may hold to a server
//	max-conns 20000             # optional: connections one server accepts at once
//	wire-protection integrity   # optional: aead (the default) or integrity
//
// wire-protection says how frames are protected after the handshake: aead
// encrypts and authenticates every frame; integrity authenticates every
// frame but sends it in the clear, for trusted networks. Every server and
// client of the cluster must use the same (they refuse each other
// otherwise), which one file for all makes easy.
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
	names := map[string]bool{}
	protectionSet := false
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
			if names[fields[1]] {
				return nil, bad("I/O server name %q used twice", fields[1])
			}
			if err := checkAddr(fields[2]); err != nil {
				return nil, bad("address of I/O server %s: %v", fields[1], err)
			}
			names[fields[1]] = true
			f.Data = append(f.Data, ServerEntry{Name: fields[1], Addr: fields[2]})
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
		default:
			return nil, bad("unknown directive %q (want secret-file, meta, data, max-conns, max-conns-per-peer or wire-protection)", fields[0])
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("cluster file line %d: %w", line+1, err)
	}
	switch {
	case f.Meta == "":
		return nil, errors.New("cluster file: no `meta HOST:PORT` line")
	case len(f.Data) == 0:
		return nil, errors.New("cluster file: no `data NAME HOST:PORT` line")
	case f.SecretFile == "":
		return nil, errors.New("cluster file: no `secret-file PATH` line")
	}
	return f, nil
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

// ReadFile reads and parses a cluster file.
func ReadFile(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f, err := ParseFile(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f.Dir = filepath.Dir(path)
	return f, nil
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

// ReadSecret reads a secret file: hex text (as pario writes it) or raw bytes.
func ReadSecret(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read secret: %w", err)
	}
	t := bytes.TrimSpace(b)
	if dec, err := hex.DecodeString(string(t)); err == nil && len(dec) >= 16 {
		return dec, nil
	}
	if len(t) < 16 {
		return nil, fmt.Errorf("secret file %s holds %d bytes; want at least 16", path, len(t))
	}
	return t, nil
}

package meta

import (
	"fmt"

	"github.com/pario/pario/wire"
)

// Operation codes of the metadata server protocol. Paths are strings,
// layouts travel in their text form (dist.Layout.String), attributes in the
// same versioned encoding the database uses.
const (
	OpServers   uint8 = 1  // -> count, then per I/O server: name, address
	OpLookup    uint8 = 2  // path -> attr
	OpCreate    uint8 = 3  // path, mode u32, layout hints (text, "" = inherit) -> attr
	OpMkdir     uint8 = 4  // path, mode u32 -> attr
	OpReaddir   uint8 = 5  // path -> count, then per entry: name, attr
	OpRename    uint8 = 6  // old, new -> replaced bool, [attr]
	OpRemove    uint8 = 7  // path -> attr
	OpSetLayout uint8 = 8  // path, layout (text, "" = clear), fileIsEmpty bool -> attr
	OpUnstuff   uint8 = 9  // id u64 -> attr
	OpSetAttr   uint8 = 10 // path, has-mode bool, mode u32, has-mtime bool, mtime i64, has-size bool, size i64 -> attr
	OpGetByID   uint8 = 11 // id u64 -> attr
	OpStats     uint8 = 12 // -> files i64, dirs i64
)

// OpName names an operation for logs and errors.
func OpName(op uint8) string {
	names := map[uint8]string{
		OpServers: "servers", OpLookup: "lookup", OpCreate: "create", OpMkdir: "mkdir",
		OpReaddir: "readdir", OpRename: "rename", OpRemove: "remove", OpSetLayout: "setlayout",
		OpUnstuff: "unstuff", OpSetAttr: "setattr", OpGetByID: "getbyid", OpStats: "stats",
	}
	if n, ok := names[op]; ok {
		return n
	}
	return "unknown"
}

// ServerInfo names one I/O server of the cluster.
type ServerInfo struct {
	Name string // e.g. "data0"
	Addr string // host:port clients dial
}

// maxListLen bounds counts read off the wire before anything is allocated.
const maxListLen = 1 << 20

// PutAttr appends an attribute to an argument section.
func PutAttr(e *wire.Enc, a *Attr) { e.Blob(encodeAttr(a)) }

// GetAttr reads an attribute written by PutAttr.
func GetAttr(d *wire.Dec, field string) (Attr, error) {
	b := d.Blob(field)
	if err := d.Err(); err != nil {
		return Attr{}, err
	}
	a, err := decodeAttr(b)
	if err != nil {
		return Attr{}, fmt.Errorf("field %q: %w", field, err)
	}
	return a, nil
}

// EncodeServers encodes the I/O server list (the OpServers answer).
func EncodeServers(list []ServerInfo) []byte {
	var e wire.Enc
	e.Uvarint(uint64(len(list)))
	for _, s := range list {
		e.String(s.Name)
		e.String(s.Addr)
	}
	return e.Bytes()
}

// DecodeServers decodes an OpServers answer.
func DecodeServers(b []byte) ([]ServerInfo, error) {
	d := wire.NewDec(b)
	n := d.Int("server count", maxListLen)
	var list []ServerInfo
	for i := 0; i < n && d.Err() == nil; i++ {
		list = append(list, ServerInfo{Name: d.String("server name"), Addr: d.String("server address")})
	}
	if err := d.Done(); err != nil {
		return nil, err
	}
	return list, nil
}

// EncodeDirEntries encodes a directory listing (the OpReaddir answer).
func EncodeDirEntries(ents []DirEntry) []byte {
	var e wire.Enc
	e.Uvarint(uint64(len(ents)))
	for i := range ents {
		e.String(ents[i].Name)
		PutAttr(&e, &ents[i].Attr)
	}
	return e.Bytes()
}

// DecodeDirEntries decodes an OpReaddir answer.
func DecodeDirEntries(b []byte) ([]DirEntry, error) {
	d := wire.NewDec(b)
	n := d.Int("entry count", maxListLen)
	ents := make([]DirEntry, 0, min(n, 1024))
	for i := 0; i < n; i++ {
		name := d.String("entry name")
		a, err := GetAttr(d, "entry attr")
		if err != nil {
			return nil, err
		}
		ents = append(ents, DirEntry{Name: name, Attr: a})
	}
	if err := d.Done(); err != nil {
		return nil, err
	}
	return ents, nil
}

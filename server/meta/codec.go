package meta

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// attrVersion is the leading byte of every encoded Attr. Version 1 had no
// Atime and Rdev (it still decodes: Atime reads as Mtime) and only
// directories and files; versions 1 and 2 had no Uid and Gid (they read as
// 0, root's); versions 1 to 3 had no Nlink and Target and no symbolic
// links (Nlink reads as 1, or 0, unknown, for a directory).
const (
	attrVersion   = 4
	attrVersionV3 = 3
	attrVersionV2 = 2
	attrVersionV1 = 1
)

const flagStuffed = 1 << 0

// encodeAttr renders a in the versioned binary form described in doc.go.
func encodeAttr(a *Attr) []byte {
	b := make([]byte, 0, 56+len(a.Target)+len(a.Layout.Dist)+len(a.Layout.Params)+2*len(a.Servers))
	b = append(b, attrVersion)
	b = binary.AppendUvarint(b, uint64(a.ID))
	b = append(b, byte(a.Kind))
	b = binary.AppendUvarint(b, uint64(a.Mode))
	b = binary.AppendVarint(b, a.Mtime)
	b = binary.AppendVarint(b, a.Ctime)
	b = binary.AppendVarint(b, a.Atime)
	b = binary.AppendUvarint(b, a.Rdev)
	b = binary.AppendUvarint(b, uint64(a.Uid))
	b = binary.AppendUvarint(b, uint64(a.Gid))
	b = binary.AppendUvarint(b, uint64(a.Nlink))
	b = appendString(b, a.Target)
	b = appendString(b, a.Layout.Dist)
	b = appendString(b, a.Layout.Params)
	b = binary.AppendUvarint(b, uint64(max(a.Layout.Datafiles, 0)))
	b = binary.AppendUvarint(b, uint64(len(a.Servers)))
	for _, s := range a.Servers {
		b = binary.AppendUvarint(b, uint64(s))
	}
	var flags byte
	if a.Stuffed {
		flags |= flagStuffed
	}
	b = append(b, flags)
	b = binary.AppendVarint(b, a.Size)
	return b
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// errCorrupt is wrapped by every decoding error.
var errCorrupt = errors.New("meta: corrupt attribute record")

// decoder reads varints from a byte slice, remembering the first error.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: bad or truncated %s", errCorrupt, what)
	}
}

func (d *decoder) byte(what string) byte {
	if d.err != nil {
		return 0
	}
	if len(d.b) == 0 {
		d.fail(what)
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) uvarint(what string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail(what)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint(what string) int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail(what)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) uint32(what string) uint32 {
	v := d.uvarint(what)
	if v > math.MaxUint32 {
		d.fail(what)
		return 0
	}
	return uint32(v)
}

func (d *decoder) string(what string) string {
	n := d.uvarint(what)
	if d.err != nil {
		return ""
	}
	if n > uint64(len(d.b)) {
		d.fail(what)
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

// decodeAttr parses an encoded Attr. Any malformed input (truncated,
// trailing bytes, unknown version or kind, out-of-range numbers) gives an
// error wrapping errCorrupt; it never panics.
func decodeAttr(b []byte) (Attr, error) {
	d := decoder{b: b}
	var a Attr
	v := d.byte("version")
	if d.err == nil && (v < attrVersionV1 || v > attrVersion) {
		return Attr{}, fmt.Errorf("%w: unknown version %d", errCorrupt, v)
	}
	a.ID = FileID(d.uvarint("id"))
	a.Kind = Kind(d.byte("kind"))
	if d.err == nil && (!a.Kind.valid() || v == attrVersionV1 && a.Kind.Special() || v < attrVersion && a.Kind == KindSymlink) {
		return Attr{}, fmt.Errorf("%w: unknown kind %d", errCorrupt, a.Kind)
	}
	a.Mode = d.uint32("mode")
	a.Mtime = d.varint("mtime")
	a.Ctime = d.varint("ctime")
	if v == attrVersionV1 {
		a.Atime = a.Mtime
	} else {
		a.Atime = d.varint("atime")
		a.Rdev = d.uvarint("rdev")
	}
	if v >= attrVersionV3 {
		a.Uid = d.uint32("uid")
		a.Gid = d.uint32("gid")
	}
	if v >= attrVersion {
		a.Nlink = d.uint32("link count")
		a.Target = d.string("symbolic link target")
		if d.err == nil && (len(a.Target) > MaxPathLen || (a.Target != "") != (a.Kind == KindSymlink)) {
			d.fail("symbolic link target")
		}
	} else if a.Kind != KindDir {
		a.Nlink = 1
	}
	a.Layout.Dist = d.string("layout name")
	a.Layout.Params = d.string("layout parameters")
	if n := d.uvarint("datafile count"); n > math.MaxInt32 {
		d.fail("datafile count")
	} else {
		a.Layout.Datafiles = int(n)
	}
	n := d.uvarint("server count")
	if d.err == nil && n > uint64(len(d.b)) { // each index takes at least one byte
		d.fail("server count")
	}
	if d.err == nil && n > 0 {
		a.Servers = make([]uint32, n)
		for i := range a.Servers {
			a.Servers[i] = d.uint32("server index")
		}
	}
	flags := d.byte("flags")
	if d.err == nil && flags&^flagStuffed != 0 {
		return Attr{}, fmt.Errorf("%w: unknown flags %#x", errCorrupt, flags)
	}
	a.Stuffed = flags&flagStuffed != 0
	a.Size = d.varint("size")
	if d.err != nil {
		return Attr{}, d.err
	}
	if len(d.b) != 0 {
		return Attr{}, fmt.Errorf("%w: %d trailing bytes", errCorrupt, len(d.b))
	}
	return a, nil
}

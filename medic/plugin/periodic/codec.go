package periodic

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"

	"github.com/klauspost/compress/zstd"
)

const magic = "PMEDIC-PER1\n"

// Metadata modes.
const (
	modeRaw      = 0 // zstd of the input as is
	modeColumnar = 1 // columns of differences, period p (p = 0: none found)
)

// Stats describes an encoding.
type Stats struct {
	Events int
	Period int // records per period used; 0 when none was found or used
	Mode   string
}

var (
	zenc, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBestCompression), zstd.WithEncoderConcurrency(1))
	zdec, _ = zstd.NewReader(nil, zstd.WithDecoderMaxMemory(1<<32), zstd.WithDecoderConcurrency(1))
)

// EncodeTrace returns the metadata for a trace.
func EncodeTrace(raw []byte) ([]byte, Stats, error) {
	best := append([]byte(magic+"\x00"), zenc.EncodeAll(raw, nil)...)
	st := Stats{Mode: "zstd"}
	evs, err := Parse(raw)
	if err != nil || !bytes.Equal(Format(evs), raw) {
		return best, st, nil
	}
	st.Events = len(evs)
	periods := []int{0}
	if p := DetectPeriod(evs); p > 1 {
		periods = append(periods, p)
	}
	for _, p := range periods {
		m := append([]byte(magic+"\x01"), zenc.EncodeAll(columns(evs, p), nil)...)
		if len(m) < len(best) {
			best, st = m, Stats{Events: len(evs), Period: p, Mode: "columnar"}
		}
	}
	return best, st, nil
}

// columns lays the trace out as: n, p, the event-name table, then seven
// columns of zigzag varints, each prefixed by its length: ref, time, rank,
// event, peer, tag, size.
//
// With p = 0 every record is a literal: time as the difference from the
// previous record's, the other fields as they are. With p > 0 a record
// whose event (rank, event, peer, tag, size) occurred before is coded
// against the occurrence nearest to one period earlier, at i-p-off: ref is
// zigzag(off)+1, the other fields are equal and not stored, and time is
// stored as the change of (t[i] - t[ref]) from the previous such record's.
// A record without an earlier occurrence (the first period, irregular
// events) has ref 0 and is a literal.
func columns(evs []Event, p int) []byte {
	var kinds []string
	idx := map[string]int64{}
	for _, e := range evs {
		if _, ok := idx[e.Kind]; !ok {
			idx[e.Kind] = int64(len(kinds))
			kinds = append(kinds, e.Kind)
		}
	}
	out := binary.AppendUvarint(nil, uint64(len(evs)))
	out = binary.AppendUvarint(out, uint64(p))
	out = binary.AppendUvarint(out, uint64(len(kinds)))
	for _, k := range kinds {
		out = binary.AppendUvarint(out, uint64(len(k)))
		out = append(out, k...)
	}
	var col [7][]byte
	var prevD int64
	occ := map[Event][]int{}
	for i, e := range evs {
		key := e
		key.Time = 0
		if p > 0 {
			if j := nearest(occ[key], i-p); j >= 0 {
				d := e.Time - evs[j].Time
				col[0] = binary.AppendUvarint(col[0], zigzag(int64(i-p-j))+1)
				col[1] = binary.AppendVarint(col[1], d-prevD)
				prevD = d
				occ[key] = append(occ[key], i)
				continue
			}
			occ[key] = append(occ[key], i)
			col[0] = binary.AppendUvarint(col[0], 0)
		}
		dt := e.Time
		if i > 0 {
			dt -= evs[i-1].Time
		}
		col[1] = binary.AppendVarint(col[1], dt)
		col[2] = binary.AppendVarint(col[2], e.Rank)
		col[3] = binary.AppendVarint(col[3], idx[e.Kind])
		col[4] = binary.AppendVarint(col[4], e.Peer)
		col[5] = binary.AppendVarint(col[5], e.Tag)
		col[6] = binary.AppendVarint(col[6], e.Size)
	}
	for _, c := range col {
		out = binary.AppendUvarint(out, uint64(len(c)))
		out = append(out, c...)
	}
	return out
}

// nearest returns the element of the ascending list closest to x, preferring
// the later one on ties, or -1 for an empty list.
func nearest(list []int, x int) int {
	k := sort.SearchInts(list, x)
	switch {
	case len(list) == 0:
		return -1
	case k == len(list):
		return list[k-1]
	case k == 0:
		return list[0]
	case x-list[k-1] < list[k]-x:
		return list[k-1]
	}
	return list[k]
}

func zigzag(v int64) uint64 { return uint64(v<<1) ^ uint64(v>>63) }

func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

var errCorrupt = errors.New("periodic: corrupt metadata")

// DecodeTrace regenerates the trace from metadata.
func DecodeTrace(meta []byte) ([]byte, error) {
	if len(meta) < len(magic)+1 || string(meta[:len(magic)]) != magic {
		return nil, fmt.Errorf("%w: bad magic", errCorrupt)
	}
	mode := meta[len(magic)]
	body, err := zdec.DecodeAll(meta[len(magic)+1:], nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errCorrupt, err)
	}
	switch mode {
	case modeRaw:
		return body, nil
	case modeColumnar:
		evs, err := uncolumns(body)
		if err != nil {
			return nil, err
		}
		return Format(evs), nil
	}
	return nil, fmt.Errorf("%w: mode %d", errCorrupt, mode)
}

type reader struct {
	b   []byte
	err error
}

func (r *reader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errCorrupt
		r.b = nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) bytes(n uint64) []byte {
	if n > uint64(len(r.b)) {
		r.err = errCorrupt
		r.b = nil
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func uncolumns(b []byte) ([]Event, error) {
	r := &reader{b: b}
	n := r.uvarint()
	p := r.uvarint()
	nk := r.uvarint()
	if r.err != nil || n > uint64(len(b)) || nk > uint64(len(b)) || p > n {
		return nil, errCorrupt
	}
	kinds := make([]string, nk)
	for i := range kinds {
		kinds[i] = string(r.bytes(r.uvarint()))
	}
	var col [7][]byte
	for c := range col {
		col[c] = r.bytes(r.uvarint())
	}
	if r.err != nil {
		return nil, errCorrupt
	}
	next := func(c int) (int64, error) {
		v, k := binary.Varint(col[c])
		if k <= 0 {
			return 0, fmt.Errorf("%w: column %d ends early", errCorrupt, c)
		}
		col[c] = col[c][k:]
		return v, nil
	}
	evs := make([]Event, n)
	var prevD int64
	for i := range evs {
		ref := uint64(0)
		if p > 0 {
			v, k := binary.Uvarint(col[0])
			if k <= 0 {
				return nil, fmt.Errorf("%w: column 0 ends early", errCorrupt)
			}
			col[0] = col[0][k:]
			ref = v
		}
		if ref > 0 {
			j := int64(i) - int64(p) - unzigzag(ref-1)
			if j < 0 || j >= int64(i) {
				return nil, fmt.Errorf("%w: record %d refers to %d", errCorrupt, i, j)
			}
			dd, err := next(1)
			if err != nil {
				return nil, err
			}
			d := prevD + dd
			prevD = d
			e := evs[j]
			e.Time += d
			if e.Time < 0 {
				return nil, fmt.Errorf("%w: record %d out of range", errCorrupt, i)
			}
			evs[i] = e
			continue
		}
		var f [7]int64
		for c := 1; c < 7; c++ {
			v, err := next(c)
			if err != nil {
				return nil, err
			}
			f[c] = v
		}
		e := Event{Time: f[1], Rank: f[2], Peer: f[4], Tag: f[5], Size: f[6]}
		if i > 0 {
			e.Time += evs[i-1].Time
		}
		if f[3] < 0 || f[3] >= int64(len(kinds)) || e.Time < 0 {
			return nil, fmt.Errorf("%w: record %d out of range", errCorrupt, i)
		}
		e.Kind = kinds[f[3]]
		evs[i] = e
	}
	return evs, nil
}

package bench

import (
	"encoding/binary"
	"fmt"
)

// The data signature. Every 8-byte word the benchmark writes says who
// wrote it, so that verification (-W, -R) can name a misplaced block:
//
//   - the body of a transfer is a pseudo-random stream (splitmix64) seeded
//     by the writer's rank and the repetition, the same for every transfer
//     of that rank in that repetition, so it is made once per phase;
//
//   - the first word of a transfer and then every 512th word (one per
//     4 KiB) is a stamp: the file offset of that word, the writer's rank
//     and the repetition, packed as
//
//     bits  0-39  offset / 8        (offsets up to 8 TiB; higher ones wrap)
//     bits 40-55  rank              (mod 65536)
//     bits 56-63  repetition        (mod 256)
//
//     and XORed with stampMask so that zeros (a hole, a lost write) never
//     pass.
//
// Writing costs one store per 4 KiB on top of the I/O (IOR's own pattern
// works the same way); checking is one memcmp per transfer against the
// expected data, and only a mismatch is decoded word by word.
const (
	stampEvery = 512 // words: one stamp per 4 KiB
	stampMask  = 0x9e3779b97f4a7c15
	offsetBits = 40
)

// Stamp is the packed word at a stamp position.
func Stamp(off int64, rank, rep int) uint64 {
	v := uint64(off>>3)&(1<<offsetBits-1) | uint64(rank&0xffff)<<40 | uint64(rep&0xff)<<56
	return v ^ stampMask
}

// DecodeStamp unpacks a stamp word.
func DecodeStamp(w uint64) (off int64, rank, rep int) {
	v := w ^ stampMask
	return int64(v&(1<<offsetBits-1)) << 3, int(v >> 40 & 0xffff), int(v >> 56)
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// FillBody writes the body stream of (rank, rep) into buf, whose length
// must be a multiple of 8; sig (-G) selects one of many such streams.
func FillBody(buf []byte, rank, rep int, sig int64) {
	seed := uint64(rank)<<32 ^ uint64(rep)<<8 ^ 0x5041524f
	if sig != 0 { // 0 keeps the stream pario always wrote
		seed ^= splitmix(uint64(sig))
	}
	s := splitmix(seed)
	for i := 0; i+8 <= len(buf); i += 8 {
		s = splitmix(s)
		binary.LittleEndian.PutUint64(buf[i:], s)
	}
}

// StampTransfer writes the stamps of a transfer at file offset off into
// buf (which holds the body).
func StampTransfer(buf []byte, off int64, rank, rep int) {
	for i := 0; i+8 <= len(buf); i += stampEvery * 8 {
		binary.LittleEndian.PutUint64(buf[i:], Stamp(off+int64(i), rank, rep))
	}
}

// Mismatch describes the first wrong word of a transfer.
type Mismatch struct {
	Offset   int64  // file offset of the first wrong byte's word
	Expected uint64 // the word that should be there
	Found    uint64
	Stamp    bool // the word is a stamp position
	Rank     int  // who should have written it
	Rep      int
	Words    int // how many words of the transfer differ
}

// Describe explains the mismatch: for a stamp, whose data is there
// instead.
func (m Mismatch) Describe() string {
	s := fmt.Sprintf("offset %d: expected data of rank %d, repetition %d", m.Offset, m.Rank, m.Rep)
	switch {
	case m.Found == 0:
		s += ", found zeros (a hole or a lost write)"
	case m.Stamp:
		off, rank, rep := DecodeStamp(m.Found)
		s += fmt.Sprintf(", found a block stamped for offset %d by rank %d in repetition %d", off, rank, rep&0xff)
		if off == m.Offset && rank == m.Rank&0xffff {
			s += " (stale data from an earlier repetition)"
		} else if off != m.Offset {
			s += fmt.Sprintf(" (misplaced by %+d bytes)", m.Offset-off)
		}
	default:
		s += fmt.Sprintf(", found word %#016x instead of %#016x", m.Found, m.Expected)
	}
	return s + fmt.Sprintf("; %d of the transfer's words differ", m.Words)
}

// findMismatch compares got with want word by word (the slow path, taken
// only when they differ) and describes the first difference.
func findMismatch(got, want []byte, off int64, rank, rep int) Mismatch {
	m := Mismatch{Offset: -1, Rank: rank, Rep: rep}
	for i := 0; i+8 <= len(got); i += 8 {
		g := binary.LittleEndian.Uint64(got[i:])
		w := binary.LittleEndian.Uint64(want[i:])
		if g == w {
			continue
		}
		m.Words++
		if m.Offset < 0 {
			m.Offset, m.Expected, m.Found = off+int64(i), w, g
			m.Stamp = (i/8)%stampEvery == 0
			if !m.Stamp {
				// Name the block the data came from by its stamp.
				st := i &^ (stampEvery*8 - 1)
				if gs := binary.LittleEndian.Uint64(got[st:]); gs != binary.LittleEndian.Uint64(want[st:]) {
					m.Offset, m.Expected, m.Found, m.Stamp = off+int64(st), binary.LittleEndian.Uint64(want[st:]), gs, true
				}
			}
		}
	}
	return m
}

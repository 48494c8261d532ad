package data

import "sync"

// An I/O server holds one descriptor per datafile, shared by every client
// reading it, so the kernel's read-ahead, which follows one stream per open
// file, sees the interleaved requests of several readers (the ranks of a
// shared file, each in a region of its own) as random and keeps shrinking
// its window: the readers then wait for the disk in turn, and finish far
// apart. The server follows up to maxStreams streams per datafile itself,
// as a process per rank reading a local file gets from the kernel: a read
// that starts near where a stream's last read ended continues it (requests
// of one reader in flight together arrive in any order), and the server
// asks the kernel to read the stream's next readaheadWindow bytes
// (vfs.WillNeed), half a window at a time.
const (
	maxStreams      = 8
	readaheadWindow = 4 << 20
	// streamSlack is how far from a stream's end a read may start and
	// still continue it.
	streamSlack = 1 << 20
)

type stream struct {
	end   int64 // where its furthest read ended
	ahead int64 // how far read-ahead has been asked
}

// streams are the sequential readers of one datafile, most recent first.
type streams struct {
	mu sync.Mutex
	s  []stream
}

// read records a read of [off, off+n) and returns the range to read ahead
// for it; length 0 means none. A read that continues no stream starts one,
// with no read-ahead yet: one read is no pattern, and random readers never
// pay for reading ahead.
func (ss *streams) read(off, n int64) (from, length int64) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	end := off + n
	for i, st := range ss.s {
		if off < st.end-streamSlack || off > st.end+streamSlack {
			continue
		}
		st.end = max(st.end, end)
		if st.ahead < st.end+readaheadWindow/2 {
			from = max(st.ahead, st.end)
			length = st.end + readaheadWindow - from
			st.ahead = st.end + readaheadWindow
		}
		copy(ss.s[1:i+1], ss.s[:i])
		ss.s[0] = st
		return from, length
	}
	if len(ss.s) < maxStreams {
		ss.s = append(ss.s, stream{})
	}
	copy(ss.s[1:], ss.s[:len(ss.s)-1])
	ss.s[0] = stream{end: end, ahead: end}
	return 0, 0
}

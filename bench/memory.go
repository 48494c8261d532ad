package bench

import (
	"bufio"
	"bytes"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/pario/pario/units"
)

// A rank holds two transfer buffers (what it writes and what it reads back)
// and, with -z, its list of offsets; --strided calls over many blocks hold
// one extent per block. A size that cannot fit must be refused before any
// allocation: the Go runtime does not return an error for a failed make,
// it dies with "fatal error: out of memory" and a goroutine dump.

// bufferAlign is alignedBuffer's slack.
const bufferAlign = 4096

// RankMemory is the memory one rank of o allocates for its buffers and
// offset lists, in bytes, saturating at math.MaxInt64.
func RankMemory(o Options) int64 {
	need := satMul(2, satAdd(o.TransferSize, bufferAlign))
	if o.TransferSize > 0 && o.RandomOffset {
		// One int64 offset per transfer of a block (with -F) or of the
		// rank's share of a segment (shared file): b/t either way.
		need = satAdd(need, satMul(8, o.BlockSize/o.TransferSize+1))
	}
	if o.Strided && o.BlockSize > 0 && o.TransferSize > o.BlockSize {
		// One 16-byte extent per block a call covers.
		need = satAdd(need, satMul(16, o.TransferSize/o.BlockSize+2))
	}
	return need
}

// CheckMemory refuses o when ranks ranks of it on one host need more than
// avail bytes (avail <= 0: unknown, only the address space is checked).
// Its errors match ErrUsage.
func CheckMemory(o Options, ranks int, avail int64) error {
	if o.TransferSize > math.MaxInt-bufferAlign {
		return usagef("-t %s: a transfer buffer that large cannot be addressed on this machine", units.FormatSize(o.TransferSize))
	}
	ranks = max(ranks, 1)
	per := RankMemory(o)
	need := satMul(int64(ranks), per)
	if avail <= 0 || need <= avail {
		return nil
	}
	what := "two transfer buffers of -t"
	if o.RandomOffset {
		what += " and -z's offset list"
	}
	who := "one rank"
	if ranks > 1 {
		who = strconv.Itoa(ranks) + " ranks"
	}
	return usagef("-t %s -b %s: %s on this host would need %s (%s each: %s) but only %s of memory is available; use a smaller -t (or fewer ranks per host)",
		units.FormatSize(o.TransferSize), units.FormatSize(o.BlockSize), who, units.FormatBytes(need), units.FormatBytes(per), what, units.FormatBytes(avail))
}

// AvailableMemory is the memory this process may still use, in bytes: the
// kernel's MemAvailable, lowered to what is left under the cgroup's
// memory.max when that is set. It returns 0 when neither can be read.
func AvailableMemory() int64 {
	avail := memAvailable()
	if left := cgroupLeft(); left > 0 && (avail == 0 || left < avail) {
		avail = left
	}
	return avail
}

func memAvailable() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	return parseMemInfo(b)
}

// parseMemInfo returns MemAvailable from /proc/meminfo's text, in bytes.
func parseMemInfo(b []byte) int64 {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "MemAvailable:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil || kb < 0 {
				return 0
			}
			return satMul(kb, 1024)
		}
	}
	return 0
}

// cgroupLeft is memory.max - memory.current of this process's cgroup v2,
// or 0 when there is no limit or it cannot be read.
func cgroupLeft() int64 {
	read := func(name string) int64 {
		b, err := os.ReadFile("/sys/fs/cgroup/" + name)
		if err != nil {
			return 0
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			return 0 // "max": no limit
		}
		return n
	}
	limit := read("memory.max")
	if limit <= 0 {
		return 0
	}
	return max(limit-read("memory.current"), 1)
}

func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func satMul(a, b int64) int64 {
	if a != 0 && b > math.MaxInt64/a {
		return math.MaxInt64
	}
	return a * b
}

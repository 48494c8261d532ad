package units

import (
	"fmt"
	"strconv"
)

var binary = []struct {
	shift  uint
	letter string
	name   string
}{{50, "p", "PiB"}, {40, "t", "TiB"}, {30, "g", "GiB"}, {20, "m", "MiB"}, {10, "k", "KiB"}}

// FormatSize writes a byte count as ParseSize and IOR read it: with the
// largest binary suffix that divides it exactly, so 65536 is "64k", 1536
// is "1536" and 0 is "0". ParseSize(FormatSize(n)) is n for every n > 0.
func FormatSize(n int64) string {
	for _, u := range binary {
		if n != 0 && n%(1<<u.shift) == 0 {
			return strconv.FormatInt(n>>u.shift, 10) + u.letter
		}
	}
	return strconv.FormatInt(n, 10)
}

// FormatBytesExact writes a byte count exactly, in the largest binary unit
// that divides it: "128 MiB", "1536 KiB", "1000 B". For reports that name a
// parameter the user chose.
func FormatBytesExact(n int64) string {
	for _, u := range binary {
		if n != 0 && n%(1<<u.shift) == 0 {
			return fmt.Sprintf("%d %s", n>>u.shift, u.name)
		}
	}
	return fmt.Sprintf("%d B", n)
}

// FormatBytes writes a byte count for a person to read: whole bytes below
// 1 KiB, else one decimal in the largest binary unit below it: "1.5 MiB".
func FormatBytes(n int64) string {
	if n < 1<<10 && n > -1<<10 {
		return fmt.Sprintf("%d B", n)
	}
	f, unit := float64(n)/(1<<10), "KiB"
	for _, u := range []string{"MiB", "GiB", "TiB", "PiB", "EiB"} {
		if f < 1<<10 && f > -1<<10 {
			break
		}
		f, unit = f/(1<<10), u
	}
	return fmt.Sprintf("%.1f %s", f, unit)
}

// FormatRate writes bytes/s in decimal units, as ParseRate reads them, with
// three significant digits: "117 MB/s", "1.25 GB/s".
func FormatRate(bps float64) string {
	// Round first, so that 999.96e6 is "1 GB/s", not "1e+03 MB/s".
	bps, _ = strconv.ParseFloat(strconv.FormatFloat(bps, 'g', 3, 64), 64)
	switch {
	case bps >= 1e12:
		return fmt.Sprintf("%.3g TB/s", bps/1e12)
	case bps >= 1e9:
		return fmt.Sprintf("%.3g GB/s", bps/1e9)
	case bps >= 1e6:
		return fmt.Sprintf("%.3g MB/s", bps/1e6)
	case bps >= 1e3:
		return fmt.Sprintf("%.3g kB/s", bps/1e3)
	}
	return fmt.Sprintf("%.3g B/s", bps)
}

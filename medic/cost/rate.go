package cost

import (
	"fmt"
	"strconv"
	"strings"
)

var rateUnits = map[string]float64{
	"": 1, "b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9,
	"k": 1e3, "m": 1e6, "g": 1e9,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30,
	"bit": 1.0 / 8, "kbit": 1e3 / 8, "mbit": 1e6 / 8, "gbit": 1e9 / 8,
	"bps": 1.0 / 8, "kbps": 1e3 / 8, "mbps": 1e6 / 8, "gbps": 1e9 / 8,
}

// ParseRate reads a bandwidth in bytes/s: "1MB/s" (decimal, 1e6),
// "512KiB/s" (binary), "8Mbit/s" or "8Mbps" (bits), or a plain number of
// bytes/s ("117e6").
func ParseRate(s string) (float64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	t = strings.TrimSuffix(t, "/s")
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.' || t[i] == 'e' && i > 0 && i+1 < len(t) && (t[i+1] >= '0' && t[i+1] <= '9' || t[i+1] == '-' || t[i+1] == '+') || (t[i] == '-' || t[i] == '+') && i > 0 && t[i-1] == 'e') {
		i++
	}
	v, err := strconv.ParseFloat(t[:i], 64)
	u, ok := rateUnits[strings.TrimSpace(t[i:])]
	if err != nil || !ok || v <= 0 {
		return 0, fmt.Errorf("bad bandwidth %q: want e.g. 1MB/s, 512KiB/s, 8Mbit/s or bytes/s", s)
	}
	return v * u, nil
}

// FormatRate renders bytes/s with a decimal unit (MB/s).
func FormatRate(b float64) string {
	switch {
	case b >= 1e9:
		return fmt.Sprintf("%.3g GB/s", b/1e9)
	case b >= 1e6:
		return fmt.Sprintf("%.3g MB/s", b/1e6)
	case b >= 1e3:
		return fmt.Sprintf("%.3g kB/s", b/1e3)
	}
	return fmt.Sprintf("%.3g B/s", b)
}

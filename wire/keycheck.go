package wire

import (
	"bytes"
	"fmt"
)

// NotRandom says why key material is obviously not random, or "": few
// distinct byte values, a repeated pattern, or a counting sequence
// ("aaaa...", "abab...", "0123..."). It cannot prove a key random; it
// catches the keys people type or make by hand (a file of zeros, say),
// for the store's secret file and medic's key file alike. A random key
// of 16 or more bytes fails none of these tests but with negligible
// probability (fewer than 8 distinct bytes among 16 random ones: about
// 1e-12).
func NotRandom(k []byte) string {
	var seen [256]bool
	distinct := 0
	for _, c := range k {
		if !seen[c] {
			seen[c] = true
			distinct++
		}
	}
	if distinct < 8 {
		return fmt.Sprintf("only %d distinct byte values", distinct)
	}
	for p := 1; p <= len(k)/2; p++ {
		if bytes.Equal(k[p:], k[:len(k)-p]) {
			return fmt.Sprintf("it repeats every %d bytes", p)
		}
	}
	counting := true
	for i := 2; i < len(k) && counting; i++ {
		counting = k[i]-k[i-1] == k[1]-k[0]
	}
	if counting {
		return "its bytes count up or down in equal steps"
	}
	return ""
}

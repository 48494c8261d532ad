package fusefs

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// What a user writes into user.pario.layout reaches the log cut short: a
// 60 KB value made a 60 KB warning at every setxattr.
func TestClipForTheLog(t *testing.T) {
	if got := clip("simple_stripe:strip_size=x"); got != "simple_stripe:strip_size=x" {
		t.Errorf("a short value changed: %q", got)
	}
	long := strings.Repeat("é", 30000) // 60,000 bytes, 2 per rune
	got := clip(long)
	if len(got) > 300 || !strings.HasSuffix(got, "... (60000 bytes)") || !utf8.ValidString(got) {
		t.Errorf("clip of 60,000 bytes: %d bytes, %q..., valid UTF-8 %v", len(got), got[:min(len(got), 40)], utf8.ValidString(got))
	}
}

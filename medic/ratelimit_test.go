package medic_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pario/pario/medic"
	"github.com/pario/pario/medic/medictest"
)

// A sender that paces itself (RateLimit) asks for acknowledgements often
// enough that its own pacing never looks like a stall (before the fix the
// receiver acknowledged every 32 KiB whatever the limit, and a 40 kB/s
// send with a 0.5 s stall timeout failed as stalled); a limit too low for
// even the smallest acknowledgement within the timeout is refused.
func TestRateLimitedSendIsNotAStall(t *testing.T) {
	s := &site{key: medictest.Key(t)}
	startServer(t, s, nil, nil)
	p := writeFile(t, "big.bin", incompressible(7, 96<<10))
	// 40 kB/s: 32 KiB, the usual acknowledgement, would take 0.8 s.
	_, err := sendFile(t, s, p, "raw", medic.SendOptions{RateLimit: 40e3, StallTimeout: 500 * time.Millisecond})
	if errors.Is(err, medic.ErrStalled) {
		t.Fatalf("a rate-limited send over a healthy link: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	_, err = sendFile(t, s, p, "raw", medic.SendOptions{RateLimit: 1000, StallTimeout: 5 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "rate limit of 1000 bytes/s") || !strings.Contains(err.Error(), "stall timeout") {
		t.Errorf("a limit of 1000 bytes/s with a 5 s stall timeout: %v, want a refusal naming both", err)
	}
}

package fusefs

import (
	"testing"
	"time"
)

// makeRoom leaves a map under its bound alone, drops only the old
// entries when that is enough, and everything when it is not.
func TestMakeRoom(t *testing.T) {
	now, old := time.Now(), time.Now().Add(-time.Hour)
	at := func(t time.Time) time.Time { return t }
	m := map[int]time.Time{1: old, 2: now}
	makeRoom(m, 3, time.Minute, at)
	if len(m) != 2 {
		t.Errorf("under the bound: %d entries left, want 2", len(m))
	}
	m[3] = old
	makeRoom(m, 3, time.Minute, at)
	if _, ok := m[2]; len(m) != 1 || !ok {
		t.Errorf("old entries only: %v left, want the recent one", m)
	}
	m = map[int]time.Time{1: now, 2: now, 3: now}
	makeRoom(m, 3, time.Minute, at)
	if len(m) != 0 {
		t.Errorf("no old entries: %d left, want none", len(m))
	}
}

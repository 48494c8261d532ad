package rank

import (
	"strings"
	"testing"
)

// TestCheckLaunch: a count outside 1..MaxSize, or above what a limit
// leaves room for (two tasks a rank), is refused naming the limit; the
// limits of this host let a few ranks start.
func TestCheckLaunch(t *testing.T) {
	for _, n := range []int{0, -1, MaxSize + 1, int(^uint(0) >> 1)} {
		if err := CheckLaunch(n); err == nil || !strings.Contains(err.Error(), "rank.MaxSize") {
			t.Errorf("CheckLaunch(%d): %v, want it refused naming rank.MaxSize", n, err)
		}
	}
	if err := CheckLaunch(4); err != nil {
		t.Errorf("CheckLaunch(4): %v", err)
	}
	limits := []procLimit{{what: "A is 100", avail: 90}, {what: "B is 50", avail: 21}}
	for _, tc := range []struct {
		n    int
		want string
	}{
		{10, ""},
		{11, "11 ranks: this host has room for at most 10 (B is 50;"},
		{46, "46 ranks: this host has room for at most 45 (A is 100;"},
	} {
		err := checkLimits(tc.n, limits)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("checkLimits(%d): %v, want %q", tc.n, err, tc.want)
		}
	}
	if err := checkLimits(1, []procLimit{{what: "used up", avail: -5}}); err == nil || !strings.Contains(err.Error(), "at most 0") {
		t.Errorf("a limit already exceeded: %v", err)
	}
}

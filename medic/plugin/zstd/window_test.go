package zstd

import "testing"

// The encoder's window holds the output and no more (up to the level's
// default): the encoder allocates its tables for the window, 19 MB for
// the default 8 MiB one.
func TestWindowFitsTheOutput(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want int
	}{
		{0, 1 << 10}, {1, 1 << 10}, {1 << 10, 1 << 10}, {1<<10 + 1, 2 << 10},
		{207037, 256 << 10}, {4 << 20, 4 << 20}, {4<<20 + 1, 0}, {1 << 30, 0},
	} {
		if got := window(tc.n); got != tc.want {
			t.Errorf("window(%d) = %d, want %d", tc.n, got, tc.want)
		}
	}
}

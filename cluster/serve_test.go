package cluster

import "testing"

// The servers' soft memory limit leaves room within the budget for the
// program's own pages, so that a server at its limit is resident within
// its budget (scripts/soak.sh checks the peak), and never falls under
// half the budget for small ones.
func TestHeapLimitKeepsResidentMemoryWithinTheBudget(t *testing.T) {
	for _, tc := range []struct{ budgets, want int64 }{
		{256 << 20, 224 << 20},
		{5 * 256 << 20, 5*256<<20 - 32<<20},
		{48 << 20, 24 << 20},
	} {
		got := HeapLimit(tc.budgets)
		if got != tc.want {
			t.Errorf("HeapLimit(%d MiB) = %d MiB, want %d MiB", tc.budgets>>20, got>>20, tc.want>>20)
		}
		if got+ProgramPages > tc.budgets && got != tc.budgets/2 {
			t.Errorf("HeapLimit(%d MiB) = %d MiB leaves no room for the program's pages", tc.budgets>>20, got>>20)
		}
	}
}

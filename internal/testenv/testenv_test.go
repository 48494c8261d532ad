package testenv

import (
	"fmt"
	"strings"
	"testing"
)

// recorder stands in for a *testing.T: it records what SkipOrFail asked
// for instead of stopping the goroutine.
type recorder struct {
	testing.TB
	fatal, skip string
}

func (r *recorder) Helper()                           {}
func (r *recorder) Fatalf(format string, args ...any) { r.fatal = fmt.Sprintf(format, args...) }
func (r *recorder) Skip(args ...any)                  { r.skip = fmt.Sprint(args...) }

func TestSkipOrFail(t *testing.T) {
	for _, tc := range []struct {
		ci       string
		wantFail bool
	}{
		{"true", true},
		{"", false},
		{"false", false},
		{"1", false}, // only CI=true, as .ci/run sets it
	} {
		t.Run("CI="+tc.ci, func(t *testing.T) {
			t.Setenv("CI", tc.ci)
			var r recorder
			SkipOrFail(&r, "missing %s", "mpirun")
			got := r.skip
			if tc.wantFail {
				got = r.fatal
			}
			if !strings.HasPrefix(got, "missing mpirun") {
				t.Errorf("fatal %q, skip %q; want the message in the %s", r.fatal, r.skip, map[bool]string{true: "failure", false: "skip"}[tc.wantFail])
			}
			if tc.wantFail && r.skip != "" || !tc.wantFail && r.fatal != "" {
				t.Errorf("both: fatal %q, skip %q", r.fatal, r.skip)
			}
		})
	}
}

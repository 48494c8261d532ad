// Package testenv is what tests of several packages share about the
// machine they run on: whether a missing prerequisite (a program, a device,
// root) may skip a test, and whether the race detector is on.
//
// Only test code imports it (test/layering checks that).
package testenv

import (
	"fmt"
	"os"
	"testing"
)

// InCI reports whether the tests run under CI (CI=true), where .ci/run has
// installed every prerequisite.
func InCI() bool { return os.Getenv("CI") == "true" }

// SkipOrFail skips the test for a missing prerequisite, or fails it under
// CI, where a skip would hide that the test never ran. The message should
// say what is missing and how to get it.
func SkipOrFail(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if InCI() {
		t.Fatalf("%s (CI=true: a missing prerequisite fails the test instead of skipping it)", msg)
		return
	}
	t.Skip(msg)
}

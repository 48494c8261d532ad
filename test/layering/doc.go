// Package layering holds the test that enforces the import rules of
// docs/ARCHITECTURE.md ("Dependencies point downwards only") with `go list`,
// as restic does with depguard: every package of the module must have a
// rule, every import must be allowed by it, and the architecture document
// must list every package and state the same rules.
//
//	go test ./test/layering/
//
// The package has no non-test code; this file only documents it.
package layering

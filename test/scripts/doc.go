// Package scripts holds the test that every script under scripts/
// answers -h and --help with its usage and exit status 0, before it
// builds, starts or writes anything: a script that ignored its arguments ran a ten-minute experiment on -h and
// rewrote the figures under docs/.
//
//	go test ./test/scripts/
//
// The package has no non-test code; this file only documents it.
package scripts

// Package multihost holds an integration test that runs a pario cluster as
// if on separate machines: the metadata server, two I/O hosts (two I/O
// servers each) and a client each live in their own Linux network
// namespace, joined by veth pairs to a bridge, and talk TCP over their own
// 10.201.X.* addresses rather than loopback.
//
// The test needs root and the `ip` command (iproute2). Without them it is
// skipped, unless CI=true, where it fails instead: CI must never skip it
// silently.
//
//	sudo go test -v -count=1 ./test/multihost/
//
// The package has no non-test code; this file only documents it.
package multihost

package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The emulated cluster through the binary: pario up's rates reach the
// cluster file and the I/O servers (a 2 MB/s disk makes 2 MB on one
// server take about a second), servers= pins a file's datafile, pario
// mcmc --nodes puts each rank's varstrip bytes on its node's server and
// reports the thesis' metrics against --baseline.
func TestMcmcEmulatedCluster(t *testing.T) {
	cf := up(t, "--servers", "4", "--disk-rate", "2MB/s", "--net-rate", "100MB/s", "--net-rate-local", "1GB/s")
	shape := []string{"mcmc", "--runs", "4", "--chains", "2", "--np", "4", "--taxa", "64", "--gens", "400"}

	out := run(t, cf, append(shape, "-o", "pario:/one.mfg", "--layout", "basic:servers=2")...)
	secs := reportSeconds(t, out)
	// 2.4 MB at 2 MB/s less the bucket's 0.2 MB burst: >= 1.1 s.
	if secs < 1.0 {
		t.Errorf("2.4 MB onto one 2 MB/s disk took %.3f s, want >= 1.0 s:\n%s", secs, out)
	}
	if vd := run(t, cf, "viewdist", "/one.mfg"); !regexp.MustCompile(`(?m)^\s+0\s+data2\s`).MatchString(vd) {
		t.Errorf("servers=2 did not put the datafile on data2:\n%s", vd)
	}

	out = run(t, cf, append(shape, "-o", "pario:/v.mfg", "--layout", "varstrip", "--nodes", "2", "--baseline", "10")...)
	for _, want := range []string{"phases ", "I/O share", "delta_iox 50.0% (2 of 4 servers", "efficiency", "on 4 CPUs (eq. 7.2)"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	// 4 ranks on 2 nodes: ranks 0-1 (runs 0-1) on node 0's server data0,
	// ranks 2-3 on data1, and nothing on the others.
	vd := run(t, cf, "viewdist", "/v.mfg")
	if !regexp.MustCompile(`(?m)^\s+0\s+data0\s`).MatchString(vd) || !regexp.MustCompile(`(?m)^\s+1\s+data1\s`).MatchString(vd) || strings.Contains(vd, "data2") {
		t.Errorf("varstrip on 2 nodes: want datafile 0 on data0 and 1 on data1 only:\n%s", vd)
	}
	if _, err := runErr(cf, append(shape, "-o", "pario:/x.mfg", "--nodes", "5")...); err == nil {
		t.Error("--nodes 5 with 4 processes accepted")
	}
}

func reportSeconds(t *testing.T, out string) float64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^time\s+([0-9.]+) s`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no time in the report:\n%s", out)
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

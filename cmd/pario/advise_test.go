package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/pario/pario/units"
)

// advisedStriping reads the striping item of pario advise's output: the
// strip size and stripe count it advises, and whether it marks them as a
// change.
func advisedStriping(t *testing.T, out string) (strip int64, count int) {
	t.Helper()
	m := regexp.MustCompile(`(?m)^\* 6\. striping\s+now:\s+strip (\S+) over (\d+) datafiles?\n\s+advice:\s+strip (\S+) over (\d+) datafiles?: pario layout set DIR simple_stripe:strip_size=(\S+),num_datafiles=(\d+)\n`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("pario advise: no striping change in the advice:\n%s", out)
	}
	strip, err := units.ParseSize(m[3])
	if err != nil {
		t.Fatalf("advised strip %q: %v", m[3], err)
	}
	count, _ = strconv.Atoi(m[4])
	if m[5] != m[3] || m[6] != m[4] {
		t.Fatalf("pario advise: the striping item says strip %s over %s, its layout %s over %s:\n%s", m[3], m[4], m[5], m[6], out)
	}
	return strip, count
}

// checkApplied asserts that directory dir of the cluster cf has the
// layout simple_stripe with strip and count as its default, and that a
// file of count strips copied into it afterwards (as name) takes it: one
// strip on each of count datafiles.
func checkApplied(t *testing.T, cf, dir, name string, strip int64, count int) {
	t.Helper()
	want := fmt.Sprintf("simple_stripe:strip_size=%d,num_datafiles=%d", strip, count)
	if got := run(t, cf, "layout", "get", dir); strings.TrimSpace(got) != dir+": default "+want {
		t.Errorf("layout get %s: %q, want default %s", dir, got, want)
	}
	src := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(src, make([]byte, strip*int64(count)), 0o644); err != nil {
		t.Fatal(err)
	}
	file := dir + "/" + name
	run(t, cf, "cp", "-q", src, "pario:"+file)
	st := run(t, cf, "stat", file)
	if !strings.Contains(st, "layout:    "+want+"\n") || !strings.Contains(st, fmt.Sprintf("datafiles: %d on servers", count)) {
		t.Errorf("stat %s, created after --apply: want layout %s on %d datafiles:\n%s", file, want, count, st)
	}
	vd := run(t, cf, "viewdist", file)
	rows := regexp.MustCompile(`(?m)^\s*(\d+)\s+data\d+\s+\S+\s+(\d+)\s*$`).FindAllStringSubmatch(vd, -1)
	if len(rows) != count {
		t.Fatalf("viewdist %s: %d datafiles, want %d:\n%s", file, len(rows), count, vd)
	}
	for _, r := range rows {
		if r[2] != strconv.FormatInt(strip, 10) {
			t.Errorf("viewdist %s: datafile %s holds %s bytes, want one strip (%d):\n%s", file, r[1], r[2], strip, vd)
		}
	}
}

// TestAdviseApply runs pario advise --apply against a 4-server cluster:
// the directory's default layout, and the layout of a file created in it
// afterwards, become exactly the strip size and stripe count the advice
// printed; a second call with another access description changes them
// again (files already there keep theirs).
func TestAdviseApply(t *testing.T) {
	cf := up(t, "--servers", "4")
	run(t, cf, "mkdir", "/runs")

	// 2 ranks each writing 4 MiB of a 1024x1024 double dataset, on 64 KiB
	// strips over 4 datafiles: 2 datafiles of 4 MiB strips.
	first := []string{"advise", "--dims", "1024x1024", "--type", "double", "--ranks", "2", "--strip-size", "64k", "--stripe-count", "4", "--apply", "pario:/runs"}
	out := run(t, cf, first...)
	strip1, count1 := advisedStriping(t, out)
	if strip1 == 64<<10 || count1 == 4 {
		t.Fatalf("pario %s: advised strip %d over %d: want both changed", strings.Join(first, " "), strip1, count1)
	}
	want1 := fmt.Sprintf("simple_stripe:strip_size=%d,num_datafiles=%d", strip1, count1)
	if !strings.HasSuffix(out, "applied: /runs: "+want1+"\n") {
		t.Errorf("pario %s: want it to end with applied: /runs: %s:\n%s", strings.Join(first, " "), want1, out)
	}
	checkApplied(t, cf, "/runs", "first.dat", strip1, count1)

	// The directory as the first call left it, now written by 4 ranks
	// taking 1 MiB turns (the servers available are the cluster's 4): a
	// 1 MiB strip over 4 datafiles puts each rank on a server of its own.
	second := []string{"advise", "--dims", "1024x1024", "--type", "double", "--ranks", "4", "--pattern", "interleaved", "--block", "1m",
		"--strip-size", units.FormatSize(strip1), "--stripe-count", strconv.Itoa(count1), "--apply", "/runs"}
	out = run(t, cf, second...)
	strip2, count2 := advisedStriping(t, out)
	if strip2 == strip1 || count2 == count1 {
		t.Fatalf("pario %s: advised strip %d over %d, the first call %d over %d: want both changed", strings.Join(second, " "), strip2, count2, strip1, count1)
	}
	if !strings.Contains(out, "target:  strip "+units.FormatSize(strip1)+" over "+strconv.Itoa(count1)+" datafiles, 4 servers\n") {
		t.Errorf("pario %s: the target is not the cluster's 4 servers:\n%s", strings.Join(second, " "), out)
	}
	checkApplied(t, cf, "/runs", "second.dat", strip2, count2)
	if st := run(t, cf, "stat", "/runs/first.dat"); !strings.Contains(st, "layout:    "+want1+"\n") {
		t.Errorf("stat /runs/first.dat after the second --apply: want its layout kept (%s):\n%s", want1, st)
	}
}

// TestAdviseApplyRefusesBadTargets: --apply on a file, on a path outside
// the store, or beyond the cluster's servers is a mistake in the call:
// exit status 2, a message naming the path, no advice printed and the
// directory's layout untouched. A store directory that is not there is an
// error (status 1) that names it.
func TestAdviseApplyRefusesBadTargets(t *testing.T) {
	cf := up(t, "--servers", "4")
	run(t, cf, "mkdir", "/runs")
	run(t, cf, "layout", "set", "/runs", "-c", "3", "-S", "256k")
	src := filepath.Join(t.TempDir(), "f.dat")
	if err := os.WriteFile(src, []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, cf, "cp", "-q", src, "pario:/runs/f.dat")
	local := t.TempDir() // a directory of this machine, not of the store

	advice := []string{"advise", "--dims", "1024x1024", "--type", "double", "--ranks", "4", "--strip-size", "64k", "--stripe-count", "4"}
	cases := []struct {
		args  []string
		code  int
		wants string
	}{
		{append(advice, "--apply", "pario:/runs/f.dat"), 2, "--apply pario:/runs/f.dat: not a directory"},
		{append(advice, "--apply", "/runs/f.dat"), 2, "--apply /runs/f.dat: not a directory"},
		{append(advice, "--apply", "../runs"), 2, "--apply ../runs: outside the store"},
		{append(advice, "--apply", "pario:/runs/../.."), 2, "--apply pario:/runs/../..: outside the store"},
		{append(advice, "--apply", local), 2, "--apply " + local + ": outside the store: a local path"},
		{append(advice, "--apply", "/runs/../runs"), 2, "--apply /runs/../runs: a store path has no . or .. components: say /runs"},
		{append(advice, "--apply", ""), 2, "--apply needs a directory"},
		{append(advice, "--stripe-count", "8", "--apply", "/runs"), 2, "--stripe-count 8: the cluster of --apply /runs has 4 I/O servers"},
		{append(advice, "--servers", "8", "--apply", "/runs"), 2, "--servers 8: the cluster of --apply /runs has 4 I/O servers"},
		{append(advice, "--apply", "pario:/nope"), 1, "--apply pario:/nope: "},
		// tune search --apply checks its directory the same way.
		{[]string{"tune", "search", "--size", "1g", "--stripe-count", "1:4", "--method", "genetic", "--budget", "100",
			"--db", filepath.Join(t.TempDir(), "tune.db"), "--apply", "/runs/f.dat"}, 2, "--apply /runs/f.dat: not a directory"},
	}
	for _, tc := range cases {
		out, err := runErr(cf, tc.args...)
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Errorf("pario %q: err %v, want exit status %d:\n%s", tc.args, err, tc.code, out)
			continue
		}
		if ee.ExitCode() != tc.code || !strings.Contains(out, "pario: "+tc.wants) {
			t.Errorf("pario %q: exit %d, want %d and a message with %q:\n%s", tc.args, ee.ExitCode(), tc.code, tc.wants, out)
		}
		if strings.Contains(out, "advised:") || strings.Contains(out, "recommendation") {
			t.Errorf("pario %q: advice printed before the target was refused:\n%s", tc.args, out)
		}
	}
	if got := run(t, cf, "layout", "get", "/runs"); !strings.Contains(got, "default simple_stripe:strip_size=262144,num_datafiles=3") {
		t.Errorf("layout get /runs after refused --apply calls: %s", got)
	}
	if strings.Contains(run(t, cf, "ls", "/"), "nope") {
		t.Errorf("a refused --apply created its directory")
	}
}

// adviseRefuses runs pario advise with args and checks a usage error:
// exit status 2, one line "pario: " with each of wants in it, no advice.
func adviseRefuses(t *testing.T, args []string, wants ...string) {
	t.Helper()
	out, err := runErr("", append([]string{"advise"}, args...)...)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.HasPrefix(out, "pario: ") || strings.Count(out, "\n") != 1 {
		t.Errorf("pario advise %s: %v, output %q; want exit status 2 and one line \"pario: ...\"", strings.Join(args, " "), err, out)
		return
	}
	for _, w := range wants {
		if !strings.Contains(out, w) {
			t.Errorf("pario advise %s: %q; want it to say %q", strings.Join(args, " "), out, w)
		}
	}
}

// --header 0 is refused (HDF5's superblock is at byte 0; the data never
// is) rather than read as "the default", which advise did silently.
func TestAdviseHeaderZero(t *testing.T) {
	adviseRefuses(t, []string{"--dims", "1024x1024", "--type", "double", "--header", "0"}, "--header 0: ", "superblock")
	out := run(t, "", "advise", "--dims", "1024x1024", "--type", "double", "--header", "1")
	if !strings.Contains(out, "now:     data at byte 1:") {
		t.Errorf("advise --header 1: want the data at byte 1:\n%s", out)
	}
}

// An alignment or header that puts the data past the largest file offset
// is refused naming the flag, not in IOR's words ("aggregate size
// blockSize*segmentCount*numTasks ... overflows int64").
func TestAdviseHugeAlignmentOrHeader(t *testing.T) {
	for _, fl := range []string{"--alignment", "--header"} {
		adviseRefuses(t, []string{"--dims", "1024x1024", "--type", "double", fl, "9223372036854775807"},
			fl+" 9223372036854775807: ", "past the largest file offset")
	}
}

// A transfer size the user never gave (the default, 1m) that does not
// divide a rank's part says so and suggests one that does.
func TestAdviseDefaultTransferTooLarge(t *testing.T) {
	adviseRefuses(t, []string{"--dims", "16"}, "--transfer (default 1m) does not divide the 128 bytes each rank writes per turn: try --transfer 128")
	adviseRefuses(t, []string{"--dims", "16", "--transfer", "96"}, "--transfer 96 does not divide the 128 bytes each rank writes per turn: try --transfer 64")
	if out := run(t, "", "advise", "--dims", "16", "--transfer", "128"); !strings.Contains(out, "128 transfers") {
		t.Errorf("advise --dims 16 --transfer 128 (the suggestion):\n%s", out)
	}
}

package main

import (
	"regexp"
	"testing"
)

// pario df: a row per server, and a total that counts the one disk the
// servers of `pario up` share once.
func TestDfCountsSharedDiskOnce(t *testing.T) {
	cf := up(t)
	out := run(t, cf, "df")
	row := regexp.MustCompile(`(?m)^\s*data0\s+\S+\s+(\S+ \S+)\s`).FindStringSubmatch(out)
	total := regexp.MustCompile(`(?m)^\s*total\s+1 file system\s+(\S+ \S+)\s`).FindStringSubmatch(out)
	if row == nil || total == nil || row[1] != total[1] {
		t.Fatalf("df: want a total of one file system, the size of data0's:\n%s", out)
	}
}

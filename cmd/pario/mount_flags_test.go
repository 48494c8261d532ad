package main

import (
	"testing"
	"time"

	"github.com/pario/pario/fusefs"
)

// --entry-timeout 0 means no caching of directory names: in
// fusefs.Options a zero EntryTimeout is the 1s default, so the flag's 0
// must reach it as a negative time ("negative means 0"), not as 0.
func TestMountEntryTimeoutZeroMeansNone(t *testing.T) {
	o := fusefs.Options{EntryTimeout: 0, OpTimeout: time.Second}
	if err := checkMountTimeouts(&o); err != nil {
		t.Fatal(err)
	}
	if o.EntryTimeout >= 0 {
		t.Fatalf("--entry-timeout 0 reaches fusefs as %v, which it takes for the 1s default", o.EntryTimeout)
	}
	o = fusefs.Options{EntryTimeout: 2 * time.Second, AttrTimeout: time.Hour, OpTimeout: time.Second}
	if err := checkMountTimeouts(&o); err != nil || o.EntryTimeout != 2*time.Second || o.AttrTimeout != time.Hour {
		t.Fatalf("checkMountTimeouts changed good times: %v %+v", err, o)
	}
}

package bench

import (
	"errors"
	"strings"
	"testing"
)

func TestApplyDirectives(t *testing.T) {
	o := DefaultOptions()
	err := o.ApplyDirectives("intraTestBarriers=1, useExistingTestFile=1,setTimeStampSignature=-5,maxTimeDuration=3,stoneWallingStatusFile=/tmp/sw,blockSize=4m # comment")
	if err != nil {
		t.Fatal(err)
	}
	if !o.IntraTestBarriers || !o.UseExistingFile || o.Signature != -5 || o.MaxMinutes != 3 || o.StoneWallStatusFile != "/tmp/sw" || o.BlockSize != 4<<20 {
		t.Fatalf("directives not applied: %+v", o)
	}
	for in, want := range map[string]string{
		"nosuchKey=1":             `unrecognized parameter "nosuchKey"`,
		"maxTimeDuration=soon":    "maxTimeDuration: want an integer",
		"setTimeStampSignature=x": "setTimeStampSignature: want an integer",
		"intraTestBarriers":       "syntax error",
		"intraTestBarriers=maybe": "want 0 or 1",
	} {
		o := DefaultOptions()
		if err := o.ApplyDirectives(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("-O %s: %v, want an error containing %q", in, err, want)
		}
	}
	o = DefaultOptions()
	o.MaxMinutes = -1
	if err := o.Validate(1); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "-T -1") {
		t.Errorf("-T -1: %v", err)
	}
}

// FuzzDirectives: any -O string is applied or refused with an error, and
// options that apply and validate give a pattern whose sizes and memory
// check compute without a panic.
func FuzzDirectives(f *testing.F) {
	for _, s := range []string{
		"blockSize=4m,transferSize=1m,segmentCount=3",
		"transferSize=0", "blockSize=9223372036854775807,segmentCount=9223372036854775807",
		"randomOffset=1,filePerProc=1,reorderTasks=1,taskPerNodeOffset=-3",
		"summaryFormat=JSON,summaryFile=/dev/null # x", "numTasks=-1", "api=POSIX,deadlineForStonewalling=5,stoneWallingWearOut=1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		o := DefaultOptions()
		if err := o.ApplyDirectives(s); err != nil {
			if err.Error() == "" {
				t.Fatal("an empty error")
			}
			return
		}
		if err := o.Validate(4); err != nil {
			return
		}
		p := o.Pattern(4, 1)
		if p.Validate() != nil {
			return
		}
		_ = p.FileSize()
		_ = CheckMemory(o, 4, 1<<30)
	})
}

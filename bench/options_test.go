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

package medic

import (
	"reflect"
	"testing"
	"time"
)

// The receiver's record: the rate of each regeneration (output bytes per
// second of g) and the speed probed just after it, each weighted half to
// the latest; records in plugin order.
func TestRegenLog(t *testing.T) {
	var l regenLog
	l.noteSpeed("blast", 100) // no record yet: nothing
	l.note("zstd", 100e6, time.Second)
	l.note("blast", 10e6, 4*time.Second) // 2.5 MB/s
	l.noteSpeed("blast", 200)
	l.note("blast", 10e6, 2*time.Second) // 5 MB/s
	l.noteSpeed("blast", 100)
	l.note("raw", 0, time.Second) // nothing regenerated: no record
	l.note("raw", 10, 0)
	want := []PluginRate{
		{Plugin: "blast", Regenerations: 2, Rate: 3.75e6, Speed: 150},
		{Plugin: "zstd", Regenerations: 1, Rate: 100e6},
	}
	if got := l.snapshot(); !reflect.DeepEqual(got, want) {
		t.Fatalf("snapshot %+v, want %+v", got, want)
	}
	r := Rates{Speed: 75, Plugins: want}
	if p, ok := r.Find("blast"); !ok || p.Rate != 3.75e6 {
		t.Errorf("Find(blast) = %+v, %v", p, ok)
	}
	if _, ok := r.Find("periodic"); ok {
		t.Error("Find(periodic) found a record")
	}
}

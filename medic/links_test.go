package medic_test

import (
	"context"
	"testing"
	"time"

	"github.com/pario/pario/medic"
	"github.com/pario/pario/medic/cost"
	"github.com/pario/pario/medic/medictest"
)

// A second plan to the same receiver within LinkTTL takes the link the
// first one measured and probes nothing; after LinkTTL, or after a send
// far from that rate, it measures again.
func TestMakePlanRemembersTheLink(t *testing.T) {
	s := &site{key: medictest.Key(t)}
	startServer(t, s, nil, nil)
	path := writeFile(t, "report.txt", report(2000))
	now := time.Date(2026, 11, 24, 6, 0, 0, 0, time.UTC)
	lc := medic.LinkCache{Dir: t.TempDir(), Now: func() time.Time { return now }}
	plan := func() medic.Plan {
		t.Helper()
		p, err := medic.MakePlan(context.Background(), medic.PlanRequest{Path: path, Plugins: []string{"raw"},
			Link: cost.Link{RoundTrip: medic.RoundTrips}, Measure: medic.SendOptions{Addr: s.addr, Key: s.key}, Links: lc})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	first := plan()
	if first.LinkSource == "remembered" || first.Link.B <= 0 {
		t.Fatalf("first plan: link %+v from %q, want measured", first.Link, first.LinkSource)
	}
	now = now.Add(medic.LinkTTL - time.Second)
	second := plan()
	if second.LinkSource != "remembered" || second.Link.B != first.Link.B || second.Link.RTT != first.Link.RTT {
		t.Errorf("second plan: link %+v from %q, want the first's %+v remembered", second.Link, second.LinkSource, first.Link)
	}
	// Using the memory does not make it younger.
	now = now.Add(2 * time.Second)
	if p := plan(); p.LinkSource == "remembered" {
		t.Errorf("plan after LinkTTL: link from %q, want measured again", p.LinkSource)
	}
	// A send at a rate within LinkSlack keeps it, one far from it forgets it.
	l, ok := lc.Get(s.addr)
	if !ok {
		t.Fatal("the re-measured link is not remembered")
	}
	if lc.Observe(s.addr, l.B*1.5) {
		t.Error("a send at 1.5x the remembered rate forgot it")
	}
	if !lc.Observe(s.addr, l.B/3) {
		t.Error("a send at a third of the remembered rate did not forget it")
	}
	if p := plan(); p.LinkSource == "remembered" {
		t.Errorf("plan after a slow send: link from %q, want measured again", p.LinkSource)
	}
}

func TestLinkCacheIgnoresOtherAddressesAndGarbage(t *testing.T) {
	lc := medic.LinkCache{Dir: t.TempDir()}
	if err := lc.Put(medic.RememberedLink{Addr: "a:1", B: 1e6, RTT: time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if _, ok := lc.Get("a:2"); ok {
		t.Error("a:2 got a:1's link")
	}
	if l, ok := lc.Get("a:1"); !ok || l.B != 1e6 || l.RTT != time.Millisecond {
		t.Errorf("a:1: %+v %v", l, ok)
	}
	if _, ok := (medic.LinkCache{}).Get("a:1"); ok {
		t.Error("the zero LinkCache remembered a link")
	}
}

func TestLinkCacheObserveSend(t *testing.T) {
	lc := medic.LinkCache{Dir: t.TempDir()}
	put := func() {
		t.Helper()
		if err := lc.Put(medic.RememberedLink{Addr: "r:1", B: 1e6}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name   string
		r      *medic.SendReport
		forget bool
	}{
		{"no report", nil, false},
		{"short transfer, slow", &medic.SendReport{Sent: 1000, Transfer: 100 * time.Millisecond}, false},
		{"long, near", &medic.SendReport{Sent: 1_500_000, Transfer: time.Second}, false},
		{"long, slow", &medic.SendReport{Sent: 300_000, Transfer: time.Second}, true},
		{"long, fast", &medic.SendReport{Sent: 5_000_000, Transfer: time.Second}, true},
	} {
		put()
		if got := lc.ObserveSend("r:1", tc.r); got != tc.forget {
			t.Errorf("%s: forgot %v, want %v", tc.name, got, tc.forget)
		}
		if _, ok := lc.Get("r:1"); ok == tc.forget {
			t.Errorf("%s: remembered %v after", tc.name, ok)
		}
	}
}

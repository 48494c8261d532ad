package medic_test

import (
	"bytes"
	"errors"
	"github.com/pario/pario/internal/golden"
	"path/filepath"
	"testing"
	"time"

	"github.com/pario/pario/medic"
	"github.com/pario/pario/medic/cost"
)

func exampleSend() medic.SendSummary {
	rep := &medic.FileReport{
		Encode: 1500 * time.Millisecond, MetaSize: 3 << 20, Plugin: "blast",
		Send: &medic.SendReport{Size: 3 << 20, Sent: 3 << 20, Connect: 20 * time.Millisecond, Transfer: 2 * time.Second, Receiver: 4200 * time.Millisecond,
			Result: medic.Result{Path: "out/hits.txt", Verify: 100 * time.Millisecond, Decode: 4 * time.Second, Commit: 50 * time.Millisecond}},
	}
	copy(rep.Header.Digest[:], []byte{0xde, 0xad, 0xbe, 0xef, 0x01, 0x02, 0x03, 0x04})
	return medic.SendSummary{Path: "hits.txt", Addr: "storage:7070", Size: 300 << 20, Asked: "blast",
		Cipher: medic.CipherXChaCha20Poly1305, Report: rep, Wall: 8 * time.Second}
}

func TestSendSummaryWriteTextGolden(t *testing.T) {
	fellBack := exampleSend()
	r := *fellBack.Report
	r.Plugin, r.FellBack, r.Reused = "zstd", errors.New("medic: regenerated output differs"), true
	s := *r.Send
	s.Resumed, s.Sent = 1<<20, 2<<20
	r.Send = &s
	// What the blast attempt cost: its encoding, 3 MiB in 2 s, and 6.5 s
	// of the receiver trying to regenerate before it refused.
	r.Failed = &medic.FileReport{Encode: 1500 * time.Millisecond, MetaSize: 3 << 20, Plugin: "blast", Wall: 10 * time.Second,
		Send: &medic.SendReport{Size: 3 << 20, Sent: 3 << 20, Transfer: 2 * time.Second, Receiver: 6500 * time.Millisecond}}
	fellBack.Report = &r

	// A resumed send whose container the receiver held whole: no
	// transfer, and the time is the receiver's.
	resumedAll := exampleSend()
	ra := *resumedAll.Report
	ra.Reused = true
	rs := *ra.Send
	rs.Resumed, rs.Sent, rs.Transfer, rs.Receiver = rs.Size, 0, 0, 10315*time.Millisecond
	ra.Send = &rs
	resumedAll.Report = &ra

	predicted := exampleSend()
	predicted.Predicted = &cost.Choice{Estimate: cost.Estimate{Name: "blast", X: 3 << 20, F: 1.5, G: 4}, A: 7.5, Speedup: 40}
	predicted.Link = cost.Link{B: 10e6}
	predicted.Planning = 2 * time.Second // --auto: the plan before the send

	// --auto as it is: the send reused the container the plan encoded,
	// whose f was spent in the planning.
	planned := predicted
	pr := *planned.Report
	pr.Reused, pr.Encode = true, 0
	planned.Report = &pr
	planned.Wall = 6500 * time.Millisecond

	for _, tc := range []struct {
		name string
		sum  medic.SendSummary
	}{{"send", exampleSend()}, {"send-fell-back-resumed", fellBack}, {"send-predicted", predicted}, {"send-resumed-all", resumedAll},
		{"send-predicted-planned", planned}} {
		var b bytes.Buffer
		if err := tc.sum.WriteText(&b); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("testdata", "report", tc.name+".txt")
		golden.Check(t, path, b.Bytes(), *update)
	}
}

package fsck

import (
	"reflect"
	"testing"
)

// Datafiles of a removed file that the metadata server still has to
// remove are counted as pending, not reported as orphans; a datafile of
// the same ID on a server the record does not name is still an orphan,
// and nothing is counted twice.
func TestPendingRemovalsAreNotOrphans(t *testing.T) {
	v := store()
	// Files 5 and 6 were removed (below NextID 7); 6 has datafiles on
	// both servers but is pending on data1 only, so data0's is an orphan.
	v.NextID = 7
	v.Servers[0].Datafiles = append(v.Servers[0].Datafiles, df(6, 30))
	v.Servers[1].Datafiles = append(v.Servers[1].Datafiles, df(6, 20), df(5, 1))
	v.Pending = []Pending{{ID: 6, Servers: []uint32{1}}, {ID: 5, Servers: []uint32{1}}}
	r := Check(v, rules)
	want := []Finding{{Kind: OrphanDatafile, Server: 0, Name: "data0", ID: 6, Bytes: 30}}
	if !reflect.DeepEqual(r.Findings, want) {
		t.Errorf("findings %v, want %v", r.Findings, want)
	}
	if r.Pending != 2 || r.PendingBytes != 21 {
		t.Errorf("pending %d datafiles, %d bytes; want 2, 21", r.Pending, r.PendingBytes)
	}
	if r.Datafiles != 6 {
		t.Errorf("counted %d datafiles, want 6", r.Datafiles)
	}
}

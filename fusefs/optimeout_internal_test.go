package fusefs

import (
	"testing"

	"github.com/pario/pario/server/meta"
)

// A restarted metadata server answers no change until its previous run's
// leases have ended (meta.MaxGrace: up to 45 s with the default lease).
// A change made through a mount meanwhile must wait for it, not fail with
// EIO: the mount's default timeout was 30 s, and a create or link through
// a mount failed 30 s after a restart of the metadata server under it.
func TestDefaultOpTimeoutOutlastsTheGrace(t *testing.T) {
	grace := meta.MaxGrace(meta.Lease)
	if DefaultOpTimeout <= grace {
		t.Fatalf("DefaultOpTimeout %v is not longer than a restarted metadata server's longest grace %v", DefaultOpTimeout, grace)
	}
	var o Options
	o.fill()
	if o.OpTimeout != DefaultOpTimeout {
		t.Fatalf("Options{} gives OpTimeout %v, want DefaultOpTimeout %v", o.OpTimeout, DefaultOpTimeout)
	}
}

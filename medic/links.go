package medic

// The link cache: a plan remembers the link it measured to a receiver, so
// that the next send to the same receiver within LinkTTL plans with no
// probe at all. A send whose rate is far from the remembered one (outside
// LinkSlack times it, either way) forgets it, so a link that changed is
// measured again by the next plan.

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"
)

// LinkTTL is how long a measured link is remembered.
const LinkTTL = 10 * time.Minute

// LinkSlack is how far (as a factor) a send's rate may be from the
// remembered bandwidth before the memory is forgotten: the rough probe the
// plan trusts is itself only within 2x.
const LinkSlack = 2.0

// RememberedLink is a link measured to one receiver.
type RememberedLink struct {
	Addr string
	B    float64       // bytes/s
	RTT  time.Duration // measured round trip
	// Rough is true when B came from the rough probe only (within
	// LinkSlack of the link's), or from a send --auto whose transfer was
	// shorter than minObserved.
	Rough bool
	// Max, when above 0, is a bound on B from above for a rough link:
	// the least rate that a send --auto's missing acknowledgements
	// allowed (no acknowledgement of ProgressAck more bytes in a time).
	Max float64 `json:",omitempty"`
	At  time.Time
	// ZstdRate and ZstdRatio are zstd's encode rate (output bytes per
	// second) and ratio (output over container bytes) on the last output
	// a send --auto to this receiver encoded with it: the next prices
	// zstd against raw with them before it sends.
	ZstdRate  float64 `json:",omitempty"`
	ZstdRatio float64 `json:",omitempty"`
}

// LinkCache is the directory the measured links are remembered in (one
// small JSON file per receiver address); the zero value remembers nothing.
type LinkCache struct {
	Dir string
	// Now is the clock (time.Now when nil), for tests.
	Now func() time.Time
}

func (lc LinkCache) now() time.Time {
	if lc.Now != nil {
		return lc.Now()
	}
	return time.Now()
}

func (lc LinkCache) file(addr string) string {
	h := sha256.Sum256([]byte(addr))
	return filepath.Join(lc.Dir, "link-"+hex.EncodeToString(h[:8])+".json")
}

// Get returns the link remembered for addr, if it is younger than LinkTTL.
func (lc LinkCache) Get(addr string) (RememberedLink, bool) {
	if lc.Dir == "" || addr == "" {
		return RememberedLink{}, false
	}
	b, err := os.ReadFile(lc.file(addr))
	if err != nil {
		return RememberedLink{}, false
	}
	var l RememberedLink
	if json.Unmarshal(b, &l) != nil || l.Addr != addr || l.B <= 0 {
		return RememberedLink{}, false
	}
	age := lc.now().Sub(l.At)
	if age < 0 || age > LinkTTL {
		return RememberedLink{}, false
	}
	return l, true
}

// Put remembers l (At is set to now).
func (lc LinkCache) Put(l RememberedLink) error {
	if lc.Dir == "" || l.Addr == "" {
		return nil
	}
	l.At = lc.now()
	b, err := json.Marshal(l)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(lc.Dir, 0o700); err != nil {
		return fmt.Errorf("medic: link cache: %w", err)
	}
	tmp, err := os.CreateTemp(lc.Dir, ".link-*.tmp")
	if err != nil {
		return fmt.Errorf("medic: link cache: %w", err)
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("medic: link cache %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("medic: link cache %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), lc.file(l.Addr)); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("medic: link cache: %w", err)
	}
	return nil
}

// Observe checks a rate a send to addr achieved (bytes/s) against the
// remembered link and forgets the link when the rate is outside LinkSlack
// times it. It says whether it forgot.
func (lc LinkCache) Observe(addr string, rate float64) bool {
	l, ok := lc.Get(addr)
	if !ok || rate <= 0 {
		return false
	}
	if rate > l.B*LinkSlack || rate < l.B/LinkSlack {
		os.Remove(lc.file(addr))
		return true
	}
	return false
}

// minObserved is the shortest transfer whose rate Observe is told of: a
// shorter one is mostly round trips and TCP's slow start, not bandwidth.
const minObserved = 200 * time.Millisecond

// ObserveSend is Observe with the rate of a send's transfer, when the
// transfer lasted long enough (minObserved) to say something about the
// bandwidth. A rate-limited send (SendOptions.RateLimit) must not be
// observed: its rate is the limit's.
func (lc LinkCache) ObserveSend(addr string, r *SendReport) bool {
	if r == nil || r.Transfer < minObserved || r.Sent <= 0 {
		return false
	}
	return lc.Observe(addr, float64(r.Sent)/r.Transfer.Seconds())
}

// secondsDuration is s seconds as a Duration, rounded to the nanosecond:
// a time measured as a Duration and carried as float seconds (cost.Link)
// comes back as it was, where truncation could take a nanosecond off.
func secondsDuration(s float64) time.Duration {
	return time.Duration(math.Round(s * float64(time.Second)))
}

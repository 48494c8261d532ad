package cluster

import (
	"fmt"
	"strconv"
	"time"

	"github.com/pario/pario/units"
	"github.com/pario/pario/wire/throttle"
)

// Emulation is the emulated cluster on one machine (issue 13, point 3):
// the thesis ran "all in one", 8 nodes each with an I/O server on its own
// disk and the ranks of that node writing to it. Here I/O server i stands
// for node i. All rates are bytes per second; 0 is unlimited. In a
// cluster file:
//
//	disk-rate 40MB/s         # each I/O server's datafile reads and writes
//	disk-seek 8ms            # and the time a non-contiguous request costs
//	lock-revoke 10ms         # and each extent lock a write takes from another writer
//	net-rate 100MB/s         # a client's link to an I/O server of another node
//	net-rate-local 1GB/s     # its link to the I/O server of its own node
//
// The disk rate is applied by the I/O servers (server/data), the network
// rates by each client (client.Options.Links), for the node the client
// says it is on (a rank's node); a client that names no node has every
// link at net-rate.
type Emulation struct {
	DiskRate     float64
	DiskSeek     time.Duration // charged per request that does not continue the last one on its datafile
	LockRevoke   time.Duration // charged per extent lock a write revokes (server/data/extentlock.go)
	NetRate      float64
	NetLocalRate float64
}

// The bounds of an emulation (Check): beyond them every request takes
// seconds to minutes, and a run under them looks hung rather than slow.
const (
	// MinEmulatedRate is the slowest disk or link: 10 kB/s, a 64 KiB
	// strip in 6.6 s.
	MinEmulatedRate = 10e3
	// MaxEmulatedDelay is the longest seek or lock revocation: 10 s a
	// request.
	MaxEmulatedDelay = 10 * time.Second
)

// Check refuses an emulation no hardware is like: a rate under
// MinEmulatedRate, a time that is negative or over MaxEmulatedDelay. The
// error starts with the setting's name (disk-rate, disk-seek, ...), the
// name of its flag and of its cluster file directive.
func (e Emulation) Check() error {
	for _, r := range []struct {
		name string
		v    float64
	}{{"disk-rate", e.DiskRate}, {"net-rate", e.NetRate}, {"net-rate-local", e.NetLocalRate}} {
		if err := checkRate(r.name, r.v); err != nil {
			return err
		}
	}
	if err := checkDelay("disk-seek", e.DiskSeek); err != nil {
		return err
	}
	return checkDelay("lock-revoke", e.LockRevoke)
}

func checkRate(name string, v float64) error {
	if v != 0 && !(v >= MinEmulatedRate) {
		return fmt.Errorf("%s %s: slower than any disk or network (a 64 KiB request would take %.0f s); want at least %s",
			name, units.FormatRate(v), 65536/v, units.FormatRate(MinEmulatedRate))
	}
	return nil
}

func checkDelay(name string, d time.Duration) error {
	switch {
	case d < 0:
		return fmt.Errorf("%s %v: want a positive time such as 8ms (or none)", name, d)
	case d > MaxEmulatedDelay:
		return fmt.Errorf("%s %v: longer than any disk takes (every request would wait that long); want at most %v", name, d, MaxEmulatedDelay)
	}
	return nil
}

// Links is the emulated network of a client on node (-1: none of the
// servers' nodes), nil when no network rate is set.
func (e Emulation) Links(node int) *throttle.Links {
	if e.NetRate <= 0 && e.NetLocalRate <= 0 {
		return nil
	}
	local := e.NetLocalRate
	if local <= 0 {
		local = e.NetRate
	}
	return &throttle.Links{Node: node, Local: local, Remote: e.NetRate}
}

// directive sets the rate a cluster file's directive names; ok is false
// for a directive that is not one of Emulation's.
func (e *Emulation) directive(fields []string) (ok bool, err error) {
	var p *float64
	switch fields[0] {
	case "disk-seek":
		return true, durationDirective(fields, &e.DiskSeek)
	case "lock-revoke":
		return true, durationDirective(fields, &e.LockRevoke)
	case "disk-rate":
		p = &e.DiskRate
	case "net-rate":
		p = &e.NetRate
	case "net-rate-local":
		p = &e.NetLocalRate
	default:
		return false, nil
	}
	if len(fields) != 2 {
		return true, fmt.Errorf("want `%s RATE` (e.g. 40MB/s)", fields[0])
	}
	if *p != 0 {
		return true, fmt.Errorf("%s given twice", fields[0])
	}
	v, err := units.ParseRate(fields[1])
	if err != nil {
		return true, fmt.Errorf("%s: %w", fields[0], err)
	}
	if err := checkRate(fields[0], v); err != nil {
		return true, err
	}
	*p = v
	return true, nil
}

// durationDirective sets the time of a directive such as disk-seek.
func durationDirective(fields []string, p *time.Duration) error {
	if len(fields) != 2 {
		return fmt.Errorf("want `%s TIME` (e.g. 8ms)", fields[0])
	}
	if *p != 0 {
		return fmt.Errorf("%s given twice", fields[0])
	}
	d, err := time.ParseDuration(fields[1])
	if err != nil || d <= 0 {
		return fmt.Errorf("%s %q: want a positive time such as 8ms", fields[0], fields[1])
	}
	if err := checkDelay(fields[0], d); err != nil {
		return err
	}
	*p = d
	return nil
}

// format renders the directives of the rates that are set, in bytes per
// second exactly (FormatRate rounds to three digits).
func (e Emulation) format() string {
	var s string
	for _, d := range []struct {
		name string
		v    float64
	}{{"disk-rate", e.DiskRate}, {"net-rate", e.NetRate}, {"net-rate-local", e.NetLocalRate}} {
		if d.v > 0 {
			s += d.name + " " + strconv.FormatFloat(d.v, 'f', -1, 64) + "  # " + units.FormatRate(d.v) + "\n"
		}
	}
	if e.DiskSeek > 0 {
		s += "disk-seek " + e.DiskSeek.String() + "\n"
	}
	if e.LockRevoke > 0 {
		s += "lock-revoke " + e.LockRevoke.String() + "\n"
	}
	return s
}

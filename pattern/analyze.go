package pattern

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/pario/pario/dist"
)

// DefaultMaxTransfers bounds the number of calls Analyze walks when
// Config.MaxTransfers is 0.
const DefaultMaxTransfers = 1 << 24

// Config says how the pattern meets the storage and what the hardware can
// do. Rates are bytes per second; 0 means unknown (or, for ServerLinkRate
// and NetworkCap, unlimited). The thesis' testbed: 10 clients with GbE,
// LinkRate 117e6 (usable per link), giving 1170 MB/s at most.
type Config struct {
	// Dist maps file offsets to datafiles (required): the layout of every
	// file of the test.
	Dist dist.Distribution
	// Servers is the number of I/O servers available, the denominator of
	// delta_iox. 0 means one per datafile (or the largest server Placement
	// returns, plus one).
	Servers int
	// Placement says which server holds datafile df of file f (file 0 for a
	// shared file, the owner rank's file with FilePerProc). Nil means
	// server = datafile for every file.
	Placement func(file, df int) int
	// Phase picks whose data each rank moves (matters with Reorder).
	Phase Phase

	// RanksPerClient is how many consecutive ranks share one client node
	// and its link (block placement); 0 means 1.
	RanksPerClient int
	LinkRate       float64 // usable network rate of one client node
	DiskRate       float64 // rate of one server's storage
	ServerLinkRate float64 // network rate of one server; 0 = unlimited
	NetworkCap     float64 // aggregate network capacity; 0 = unlimited

	// MaxTransfers bounds the calls walked (all ranks together); larger
	// patterns are refused. 0 means DefaultMaxTransfers.
	MaxTransfers int64
}

// Access is the thesis' coarse pattern class.
type Access int

const (
	// Disjoint: every rank accesses one contiguous region of its file.
	Disjoint Access = iota + 1
	// Interleaved: some rank accesses a non-contiguous region.
	Interleaved
)

func (a Access) String() string {
	switch a {
	case Disjoint:
		return "disjoint"
	case Interleaved:
		return "interleaved"
	}
	return fmt.Sprintf("Access(%d)", int(a))
}

// RankReport is what one rank does over the whole phase.
type RankReport struct {
	Rank       int   // the rank issuing the calls
	Target     int   // whose data it moves (TargetRank)
	Servers    []int // servers it talks to, ascending
	Bytes      int64 // bytes moved
	Transfers  int64 // calls issued
	Regions    int64 // maximal contiguous file regions its calls cover
	Straddling int64 // calls cut by a datafile boundary (more pieces than extents)
	Pieces     int64 // per-datafile pieces its calls split into
}

// ServerReport is what one server sees over the whole phase.
type ServerReport struct {
	Server  int
	Clients []int // ranks that talk to it, ascending
	Bytes   int64
	Pieces  int64 // requests it receives (one per piece)
}

// Bound is the theoretical maximum aggregate bandwidth (bytes/s).
//
// The phase moves B bytes. Rank r moves B_r, client node c (RanksPerClient
// consecutive ranks) B_c = sum of its ranks' B_r, server s receives D_s.
// Every resource works at full speed at best, so the phase takes at least
//
//	T = max( max_c B_c / LinkRate,                      (client links)
//	         max_s D_s / min(DiskRate, ServerLinkRate), (servers)
//	         B / NetworkCap )                           (network)
//
// and the bound is B / T. With balanced load this is the familiar
// min(clients*LinkRate, usedServers*min(DiskRate, ServerLinkRate),
// NetworkCap); imbalance lowers it, because the busiest server (or link)
// finishes last. Terms whose rate is 0 are left out; with no rate at all
// Analyze gives no Bound. The model ignores contention effects (several
// clients per server interleaving, seeks), which is why x-OST patterns with
// x > 1 measure below it.
type Bound struct {
	Clients      int     // client nodes
	UsedServers  int     // servers receiving data
	ClientLimit  float64 // B / max_c(B_c/LinkRate); 0 if LinkRate is 0
	ServerLimit  float64 // B / max_s(D_s/serverRate); 0 if no server rate
	NetworkLimit float64 // NetworkCap (0 if none)
	Max          float64 // the bound: the smallest non-zero limit
	Bottleneck   string  // "client links", "servers" or "network"
	Imbalance    float64 // max_s D_s / mean over used servers (1 = balanced)
}

// Report is the analysis of one phase of an IOR pattern.
type Report struct {
	IOR     IOR
	Layout  string // the distribution, "name:params" and datafiles
	Phase   Phase
	Servers int // servers available

	Ranks     []RankReport   // by rank
	PerServer []ServerReport // by server, all available servers

	Access   Access
	X        int  // most servers any rank talks to: the x of x-OST
	MinX     int  // fewest servers any rank talks to
	AllToAll bool // at least two servers get data and every rank talks to all of them

	Bytes      int64 // bytes moved by all ranks
	Transfers  int64 // calls of all ranks
	Straddling int64 // calls cut by a datafile boundary
	Pieces     int64 // per-datafile pieces of all calls
	MaxPieces  int64 // most pieces of one call

	// DeltaIOX is the physical degree of I/O parallelism, mean over calls
	// of (servers one call touches) / Servers * 100; MaxDeltaIOX the
	// largest.
	DeltaIOX, MaxDeltaIOX float64
	// DeltaIOZ is the depth of I/O parallelism, mean over calls of the
	// stripes (full rounds over the datafiles) one call spans; MaxDeltaIOZ
	// the largest. A distribution with one datafile has one endless stripe.
	DeltaIOZ    float64
	MaxDeltaIOZ int64

	Bound *Bound // nil without rates

	// Configured is the class of the same pattern with DataStart 0, set
	// when DataStart is not: what the pattern is called (the thesis'
	// "1-OST") against what a header makes of it (Class).
	Configured string
}

// Class is the one-line classification, e.g. "interleaved, 1-OST" or
// "disjoint, all-to-all (10 servers)".
func (r *Report) Class() string {
	var x string
	switch {
	case r.AllToAll && r.Servers > 1:
		x = fmt.Sprintf("all-to-all (%d servers)", r.Servers)
	case r.X == r.MinX:
		x = fmt.Sprintf("%d-OST", r.X)
	default:
		x = fmt.Sprintf("%d-OST (ranks touch %d to %d servers)", r.X, r.MinX, r.X)
	}
	return r.Access.String() + ", " + x
}

// Analyze walks every call of every rank in the phase, maps it onto the
// servers through c.Dist and c.Placement, and reports the pattern. It
// returns an error (matching ErrInvalid) for an invalid pattern or config,
// or a pattern with more than c.MaxTransfers calls.
func Analyze(p IOR, c Config) (*Report, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if c.Dist == nil {
		return nil, errorf("analyze: no distribution given")
	}
	if c.Phase < Write || c.Phase > Read {
		return nil, errorf("analyze: unknown phase %d", int(c.Phase))
	}
	if c.RanksPerClient < 0 {
		return nil, errorf("analyze: ranks per client must be non-negative, got %d", c.RanksPerClient)
	}
	if c.LinkRate < 0 || c.DiskRate < 0 || c.ServerLinkRate < 0 || c.NetworkCap < 0 {
		return nil, errorf("analyze: rates must be non-negative")
	}
	if c.Servers < 0 {
		return nil, errorf("analyze: servers must be non-negative, got %d", c.Servers)
	}
	limit := c.MaxTransfers
	if limit <= 0 {
		limit = DefaultMaxTransfers
	}
	calls := p.AggregateSize() / p.Transfer
	blocks, ok := mul3(p.Segments, int64(p.Tasks), 1)
	if calls > limit || (p.Strided && (!ok || blocks > limit)) {
		return nil, errorf("analyze: pattern too large: %d calls over %d blocks, limit %d", calls, blocks, limit)
	}

	d := c.Dist
	ndf := d.Datafiles()
	files := p.Files()
	place := c.Placement
	if place == nil {
		place = func(_, df int) int { return df }
	}
	// server[f][df], checked once.
	servers := c.Servers
	table := make([][]int, files)
	for f := range files {
		table[f] = make([]int, ndf)
		for df := range ndf {
			s := place(f, df)
			if s < 0 || (c.Servers > 0 && s >= c.Servers) {
				return nil, errorf("analyze: placement puts datafile %d of file %d on server %d, outside [0, %d)", df, f, s, c.Servers)
			}
			table[f][df] = s
			if c.Servers == 0 {
				servers = max(servers, s+1)
			}
		}
	}
	width := StripeWidth(d)

	n := p.Tasks
	r := &Report{
		IOR:     p,
		Layout:  fmt.Sprintf("%s on %d datafiles", layoutString(d), ndf),
		Phase:   c.Phase,
		Servers: servers,
		Ranks:   make([]RankReport, n),
	}
	r.PerServer = make([]ServerReport, servers)
	srvBytes := make([]int64, servers)
	srvPieces := make([]int64, servers)
	// touched[s] holds the last rank (+1) seen on server s, clients[s]
	// the ranks in order: ranks are walked in order, so this is a cheap
	// sorted set.
	lastRank := make([]int, servers)
	clients := make([][]int, servers)
	// opMark[s] == opID marks server s as touched by the current call.
	opMark := make([]int64, servers)
	rankMark := make([]bool, servers)

	var randomLists [][]int64
	if p.Random && !p.FilePerProc {
		randomLists = p.randomSharedAll(0, n)
	}

	var opID int64
	var sumIOX, sumIOZ float64
	var exts []Extent
	for rank := range n {
		rr := &r.Ranks[rank]
		rr.Rank = rank
		rr.Target = p.TargetRank(rank, c.Phase)
		clear(rankMark)
		exts = exts[:0]
		var seq = p.Transfers(rank, c.Phase)
		if randomLists != nil {
			seq = p.randomTransfers(rr.Target, randomLists[rr.Target])
		}
		for t := range seq {
			opID++
			var opServers, opPieces, opStripes int64
			lastStripe := int64(-1)
			pieces := t.Pieces()
			for _, e := range pieces {
				exts = append(exts, e)
				for off, end := e.Offset, e.End(); off < end; {
					df, _ := d.ToPhysical(off)
					l := min(d.ContiguousLength(off), end-off)
					s := table[t.File][df]
					if opMark[s] != opID {
						opMark[s] = opID
						opServers++
					}
					if !rankMark[s] {
						rankMark[s] = true
					}
					if lastRank[s] != rank+1 {
						lastRank[s] = rank + 1
						clients[s] = append(clients[s], rank)
					}
					srvBytes[s] += l
					srvPieces[s]++
					opPieces++
					off += l
				}
				// Stripes: extents ascend, so distinct stripe indices
				// are counted by remembering the last one.
				first, last := int64(0), int64(0)
				if width > 0 {
					first, last = e.Offset/width, (e.End()-1)/width
				}
				if first == lastStripe {
					first++
				}
				if last >= first {
					opStripes += last - first + 1
				}
				lastStripe = last
			}
			rr.Transfers++
			rr.Bytes += t.Length
			rr.Pieces += opPieces
			if opPieces > int64(len(pieces)) {
				rr.Straddling++
			}
			r.MaxPieces = max(r.MaxPieces, opPieces)
			iox := float64(opServers) / float64(servers) * 100
			sumIOX += iox
			r.MaxDeltaIOX = max(r.MaxDeltaIOX, iox)
			sumIOZ += float64(opStripes)
			r.MaxDeltaIOZ = max(r.MaxDeltaIOZ, opStripes)
		}
		for s, ok := range rankMark {
			if ok {
				rr.Servers = append(rr.Servers, s)
			}
		}
		rr.Regions = regions(exts)
		r.Bytes += rr.Bytes
		r.Transfers += rr.Transfers
		r.Straddling += rr.Straddling
		r.Pieces += rr.Pieces
	}
	if r.Transfers > 0 {
		r.DeltaIOX = sumIOX / float64(r.Transfers)
		r.DeltaIOZ = sumIOZ / float64(r.Transfers)
	}
	used := 0
	for s := range servers {
		r.PerServer[s] = ServerReport{Server: s, Clients: clients[s], Bytes: srvBytes[s], Pieces: srvPieces[s]}
		if srvBytes[s] > 0 {
			used++
		}
	}

	r.Access = Disjoint
	r.MinX = -1
	r.AllToAll = used > 1
	for _, rr := range r.Ranks {
		if rr.Regions > 1 {
			r.Access = Interleaved
		}
		if rr.Bytes == 0 {
			continue // a rank dealt no transfers (random, shared file)
		}
		x := len(rr.Servers)
		r.X = max(r.X, x)
		if r.MinX < 0 || x < r.MinX {
			r.MinX = x
		}
		if x != used {
			r.AllToAll = false
		}
	}
	r.MinX = max(r.MinX, 0)
	r.Bound = bound(r, c, used)
	if p.DataStart > 0 {
		p.DataStart = 0
		r0, err := Analyze(p, c)
		if err != nil {
			return nil, err
		}
		r.Configured = r0.Class()
	}
	return r, nil
}

// regions counts the maximal contiguous ranges a set of extents covers.
// It sorts exts in place when they are not already in order.
func regions(exts []Extent) int64 {
	if len(exts) == 0 {
		return 0
	}
	if !slices.IsSortedFunc(exts, cmpExtent) {
		slices.SortFunc(exts, cmpExtent)
	}
	n := int64(1)
	end := exts[0].End()
	for _, e := range exts[1:] {
		if e.Offset > end {
			n++
		}
		end = max(end, e.End())
	}
	return n
}

func cmpExtent(a, b Extent) int { return cmp.Compare(a.Offset, b.Offset) }

// bound computes the bandwidth bound; nil when no rate is known.
func bound(r *Report, c Config, used int) *Bound {
	if c.LinkRate == 0 && c.DiskRate == 0 && c.ServerLinkRate == 0 && c.NetworkCap == 0 {
		return nil
	}
	total := float64(r.Bytes)
	per := max(c.RanksPerClient, 1)
	b := &Bound{Clients: (len(r.Ranks) + per - 1) / per, UsedServers: used}
	if c.LinkRate > 0 {
		var maxClient int64
		for i := 0; i < len(r.Ranks); i += per {
			var sum int64
			for _, rr := range r.Ranks[i:min(i+per, len(r.Ranks))] {
				sum += rr.Bytes
			}
			maxClient = max(maxClient, sum)
		}
		if maxClient > 0 {
			b.ClientLimit = total / (float64(maxClient) / c.LinkRate)
		}
	}
	srvRate := c.DiskRate
	if c.ServerLinkRate > 0 && (srvRate == 0 || c.ServerLinkRate < srvRate) {
		srvRate = c.ServerLinkRate
	}
	var maxSrv int64
	for _, s := range r.PerServer {
		maxSrv = max(maxSrv, s.Bytes)
	}
	if used > 0 {
		b.Imbalance = float64(maxSrv) / (total / float64(used))
	}
	if srvRate > 0 && maxSrv > 0 {
		b.ServerLimit = total / (float64(maxSrv) / srvRate)
	}
	b.NetworkLimit = c.NetworkCap
	for _, l := range []struct {
		v    float64
		name string
	}{{b.ClientLimit, "client links"}, {b.ServerLimit, "servers"}, {b.NetworkLimit, "network"}} {
		if l.v > 0 && (b.Max == 0 || l.v < b.Max) {
			b.Max, b.Bottleneck = l.v, l.name
		}
	}
	return b
}

func layoutString(d dist.Distribution) string {
	if d.Params() == "" {
		return d.Name()
	}
	return d.Name() + ":" + d.Params()
}

// StripeWidth is the size of one full round of the distribution over its
// datafiles - the stripe delta_ioz counts - as package dist defines it for
// MaxStripeWidth: strip_size*datafiles (simple_stripe),
// strip_size*group_strip_factor*datafiles (twod_stripe), the sum of the
// strips (varstrip). It is 0, meaning one endless stripe, for a single
// datafile, basic, and distributions it does not know.
func StripeWidth(d dist.Distribution) int64 {
	n := int64(d.Datafiles())
	if n <= 1 {
		return 0
	}
	kv := map[string]string{}
	for part := range strings.SplitSeq(d.Params(), ",") {
		if k, v, ok := strings.Cut(part, "="); ok {
			kv[k] = v
		}
	}
	num := func(key string) int64 {
		v, err := strconv.ParseInt(kv[key], 10, 64)
		if err != nil || v <= 0 {
			return 0
		}
		return v
	}
	var w int64
	switch d.Name() {
	case dist.SimpleStripe:
		w, _ = mul3(num("strip_size"), n, 1)
	case dist.TwodStripe:
		w, _ = mul3(num("strip_size"), num("group_strip_factor"), n)
	case dist.Varstrip:
		for st := range strings.SplitSeq(kv["strips"], ";") {
			_, size, _ := strings.Cut(st, ":")
			v, err := strconv.ParseInt(size, 10, 64)
			if err != nil || v <= 0 || w > math.MaxInt64-v {
				return 0
			}
			w += v
		}
	}
	return w
}

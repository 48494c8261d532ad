package rank

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"slices"
	"strconv"
)

// Split divides the ranks of c into groups, as MPI_Comm_split: ranks
// calling it with the same color form one group, ranked by key, then by
// their rank in c. Every rank of c must call it (it is a collective of c).
// A rank with a negative color (MPI_UNDEFINED) joins no group and gets nil.
//
// Each group is a Comm of its own, with its own rank, size and
// collectives, independent of c's and of the other groups': its rank 0
// listens on a fresh port and the members meet there through the same
// rendezvous as Join (a star per group), the address of every group's
// rank 0 having been spread over c. The caller closes the returned Comm;
// closing c does not close it.
func (c *Comm) Split(ctx context.Context, color, key int) (*Comm, error) {
	me, n := c.info.Rank, c.info.Size
	mine := binary.LittleEndian.AppendUint64(nil, uint64(int64(color)))
	mine = binary.LittleEndian.AppendUint64(mine, uint64(int64(key)))
	parts, err := c.Gather(ctx, 0, mine)
	if err != nil {
		return nil, fmt.Errorf("rank %d: Split: %w", me, err)
	}
	var table []byte
	if me == 0 {
		for _, p := range parts {
			table = append(table, p...)
		}
	}
	if table, err = c.Broadcast(ctx, 0, table); err != nil {
		return nil, fmt.Errorf("rank %d: Split: %w", me, err)
	}
	if len(table) != 16*n {
		return nil, fmt.Errorf("rank %d: Split: a color table of %d bytes, want %d", me, len(table), 16*n)
	}
	type member struct{ color, key, rank int }
	all := make([]member, n)
	for r := range all {
		all[r] = member{int(int64(binary.LittleEndian.Uint64(table[16*r:]))), int(int64(binary.LittleEndian.Uint64(table[16*r+8:]))), r}
	}
	var group []member
	if color >= 0 {
		for _, m := range all {
			if m.color == color {
				group = append(group, m)
			}
		}
		slices.SortFunc(group, func(a, b member) int {
			if a.key != b.key {
				return a.key - b.key
			}
			return a.rank - b.rank
		})
	}
	sub := slices.IndexFunc(group, func(m member) bool { return m.rank == me })

	// The group's rank 0 listens; every rank learns every leader's address.
	var ln net.Listener
	var addr string
	if sub == 0 && len(group) > 1 {
		listen, advertise := c.splitAddrs()
		if ln, err = net.Listen("tcp", listen); err != nil {
			err = fmt.Errorf("rank %d: Split: listen for group %d: %v", me, color, err)
		} else {
			_, port, _ := net.SplitHostPort(ln.Addr().String())
			addr = net.JoinHostPort(advertise, port)
		}
	}
	// Everyone takes part in the exchange even after a failure, so the
	// others do not wait for a rank that gave up; a leader that could not
	// listen sends an empty address and its members fail below.
	addrs, gerr := c.Gather(ctx, 0, []byte(addr))
	var list []byte
	if me == 0 {
		list = encodeList(addrs)
	}
	if gerr == nil {
		list, gerr = c.Broadcast(ctx, 0, list)
	}
	if err == nil {
		err = gerr
	}
	if err == nil && me != 0 {
		if addrs, err = decodeList(list, n); err != nil {
			err = fmt.Errorf("protocol error in the address list: %w", err)
		}
	}
	if err != nil || sub < 0 {
		if ln != nil {
			ln.Close()
		}
		if err != nil {
			return nil, fmt.Errorf("rank %d: Split: %w", me, err)
		}
		return nil, nil
	}
	leader := group[0].rank
	info := Info{Rank: sub, Size: len(group), LocalRank: -1, Launcher: c.info.Launcher,
		JobID:      c.info.JobID + "/split" + strconv.FormatUint(c.seqNow(), 10) + "/color" + strconv.Itoa(color),
		Rendezvous: string(addrs[leader]), RendezvousFrom: fmt.Sprintf("Split (rank %d of the parent)", leader), ListenFD: -1}
	if len(group) > 1 && info.Rendezvous == "" {
		return nil, fmt.Errorf("rank %d: Split: the group's rank 0 (rank %d) could not listen", me, leader)
	}
	g, err := join(ctx, info, Config{Listener: ln, HeartbeatInterval: c.interval, HeartbeatTimeout: c.timeout})
	if err != nil {
		return nil, fmt.Errorf("rank %d: Split: group %d: %w", me, color, err)
	}
	return g, nil
}

// splitAddrs is where a group's rank 0 listens and the host it gives its
// members: loopback for a run on loopback, else every interface and this
// host's name.
func (c *Comm) splitAddrs() (listen, advertise string) {
	host, _, err := net.SplitHostPort(c.info.Rendezvous)
	if ip := net.ParseIP(host); err == nil && ip != nil && ip.IsLoopback() {
		return net.JoinHostPort(host, "0"), host
	}
	return ":0", c.host
}

// seqNow is the number of collectives this rank has started on c: the same
// on every rank between collectives, so it names a Split uniquely.
func (c *Comm) seqNow() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seq
}

package mcmc

import (
	"context"
	"fmt"
)

// Reducer is what the summary over all ranks needs of them: the
// reductions of MPI's MPI_Allreduce that the report uses (*rank.Comm
// has them under other names).
type Reducer interface {
	MaxFloat64(ctx context.Context, v float64) (float64, error)
	SumUint64(ctx context.Context, v uint64) (uint64, error)
	MinUint64(ctx context.Context, v uint64) (uint64, error)
}

// Agree makes every rank fail with rank 0's error, or none: rank 0 passes
// its error, the other ranks nil. A rank that would otherwise wait for
// rank 0 in a collective call learns why it will never come.
func Agree(ctx context.Context, c Comm, err error) error {
	var msg []byte
	if err != nil {
		msg = []byte(err.Error())
	}
	got, berr := c.Broadcast(ctx, 0, msg)
	switch {
	case err != nil:
		return err
	case berr != nil:
		return berr
	case len(got) > 0:
		return fmt.Errorf("mcmc: rank 0: %s", got)
	}
	return nil
}

// Collect fills the summary's measures from this rank's st and its time
// secs, over all ranks: the slowest rank's time and phases, and the sums
// of the counts. Every rank calls it.
func (s *Summary) Collect(ctx context.Context, r Reducer, st Stats, secs float64) error {
	var err error
	for _, v := range []struct {
		dst *float64
		v   float64
	}{{&s.Seconds, secs}, {&s.Compute, st.Compute.Seconds()}, {&s.IO, st.IO.Seconds()}} {
		if *v.dst, err = r.MaxFloat64(ctx, v.v); err != nil {
			return err
		}
	}
	for _, v := range []struct {
		dst *int64
		v   int64
	}{{&s.Bytes, st.Bytes}, {&s.Writes, st.Writes}, {&s.Extents, st.Extents}, {&s.Moves, st.Moves}} {
		n, err := r.SumUint64(ctx, uint64(v.v))
		if err != nil {
			return err
		}
		*v.dst = int64(n)
	}
	return nil
}

// Package rank gives the processes of a parallel run their rank and size and
// the collectives they need: Barrier, Allreduce (Min, Max, Sum of float64 and
// uint64), Broadcast and Gather. The benchmark, MFG and the templates use it.
//
// # Where ranks come from
//
// Ranks are started by the launchers HPC users already have, or by pario:
//
//	mpirun -np 8 pario bench ...   Open MPI (OMPI_COMM_WORLD_*), MPICH/Hydra (PMI_*)
//	srun pario bench ...           Slurm (SLURM_PROCID, SLURM_STEP_NUM_TASKS)
//	pario bench -N 4 ...           Launch: pario starts 4 copies of itself (PARIO_*)
//
// Detect reads the rank, the size, a job id and the rendezvous address from
// the environment; it is a pure function over a map (see Detect for the
// variables and their precedence). No launcher variables means one rank.
//
// Join detects and then meets the other ranks at the rendezvous; NewLocal and
// RunLocal connect goroutine ranks inside one process over the same code.
//
// Split divides a Comm into groups (MPI_Comm_split: color, then key): each
// group is a Comm of its own, met through the same rendezvous at a fresh
// port of its rank 0, whose address is spread over the parent Comm first.
//
// # Rendezvous
//
// Rank 0 listens; every other rank dials it, retrying until the rendezvous
// deadline (Config.Timeout), so the order in which ranks start does not
// matter. The address is, first match wins: Config.Rendezvous (a flag);
// $PARIO_RENDEZVOUS; 127.0.0.1 when the launcher says all ranks are on one
// host (OMPI_COMM_WORLD_LOCAL_SIZE or MPI_LOCALNRANKS equal to the size, or a
// one-node Slurm step); the first host of the Slurm node list
// (SLURM_STEP_NODELIST, else SLURM_JOB_NODELIST, expanded with its zero padding
// kept: n[001-004] is n001..n004). A missing port is $PARIO_PORT, else a port
// derived from the job id (20000 + FNV-1a(job id) mod 10000, so two jobs that
// share a node rarely collide), else DefaultPort. Rank 0 binds exactly the
// given IP when the host is an IP literal, and all interfaces otherwise. The
// local launcher binds the listener itself and hands it to rank 0 as an
// inherited descriptor ($PARIO_LISTEN_FD), so there is no free-port race.
//
// # Protocol
//
// The ranks form a star around rank 0 over TCP: rank 0 has one connection to
// each other rank, which is enough for the hundreds of ranks a benchmark
// runs. Every message is a frame:
//
//	length uint64 (little endian, counts what follows)
//	type   uint8
//	body   (integers are uint64 little endian; strings and byte slices are a
//	        uint64 length then the bytes; no 32-bit sizes anywhere)
//
// A connection starts with hello (rank to rank 0: magic "PARIORNK", protocol
// version, job id, size, rank, host, pid). Rank 0 answers reject (a reason;
// the dialling rank fails at once) when the job id or the size differs from
// its own, the rank is out of range or already taken, and welcome (rank 0's
// host and pid and the heartbeat interval and timeout all ranks use) once
// every rank has joined, so Join returns on all ranks together.
//
// Collective number n (every rank counts its calls; all ranks must call the
// same collectives in the same order, as in MPI) works the same for every
// kind: each rank sends rank 0 a contribution (n, kind, op, root, data);
// when rank 0 has all of them it computes each rank's result (the reduction
// in rank order, so every rank gets bit-identical floats; the root's data
// for Broadcast; the list for Gather's root) and sends it back. Broadcast and
// Gather with a root other than 0 go through rank 0 too. A contribution whose
// kind, op or root differs from the others' fails the communicator, naming
// the rank.
//
// Heartbeats flow both ways every HeartbeatInterval while a connection is
// otherwise idle; every read must make progress within HeartbeatTimeout.
//
// # Failure
//
// A rank that dies (its connection closes or resets, or no bytes arrive for
// HeartbeatTimeout) makes every other rank's pending and later calls fail
// with a *RankError naming it, such as "rank 3 (node07:81234) died:
// connection reset"; nothing hangs. Rank 0 sees the death and sends abort
// (the RankError) to every other rank; when rank 0 itself dies the others see
// their connection to it fail. A rank whose context ends in the middle of a
// collective gives up: it sends abort naming itself and the others fail
// ("rank 2 (...) gave up in Barrier #7: context deadline exceeded"), since
// the collective cannot complete without it.
//
// Close is graceful: a rank other than 0 sends bye and leaves (a later
// collective fails naming it as having left); rank 0 sends shutdown to the
// ranks still connected, which then fail later calls naming rank 0. Each side
// half-closes and drains its connection before closing it, so a last result
// is never lost to a TCP reset.
package rank

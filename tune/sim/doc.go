// Package sim is a discrete-event simulator of striped writes to a set of
// storage targets, the "simulator" of the auto-tuning framework of You, Liu,
// Li and Moore ("The Design of an Auto-Tuning I/O Framework on Cray XT5
// System"); package tune/model is its analytic counterpart.
//
// # What is simulated
//
// Each target is a FIFO queue. Background requests arrive as a Poisson
// process of rate Lambda and need exponential service of rate Gamma,
// independently at every target. At time t (Config.Time) a job arrives:
//
//   - Groups <= 1 (the paper's model): one file of FileSize GB is cut into
//     Stripes = n blocks that join n distinct queues; each block is written
//     at V GB/s, taking FileSize/(nV), behind the work already queued there.
//   - Groups = m > 1 (the paper's future work): m files of FileSize/m GB
//     each, every one striped over n of the Targets = N queues chosen
//     uniformly at random and independently per file (the random m x N 0/1
//     matrix with row sums n). A target holding X_j blocks writes them back
//     to back ("in the same position in the queue"), busy X_j FileSize/(mnV).
//
// One experiment yields the job's system time T = max over the queues it
// uses of (W_j + X_j FileSize/(m n V)), W_j being the work queued at target
// j when the job arrives: the job finishes with its slowest block. No
// closed form exists for m > 1; for m <= 1 the mean is model.SystemTime.
//
// # How a queue is simulated
//
// A queue is advanced event by event over [0, t] with Lindley's recursion on
// its arrival events: if V is the unfinished work just after an arrival and
// the next arrival comes A later with service S, the work just after it is
// max(V - A, 0) + S, with A ~ Exp(Lambda) and S ~ Exp(Gamma) drawn afresh;
// after the last arrival before t the work decays to max(V - (t - tau), 0).
// That is exactly the FIFO M/M/1 workload (virtual waiting time) process,
// and since the file's blocks are served FIFO, later arrivals cannot delay
// them, so the simulation stops at t. Departures are not separate steps of
// the recursion. Result.Events counts one event per arrival processed: every
// background request that arrives in [0, t] at a queue the job uses, plus
// one per block of the job (an event-list simulator would also pop one
// departure per request, about twice as many events for the same
// trajectory). Queues the job does not use cannot influence it and are not
// simulated.
//
// # Initial state
//
// Init selects how every queue starts at time 0:
//
//   - Stationary (the default): the unfinished work is drawn from the
//     equilibrium law (0 with probability 1-rho, else Exp(Gamma-Lambda)),
//     which the dynamics preserve, so the work found at any t > 0 has
//     exactly the law model.SystemTime assumes. This is the fair comparison
//     with the model, and it is cheap: t only needs to be long enough for
//     the event loop to be exercised (the tests use t = 100 s, about 10
//     background arrivals per queue at the paper's rates).
//   - Empty (as the paper's simulation): every queue starts idle. The mean
//     wait at one queue is then model.MeanWait(t), below the equilibrium
//     value by B(t) = model.MeanWaitEquilibrium - model.MeanWait(t), which
//     decays like exp(-beta0 t), beta0 = Gamma(1-sqrt(rho))^2 (at the
//     paper's rates 1/beta0 = 718 s, B(1000) = 1.05 s, B(10000) = 2.9e-7 s).
//     Started empty, each queue's work is stochastically increasing in t,
//     so under the monotone coupling the bias of a job using k queues is
//     between 0 and k*B(t); Result.BiasBound reports that bound.
//
// # Experiments, statistics and reproducibility
//
// Experiments are independent. With Config.Experiments = 0 the count is
// chosen for precision: a pilot of PilotExperiments experiments estimates
// the mean and standard deviation s, the run then uses
//
//	n = ceil((z_0.995 * s / (RelHalfWidth * mean))^2)   (times 1.1 for the pilot's own error)
//
// fresh experiments (z_0.995 = 2.5758, RelHalfWidth 0.01 by default: a 99%
// confidence interval narrower than 2% of the mean), and, should the
// interval still be too wide, tops up with more until it is or
// MaxExperiments is reached. The pilot is not part of the estimate. The
// interval is the normal (CLT) one, mean +- z s/sqrt(N), N in the
// thousands at least.
//
// Every queue j of experiment k draws its random numbers from its own PCG
// stream (math/rand/v2 rand.PCG) seeded with a hash of (Config.Seed, k, j),
// and the random assignment of the multi-group case from another stream of
// (Config.Seed, k); each worker owns one PCG source and reseeds it. The
// experiments are grouped into
// fixed chunks that Workers goroutines (GOMAXPROCS by default) take in any
// order, and the chunk statistics are merged in chunk order, so a Result
// depends only on the Config and Seed: it is bit-for-bit the same for any
// number of workers. Because the background traffic of queue j in experiment k
// does not depend on Stripes, Groups or FileSize, runs that differ only in
// those see the same background (common random numbers), which makes
// comparisons between them much less noisy; Sweep exploits this to estimate
// E(T) for every n = 1..Stripes in one pass.
package sim

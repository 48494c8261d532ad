// Package estimate estimates the tuner's lambda and gamma from a log of I/O
// jobs, by the rule of the tuning paper (You, Liu, Li and Moore, section II
// and figure 2): a job arrives when its last block does, jobs that arrive
// at the same moment count as one job, lambda is one over the mean time
// between arrivals and gamma one over the mean service time of a job. The
// paper's Table I (13.478 s between arrivals, 4.453 s of service) came from
// a month of such logs on Kraken.
//
// Two log formats are read: a small CSV (ReadCSV, one block a line) and
// the pipe-separated output of Slurm's sacct -P (ReadSacct). The package is
// pure: it reads from an io.Reader and computes.
package estimate

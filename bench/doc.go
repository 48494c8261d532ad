// Package bench is pario's IOR-compatible parallel I/O benchmark engine,
// behind `pario bench`. It runs IOR's test loop on every rank of a run
// (package rank gives the ranks and collectives), with IOR's options
// (Options), IOR's timing, IOR's text, JSON and CSV output, and data
// verification that names a misplaced block. The storage is a back end
// (package backend and its drivers: POSIX, MMAP, DUMMY, PARIO); the
// offsets come from package pattern.
//
// # One test
//
// For each repetition (-i), as IOR's TestIoSys:
//
//	write phase (-w)    remove the old file (untimed), barrier, then each rank
//	                    times open, its transfers (+ fsync with -e), close
//	write check (-W)    untimed: barrier, read back, compare with the signature
//	read phase (-r/-R)  drop the cache if asked (untimed), barrier, timed as above
//	read check (-R)     untimed: read again and compare (IOR compares inside the
//	                    timed read; here the read figures never include it)
//	remove              unless -k
//
// Each rank records six timers per phase (open, I/O and close start and
// stop). Reduce combines them like IOR: starts with MIN, stops with MAX;
// bandwidth is the aggregate bytes over (last close stop - first open
// start), IOPS the transfers over (last I/O stop - first I/O start),
// latency the best rank's mean time per transfer. Summarize gives IOR's
// summary over the repetitions: max, min, mean and population standard
// deviation of MiB/s and of operations per second, and the mean time. The
// elbencho-style "first done" figures (the whole test's bytes and rate at
// the moment the first rank finished) come from progress marks each rank
// takes at every 1/16 of its transfers.
//
// # Verification
//
// The written data is the signature described in signature.go: a
// pseudo-random body per (rank, repetition) and, every 4 KiB, a stamp
// holding the word's file offset, the writer's rank and the repetition.
// A block found in the wrong place is reported with the offset where it
// was found and the offset, rank and repetition its stamp names.
// Mismatches make Run return ErrVerify (a non-zero exit status).
//
// # Failure
//
// Every rank takes part in the same collectives whatever happens: a rank
// whose open or transfer fails finishes the phase's collectives and all
// ranks return the same CollectiveError, naming the ranks and their
// errors, instead of hanging. A run that fails or is interrupted after its
// write phase created the test file(s) removes them unless -k (each rank
// the file it would remove at the end of a repetition, without
// collectives, which may be what failed), and rank 0's error carries a
// *Cleanup saying what became of them.
//
// # Cost
//
// The hot loop allocates nothing per transfer; on the DUMMY
// back end with no delay one rank does millions of 4 KiB transfers per
// second (BenchmarkDummyTransfers, docs/BENCHMARKS.md).
package bench

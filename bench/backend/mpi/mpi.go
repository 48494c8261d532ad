//go:build hdf5

package mpi

/*
#cgo pkg-config: ompi-c
#include <mpi.h>
#include <stdint.h>

static int pario_mpi_init(int *rank, int *size, int *serialized) {
	int inited = 0, provided = MPI_THREAD_SINGLE, rc;
	MPI_Initialized(&inited);
	if (!inited) {
		rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided);
		if (rc != MPI_SUCCESS) return rc;
	} else {
		MPI_Query_thread(&provided);
	}
	*serialized = provided >= MPI_THREAD_SERIALIZED;
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	MPI_Comm_rank(MPI_COMM_WORLD, rank);
	MPI_Comm_size(MPI_COMM_WORLD, size);
	return MPI_SUCCESS;
}

static int pario_mpi_max_u64(uint64_t *v, int self) {
	return MPI_Allreduce(MPI_IN_PLACE, v, 1, MPI_UINT64_T, MPI_MAX, self ? MPI_COMM_SELF : MPI_COMM_WORLD);
}

static void pario_mpi_error(int code, char *buf, int n) {
	int len = 0;
	if (MPI_Error_string(code, buf, &len) != MPI_SUCCESS || len >= n) len = 0;
	buf[len] = 0;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"unsafe"
)

var (
	mu        sync.Mutex
	users     int
	finalized bool
	calls     chan func()
	world     struct{ rank, size int }

	// serialized says MPI granted MPI_THREAD_SERIALIZED: any thread may
	// call it, one at a time (callMu), so Do calls on the caller's own
	// thread. Without it every call goes to the thread that initialised
	// MPI (MPI_THREAD_FUNNELED), two thread wake-ups each: 30-60 us, a
	// third of a 1 MiB read from the page cache (docs/BENCHMARKS.md,
	// "Warm reads: the software path alone").
	serialized bool
	callMu     sync.Mutex
)

// Open initialises MPI on its thread (the first time) and counts a user;
// every Open needs a Close. It fails once MPI has been finalized: MPI
// starts once per process.
func Open() (rank, size int, err error) {
	mu.Lock()
	defer mu.Unlock()
	if finalized {
		return 0, 0, errors.New("mpi: MPI was finalized in this process; run one MPI test per process")
	}
	if calls == nil {
		calls = make(chan func())
		ready := make(chan error)
		go func() {
			// MPI_Init and MPI_Finalize run here (the standard wants
			// them on one thread), and every other call too unless MPI
			// allows calls from any thread one at a time (Do).
			runtime.LockOSThread()
			var r, s, ser C.int
			if rc := C.pario_mpi_init(&r, &s, &ser); rc != C.MPI_SUCCESS {
				ready <- fmt.Errorf("mpi: MPI_Init_thread: %w", Error(int(rc)))
				return
			}
			world.rank, world.size = int(r), int(s)
			serialized = ser != 0
			ready <- nil
			for f := range calls {
				f()
			}
		}()
		if err := <-ready; err != nil {
			calls = nil
			finalized = true
			return 0, 0, err
		}
	}
	users++
	return world.rank, world.size, nil
}

// Close drops a user; the last one finalizes MPI.
func Close() error {
	mu.Lock()
	defer mu.Unlock()
	if users == 0 {
		return nil
	}
	users--
	if users > 0 {
		return nil
	}
	var rc C.int
	callMu.Lock()
	onThread(func() { rc = C.MPI_Finalize() })
	callMu.Unlock()
	close(calls)
	finalized = true
	if rc != C.MPI_SUCCESS {
		return fmt.Errorf("mpi: MPI_Finalize: %w", Error(int(rc)))
	}
	return nil
}

// Do runs f, which calls MPI or a library over it (HDF5, NetCDF), as no
// other Do runs: on the caller's thread where MPI allows that
// (MPI_THREAD_SERIALIZED), else on the thread that initialised MPI.
func Do(f func()) {
	callMu.Lock()
	defer callMu.Unlock()
	if serialized {
		f()
		return
	}
	onThread(f)
}

// onThread runs f on the thread that initialised MPI and waits for it.
func onThread(f func()) {
	done := make(chan struct{})
	calls <- func() { f(); close(done) }
	<-done
}

// MaxUint64 is MPI_Allreduce(MPI_MAX) of v in 64 bits over the world (or
// only this process with self): how ranks agree on the length of a
// dimension they extend (the thesis' third finding, done right). Call it
// from inside Do.
func MaxUint64(v uint64, self bool) (uint64, error) {
	x := C.uint64_t(v)
	s := C.int(0)
	if self {
		s = 1
	}
	if rc := C.pario_mpi_max_u64(&x, s); rc != C.MPI_SUCCESS {
		return 0, fmt.Errorf("MPI_Allreduce(MPI_MAX): %w", Error(int(rc)))
	}
	return uint64(x), nil
}

// Abort ends every process of the job with status code (MPI_Abort on
// MPI_COMM_WORLD; mpirun then stops the others): the way out when a rank
// is left inside a collective call another rank will never make. It does
// not return. It takes the lock of Do when it can; when a call holds it
// (this process may be the one stuck) it calls MPI_Abort beside it,
// which Open MPI allows: the abort goes through its runtime.
func Abort(code int) {
	if callMu.TryLock() {
		if !serialized && calls != nil {
			onThread(func() { C.MPI_Abort(C.MPI_COMM_WORLD, C.int(code)) })
		}
	}
	C.MPI_Abort(C.MPI_COMM_WORLD, C.int(code))
	os.Exit(code)
}

// Error is an MPI error code with its text.
func Error(code int) error {
	buf := make([]byte, C.MPI_MAX_ERROR_STRING+1)
	C.pario_mpi_error(C.int(code), (*C.char)(unsafe.Pointer(&buf[0])), C.int(len(buf)))
	msg := C.GoString((*C.char)(unsafe.Pointer(&buf[0])))
	if msg == "" {
		msg = "unknown MPI error"
	}
	return fmt.Errorf("%s (MPI error %d)", msg, code)
}

// Check fails unless this process is rank `rank` of `tasks` MPI ranks: a
// back end that calls collectives needs the benchmark's ranks to be MPI's.
func Check(rank, tasks int) error {
	if world.size != tasks || world.rank != rank {
		return fmt.Errorf("this process is MPI rank %d of %d but benchmark rank %d of %d: run the ranks under mpirun -np %d (not pario bench -N)",
			world.rank, world.size, rank, tasks, tasks)
	}
	return nil
}

// StopTogether is how ranks making collective calls agree to stop at a
// stonewalling deadline: all stop once any has hit it (MPI_Allreduce of
// the flag; microseconds, where pario's own collectives compete with
// MPI's busy polling). With self nothing is shared: hit as it is.
func StopTogether(hit, self bool) (bool, error) {
	if self {
		return hit, nil
	}
	var v uint64
	if hit {
		v = 1
	}
	var err error
	Do(func() { v, err = MaxUint64(v, false) })
	return v == 1, err
}

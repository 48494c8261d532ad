//go:build hdf5

package hdf5_test

import (
	"path/filepath"
	"testing"

	"github.com/pario/pario/bench/backend"
	"github.com/pario/pario/bench/backend/backendtest"
	"github.com/pario/pario/bench/backend/hdf5"
	"github.com/pario/pario/bench/backend/mpi"
	"github.com/pario/pario/bench/backend/mpiio"
	"github.com/pario/pario/bench/backend/nc4"
)

// The back-end contract on one rank, in this process (an MPI singleton).
// MPI starts once per process, so the test holds a reference for its
// whole run and the drivers' Close calls do not finalize it in between.
func TestContract(t *testing.T) {
	if _, _, err := mpi.Open(); err != nil {
		t.Fatal(err)
	}
	defer mpi.Close()
	for _, tc := range []struct {
		name string
		drv  backend.Driver
	}{
		{"MPIIO", &mpiio.Driver{}},
		{"MPIIO collective", &mpiio.Driver{Collective: true}},
		{"HDF5", &hdf5.Driver{}},
		{"HDF5 aligned chunked collective", &hdf5.Driver{Alignment: 64 << 10, ChunkSize: 64 << 10, Collective: true, NoFill: true}},
		{"HDF5 unlimited", &hdf5.Driver{Unlimited: true, ChunkSize: 32 << 10}},
		{"HDF5 2-D", &hdf5.Driver{DimY: 128 << 10, ChunkX: 1, ChunkY: 32 << 10}},
		{"NC4", &nc4.Driver{NoFill: true}},
		{"NC4 unlimited thesis rule", &nc4.Driver{Unlimited: true, Collective: true, ChunkRule: "thesis"}},
		{"NC4 2-D", &nc4.Driver{DimY: 64 << 10, ChunkX: 2, ChunkY: 16 << 10}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			backendtest.Run(t, tc.drv, backend.Env{}, filepath.Join(t.TempDir(), "f"))
		})
	}
}

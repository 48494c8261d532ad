package template

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/pario/pario/internal/testenv"
	"github.com/pario/pario/template/annot"
)

// writeOrdered is the oracle: each rank writes record(rank, k) for every
// round k with MPI_File_write_ordered, the collective write through the
// shared pointer in rank order.
const writeOrdered = `#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
	int rank, rounds = atoi(argv[2]);
	MPI_File fh;
	char buf[128];
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	if (MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh) != MPI_SUCCESS) {
		fprintf(stderr, "rank %d: cannot open %s\n", rank, argv[1]);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	for (int k = 0; k < rounds; k++) {
		/* record(r, k) of template_test.go */
		int n = snprintf(buf, sizeof buf, "%d.%d:", rank, k);
		int body = 1 + (rank * 7 + k * 13) % 50;
		memset(buf + n, 'a' + rank, body);
		buf[n + body] = '\n';
		MPI_Status st;
		MPI_File_write_ordered(fh, buf, n + body + 1, MPI_CHAR, &st);
	}
	MPI_File_close(&fh);
	MPI_Finalize();
	return 0;
}
`

// TestOrderedLogMatchesMPI: where the seed's semantics and MPI's agree
// (ordered writes through one global pointer), an ordered log and Open
// MPI's MPI_File_write_ordered write the same bytes.
func TestOrderedLogMatchesMPI(t *testing.T) {
	mpicc, err := exec.LookPath("mpicc")
	if err != nil {
		testenv.SkipOrFail(t, "mpicc not found (Debian: apt-get install libopenmpi-dev)")
	}
	mpirun, err := exec.LookPath("mpirun")
	if err != nil {
		testenv.SkipOrFail(t, "mpirun not found (Debian: apt-get install openmpi-bin)")
	}
	const rounds = 9
	dir := t.TempDir()
	src := filepath.Join(dir, "ordered.c")
	if err := os.WriteFile(src, []byte(writeOrdered), 0o644); err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(dir, "ordered")
	if out, err := exec.CommandContext(testCtx(t), mpicc, "-std=c99", "-o", prog, src).CombinedOutput(); err != nil {
		t.Fatalf("mpicc: %v\n%s", err, out)
	}
	mpiOut := filepath.Join(dir, "mpi.out")
	cmd := exec.CommandContext(testCtx(t), mpirun, "--allow-run-as-root", "--oversubscribe", "-np", strconv.Itoa(nRanks), prog, mpiOut, strconv.Itoa(rounds))
	cmd.Env = append(os.Environ(),
		"OMPI_MCA_btl_vader_single_copy_mechanism=none", // containers: no CMA
		"OMPI_MCA_plm_rsh_agent=",                       // one host: never ssh
		"OMPI_MCA_rmaps_base_oversubscribe=1",
		"OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("mpirun: %v\n%s", err, out)
	}
	want, err := os.ReadFile(mpiOut)
	if err != nil {
		t.Fatal(err)
	}

	ours := filepath.Join(dir, "log.out")
	a := ann(t, "out LOG rc wo a main=0")
	runRanks(t, nRanks, ours, nil, func(ctx context.Context, g *Group, f File) error {
		s, err := g.Open(ctx, a, f, Bounds{})
		if err != nil {
			return err
		}
		defer s.Close()
		me := g.Comm().Rank()
		for k := range rounds {
			jitter(me, k)
			if _, err := s.Append(ctx, record(me, k)); err != nil {
				return err
			}
		}
		return nil
	})
	got, _ := os.ReadFile(ours)
	if !bytes.Equal(got, want) {
		t.Fatalf("ordered log and MPI_File_write_ordered differ:\nours %q\nMPI  %q", got, want)
	}
	checkOrder(t, annot.Ordered, parseRecords(t, got), nRanks, rounds)
	t.Logf("%d bytes identical to Open MPI's", len(got))
}

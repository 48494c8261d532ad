package rank

import (
	"strconv"
	"strings"
	"testing"
)

func TestDetect(t *testing.T) {
	jobPort := func(job string) string { return itoa(derivedPort(job)) }
	tests := []struct {
		name string
		env  map[string]string
		want Info   // compared field by field, ListenFD included
		err  string // substring of the error
	}{
		{
			name: "none",
			env:  map[string]string{"HOME": "/root"},
			want: Info{Rank: 0, Size: 1, LocalRank: -1, Launcher: LauncherNone, Port: DefaultPort, ListenFD: -1},
		},
		{
			name: "pario launcher",
			env: map[string]string{"PARIO_RANK": "0", "PARIO_SIZE": "4", "PARIO_RENDEZVOUS": "127.0.0.1:4000",
				"PARIO_JOB": "tok", "PARIO_LISTEN_FD": "3"},
			want: Info{Rank: 0, Size: 4, LocalRank: -1, Launcher: LauncherPario, JobID: "tok",
				Rendezvous: "127.0.0.1:4000", RendezvousFrom: "PARIO_RENDEZVOUS", Port: derivedPort("tok"), ListenFD: 3},
		},
		{
			name: "Slurm batch script",
			env:  map[string]string{"SLURM_PROCID": "0", "SLURM_NTASKS": "4", "SLURM_JOB_ID": "7"},
			want: Info{Rank: 0, Size: 1, LocalRank: -1, Launcher: LauncherNone, Port: DefaultPort, ListenFD: -1},
		},
		{
			name: "pario wins over Open MPI and Slurm",
			env: map[string]string{"PARIO_RANK": "2", "PARIO_SIZE": "3", "PARIO_RENDEZVOUS": "h",
				"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "8", "SLURM_PROCID": "0", "SLURM_STEP_NUM_TASKS": "9"},
			want: Info{Rank: 2, Size: 3, LocalRank: -1, Launcher: LauncherPario,
				Rendezvous: "h:" + itoa(DefaultPort), RendezvousFrom: "PARIO_RENDEZVOUS", Port: DefaultPort, ListenFD: -1},
		},
		{
			name: "Open MPI on one host",
			env: map[string]string{"OMPI_COMM_WORLD_RANK": "3", "OMPI_COMM_WORLD_SIZE": "4",
				"OMPI_COMM_WORLD_LOCAL_RANK": "3", "OMPI_COMM_WORLD_LOCAL_SIZE": "4", "OMPI_MCA_ess_base_jobid": "938475521",
				"PMIX_RANK": "3", "PMIX_NAMESPACE": "938475521"},
			want: Info{Rank: 3, Size: 4, LocalRank: 3, Launcher: LauncherOpenMPI, JobID: "938475521",
				Rendezvous: "127.0.0.1:" + jobPort("938475521"), RendezvousFrom: "loopback (all ranks on one host)",
				Port: derivedPort("938475521"), ListenFD: -1},
		},
		{
			name: "Open MPI 5 job from PMIX_NAMESPACE, rendezvous from env",
			env: map[string]string{"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "16",
				"OMPI_COMM_WORLD_LOCAL_SIZE": "8", "PMIX_NAMESPACE": "prterun-n1-123@1", "PARIO_RENDEZVOUS": "n1:7000"},
			want: Info{Rank: 1, Size: 16, LocalRank: -1, Launcher: LauncherOpenMPI, JobID: "prterun-n1-123@1",
				Rendezvous: "n1:7000", RendezvousFrom: "PARIO_RENDEZVOUS", Port: derivedPort("prterun-n1-123@1"), ListenFD: -1},
		},
		{
			name: "mpirun inside a Slurm allocation uses the job's node list",
			env: map[string]string{"OMPI_COMM_WORLD_RANK": "5", "OMPI_COMM_WORLD_SIZE": "8",
				"OMPI_COMM_WORLD_LOCAL_SIZE": "4", "OMPI_MCA_ess_base_jobid": "7",
				"SLURM_JOB_ID": "99", "SLURM_PROCID": "0", "SLURM_NTASKS": "8", "SLURM_JOB_NODELIST": "cn[007-008]",
				"PARIO_PORT": "5000"},
			want: Info{Rank: 5, Size: 8, LocalRank: -1, Launcher: LauncherOpenMPI, JobID: "7",
				Rendezvous: "cn007:5000", RendezvousFrom: "first host of SLURM_JOB_NODELIST", Port: 5000, ListenFD: -1},
		},
		{
			name: "MPICH Hydra",
			env: map[string]string{"PMI_RANK": "1", "PMI_SIZE": "2", "PMI_FD": "6",
				"MPI_LOCALRANKID": "1", "MPI_LOCALNRANKS": "2"},
			want: Info{Rank: 1, Size: 2, LocalRank: 1, Launcher: LauncherPMI,
				Rendezvous: "127.0.0.1:" + itoa(DefaultPort), RendezvousFrom: "loopback (all ranks on one host)",
				Port: DefaultPort, ListenFD: -1},
		},
		{
			name: "PMIx with the size from PMI_SIZE",
			env:  map[string]string{"PMIX_RANK": "2", "PMI_SIZE": "3", "PMIX_NAMESPACE": "ns", "PARIO_RENDEZVOUS": "[::1]:9"},
			want: Info{Rank: 2, Size: 3, LocalRank: -1, Launcher: LauncherPMIx, JobID: "ns",
				Rendezvous: "[::1]:9", RendezvousFrom: "PARIO_RENDEZVOUS", Port: derivedPort("ns"), ListenFD: -1},
		},
		{
			name: "srun --mpi=pmix: PMIx rank, Slurm size and node list",
			env: map[string]string{"PMIX_RANK": "0", "PMIX_NAMESPACE": "slurm.pmix.12.0",
				"SLURM_PROCID": "0", "SLURM_STEP_ID": "0", "SLURM_STEP_NUM_TASKS": "4", "SLURM_STEP_NODELIST": "n[01-02]"},
			want: Info{Rank: 0, Size: 4, LocalRank: -1, Launcher: LauncherPMIx, JobID: "slurm.pmix.12.0",
				Rendezvous: "n01:" + jobPort("slurm.pmix.12.0"), RendezvousFrom: "first host of SLURM_STEP_NODELIST",
				Port: derivedPort("slurm.pmix.12.0"), ListenFD: -1},
		},
		{
			name: "srun, zero padding kept",
			env: map[string]string{"SLURM_PROCID": "5", "SLURM_STEP_NUM_TASKS": "8", "SLURM_NTASKS": "16", "SLURM_LOCALID": "1",
				"SLURM_JOB_ID": "4242", "SLURM_STEP_ID": "3", "SLURM_STEP_NODELIST": "n[003-006]",
				"SLURM_JOB_NODELIST": "n[001-008]", "SLURMD_NODENAME": "n005"},
			want: Info{Rank: 5, Size: 8, LocalRank: 1, Launcher: LauncherSlurm, JobID: "4242.3",
				Rendezvous: "n003:" + jobPort("4242.3"), RendezvousFrom: "first host of SLURM_STEP_NODELIST",
				Port: derivedPort("4242.3"), ListenFD: -1},
		},
		{
			name: "srun, size from SLURM_NTASKS, old variable names",
			env: map[string]string{"SLURM_PROCID": "0", "SLURM_NTASKS": "2", "SLURM_JOBID": "1", "SLURM_STEPID": "0",
				"SLURM_JOB_NODELIST": "node-[01-02]-ib", "SLURMD_NODENAME": "node-01-ib", "PARIO_PORT": "6000"},
			want: Info{Rank: 0, Size: 2, LocalRank: -1, Launcher: LauncherSlurm, JobID: "1.0",
				Rendezvous: "node-01-ib:6000", RendezvousFrom: "first host of SLURM_JOB_NODELIST", Port: 6000, ListenFD: -1},
		},
		{
			name: "srun on one node",
			env: map[string]string{"SLURM_PROCID": "1", "SLURM_STEP_NUM_TASKS": "2", "SLURM_STEP_NUM_NODES": "1",
				"SLURM_STEP_NODELIST": "n7", "SLURM_JOB_ID": "5", "SLURM_STEP_ID": "0"},
			want: Info{Rank: 1, Size: 2, LocalRank: -1, Launcher: LauncherSlurm, JobID: "5.0",
				Rendezvous: "127.0.0.1:" + jobPort("5.0"), RendezvousFrom: "loopback (SLURM_STEP_NUM_NODES=1)",
				Port: derivedPort("5.0"), ListenFD: -1},
		},
		{
			name: "a batch script is one rank",
			env: map[string]string{"SLURM_PROCID": "0", "SLURM_NTASKS": "4", "SLURM_JOB_ID": "200505",
				"SLURM_JOB_NODELIST": "gnode[10,20,25,37]"},
			want: Info{Rank: 0, Size: 1, LocalRank: -1, Launcher: LauncherNone, Port: DefaultPort, ListenFD: -1},
		},
		{
			name: "the batch step id is not a step",
			env:  map[string]string{"SLURM_PROCID": "0", "SLURM_NTASKS": "4", "SLURM_STEP_ID": "4294967294"},
			want: Info{Rank: 0, Size: 1, LocalRank: -1, Launcher: LauncherNone, Port: DefaultPort, ListenFD: -1},
		},
		{
			name: "PARIO_JOB overrides the launcher's job id",
			env: map[string]string{"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "1",
				"OMPI_MCA_ess_base_jobid": "1", "PARIO_JOB": "mine"},
			want: Info{Rank: 0, Size: 1, LocalRank: -1, Launcher: LauncherOpenMPI, JobID: "mine",
				Port: derivedPort("mine"), ListenFD: -1},
		},
		{
			name: "no rendezvous found is not an error here",
			env:  map[string]string{"PMI_RANK": "0", "PMI_SIZE": "4", "MPI_LOCALNRANKS": "2"},
			want: Info{Rank: 0, Size: 4, LocalRank: -1, Launcher: LauncherPMI, Port: DefaultPort, ListenFD: -1},
		},

		{name: "rank without size", env: map[string]string{"OMPI_COMM_WORLD_RANK": "1"},
			err: "OMPI_COMM_WORLD_RANK=1 is set but OMPI_COMM_WORLD_SIZE is not"},
		{name: "size without rank", env: map[string]string{"PARIO_SIZE": "2"},
			err: "PARIO_SIZE=2 is set but PARIO_RANK is not"},
		{name: "rank not a number", env: map[string]string{"PMI_RANK": "one", "PMI_SIZE": "2"},
			err: `PMI_RANK="one" is not an integer`},
		{name: "negative rank", env: map[string]string{"PMI_RANK": "-1", "PMI_SIZE": "2"},
			err: "PMI_RANK=-1 is out of range"},
		{name: "rank not below size", env: map[string]string{"OMPI_COMM_WORLD_RANK": "4", "OMPI_COMM_WORLD_SIZE": "4"},
			err: "OMPI_COMM_WORLD_RANK=4 is not below OMPI_COMM_WORLD_SIZE=4"},
		{name: "zero size", env: map[string]string{"SLURM_PROCID": "0", "SLURM_STEP_NUM_TASKS": "0"},
			err: "SLURM_STEP_NUM_TASKS=0 is out of range"},
		{name: "huge size", env: map[string]string{"PARIO_RANK": "0", "PARIO_SIZE": "99999999999999999999"},
			err: "PARIO_SIZE=99999999999999999999 is out of range [1, 1048576]"},
		// 2^63 is an integer, too large: it said "is not an integer".
		{name: "size 2^63", env: map[string]string{"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "9223372036854775808"},
			err: "OMPI_COMM_WORLD_SIZE=9223372036854775808 is out of range [1, 1048576]"},
		{name: "rank -2^63-1", env: map[string]string{"PMI_RANK": "-9223372036854775809", "PMI_SIZE": "2"},
			err: "PMI_RANK=-9223372036854775809 is out of range [0, 1048576]"},
		// A task of an srun step other than 0 with its step variables
		// lost ran as the one rank of a run of its own.
		{name: "Slurm task other than 0 outside a step", env: map[string]string{"SLURM_PROCID": "3", "SLURM_NTASKS": "4"},
			err: "SLURM_PROCID=3 is set but neither SLURM_STEP_ID nor SLURM_STEP_NUM_TASKS is"},
		{name: "Slurm task not a number outside a step", env: map[string]string{"SLURM_PROCID": "x"},
			err: "SLURM_PROCID=x is set but neither SLURM_STEP_ID nor SLURM_STEP_NUM_TASKS is"},
		// MPICH's Hydra with -pmi-port gives PMI_ID for PMI_RANK and no
		// size: each process ran as a run of its own.
		{name: "Hydra with -pmi-port", env: map[string]string{"PMI_ID": "2", "PMI_PORT": "n1:4000", "MPI_LOCALNRANKS": "4", "MPI_LOCALRANKID": "2"},
			err: "PMI_ID=2 is set (MPICH's mpiexec -pmi-port) but PMI_RANK and PMI_SIZE are not"},
		{name: "local rank out of range", env: map[string]string{"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "4",
			"OMPI_COMM_WORLD_LOCAL_RANK": "2", "OMPI_COMM_WORLD_LOCAL_SIZE": "2"},
			err: "OMPI_COMM_WORLD_LOCAL_RANK=2 is out of range"},
		{name: "srun step without a size", env: map[string]string{"SLURM_PROCID": "0", "SLURM_STEP_ID": "1"},
			err: "SLURM_PROCID=0 is set but SLURM_NTASKS is not"},
		{name: "PMIx without a size", env: map[string]string{"PMIX_RANK": "0"},
			err: "PMIX_RANK=0 is set but no size is"},
		{name: "bad port", env: map[string]string{"PARIO_PORT": "70000"},
			err: "PARIO_PORT=70000 is out of range"},
		{name: "bad rendezvous", env: map[string]string{"PARIO_RENDEZVOUS": ":80"},
			err: `PARIO_RENDEZVOUS=":80": no host`},
		{name: "bad node list", env: map[string]string{"SLURM_PROCID": "1", "SLURM_STEP_NUM_TASKS": "2",
			"SLURM_STEP_NODELIST": "n[1-"},
			err: `SLURM_STEP_NODELIST: rank: node list "n[1-": position 1: '[' is never closed`},
		{name: "srun rank 0 not on the first node", env: map[string]string{"SLURM_PROCID": "0", "SLURM_STEP_NUM_TASKS": "2",
			"SLURM_STEP_NODELIST": "n[1-2]", "SLURMD_NODENAME": "n2"},
			err: "rank 0 runs on n2 (SLURMD_NODENAME) but the rendezvous is the first host of SLURM_STEP_NODELIST, n1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Detect(tt.env)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Detect: error %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Detect: %v", err)
			}
			if got != tt.want {
				t.Errorf("Detect:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestWithPort(t *testing.T) {
	for in, want := range map[string]string{
		"h": "h:7", "h:80": "h:80", "10.0.0.1": "10.0.0.1:7", "::1": "[::1]:7", "[::1]": "[::1]:7", "[::1]:9": "[::1]:9",
	} {
		if got, err := withPort(in, 7); err != nil || got != want {
			t.Errorf("withPort(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", ":80", "h:0", "h:x", "a b"} {
		if got, err := withPort(in, 7); err == nil {
			t.Errorf("withPort(%q) = %q, want an error", in, got)
		}
	}
}

func TestBindAddr(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:5": "127.0.0.1:5", "n001:5": ":5", "[::1]:5": "[::1]:5",
	} {
		if got := bindAddr(in); got != want {
			t.Errorf("bindAddr(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzDetect(f *testing.F) {
	f.Add("OMPI_COMM_WORLD", "3", "4", "n[001-004]")
	f.Add("SLURM", "0", "2", "a[1,3-5],b7")
	f.Add("PMI", "x", "", "")
	f.Fuzz(func(t *testing.T, launcher, rank, size, nodelist string) {
		env := map[string]string{"SLURM_JOB_NODELIST": nodelist}
		switch {
		case strings.HasPrefix(launcher, "OMPI"):
			env["OMPI_COMM_WORLD_RANK"], env["OMPI_COMM_WORLD_SIZE"] = rank, size
		case strings.HasPrefix(launcher, "SLURM"):
			env["SLURM_PROCID"], env["SLURM_STEP_NUM_TASKS"] = rank, size
		default:
			env["PMI_RANK"], env["PMI_SIZE"] = rank, size
		}
		info, err := Detect(env)
		if err != nil {
			return
		}
		if info.Size < 1 || info.Rank < 0 || info.Rank >= info.Size || info.Port < 1 || info.Port > 65535 {
			t.Fatalf("Detect(%v) = %+v", env, info)
		}
	})
}

func itoa(n int) string { return strconv.Itoa(n) }

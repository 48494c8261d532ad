package rank

import (
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"os"
	"strconv"
	"strings"
)

// Launchers, as reported in Info.Launcher.
const (
	LauncherNone    = "none"    // no launcher variables: one rank
	LauncherPario   = "pario"   // Launch (PARIO_RANK, PARIO_SIZE)
	LauncherOpenMPI = "openmpi" // mpirun from Open MPI (OMPI_COMM_WORLD_*)
	LauncherPMI     = "pmi"     // MPICH's Hydra and other PMI launchers (PMI_RANK, PMI_SIZE)
	LauncherPMIx    = "pmix"    // a PMIx launcher (PMIX_RANK)
	LauncherSlurm   = "slurm"   // srun (SLURM_PROCID)
	LauncherLocal   = "local"   // NewLocal: goroutine ranks in one process
)

// DefaultPort is the rendezvous port when neither the address, $PARIO_PORT
// nor a job id gives one.
const DefaultPort = 27182

// MaxSize is the largest number of ranks Detect accepts.
const MaxSize = 1 << 20

// Info is what Detect finds in the environment.
type Info struct {
	Rank, Size int
	LocalRank  int    // rank among the ranks on this host; -1 when unknown
	Launcher   string // one of the Launcher constants
	JobID      string // shared by the ranks of one run; "" when unknown

	// Rendezvous is rank 0's address, host:port; "" when none was found
	// (fine for one rank; Join needs one otherwise). RendezvousFrom names
	// where it came from, for messages.
	Rendezvous     string
	RendezvousFrom string
	Port           int // the port used when an address has none

	// ListenFD is an inherited listening socket for rank 0 (from
	// $PARIO_LISTEN_FD, set by Launch), or -1.
	ListenFD int
}

// Environ returns the process environment as a map, for Detect.
func Environ() map[string]string {
	m := make(map[string]string)
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

// Detect finds this process's rank and size, job id and rendezvous address
// in env. The launchers are tried in this order; the first whose variables
// are present decides, and variables that are present but malformed are an
// error naming them:
//
//	pario    PARIO_RANK, PARIO_SIZE (job PARIO_JOB, listener PARIO_LISTEN_FD)
//	Open MPI OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_RANK,
//	         OMPI_COMM_WORLD_LOCAL_SIZE (job OMPI_MCA_ess_base_jobid, else PMIX_NAMESPACE)
//	PMI      PMI_RANK, PMI_SIZE, MPI_LOCALRANKID, MPI_LOCALNRANKS (MPICH Hydra; no job id)
//	PMIx     PMIX_RANK with the size from PMI_SIZE or the Slurm step (job PMIX_NAMESPACE)
//	Slurm    SLURM_PROCID with SLURM_STEP_NUM_TASKS, else SLURM_NTASKS, SLURM_LOCALID
//	         (job SLURM_JOB_ID.SLURM_STEP_ID); only inside an srun step: a batch
//	         script also has SLURM_PROCID=0 and SLURM_NTASKS, and is one rank
//	none     rank 0 of 1; but PMI_ID (Hydra's -pmi-port, no size) or a
//	         SLURM_PROCID other than 0 outside a step is an error, not one
//	         rank running alone while its launcher started many
//
// $PARIO_JOB, when set, is the job id whatever the launcher. The rendezvous
// address comes from $PARIO_RENDEZVOUS (host or host:port), else 127.0.0.1
// when the launcher says all ranks share one host, else the first host of
// SLURM_STEP_NODELIST (srun) or SLURM_JOB_NODELIST / SLURM_NODELIST; the port,
// when missing, from $PARIO_PORT, else derived from the job id, else
// DefaultPort. Under srun, rank 0 checks that it runs on that first host
// (SLURMD_NODENAME), since otherwise nobody would find it.
func Detect(env map[string]string) (Info, error) {
	get := func(k string) string { return strings.TrimSpace(env[k]) }
	info := Info{Rank: 0, Size: 1, LocalRank: -1, Launcher: LauncherNone, ListenFD: -1}
	localSize := -1 // ranks on this host, when the launcher says
	slurmStep := get("SLURM_PROCID") != "" && inSlurmStep(get)

	var err error
	switch {
	case get("PARIO_RANK") != "" || get("PARIO_SIZE") != "":
		info.Launcher = LauncherPario
		info.Rank, info.Size, err = rankSize(get, "PARIO_RANK", "PARIO_SIZE")
		if err == nil && get("PARIO_LISTEN_FD") != "" {
			info.ListenFD, err = intVar(get, "PARIO_LISTEN_FD", 0, 1<<20)
		}
	case get("OMPI_COMM_WORLD_RANK") != "" || get("OMPI_COMM_WORLD_SIZE") != "":
		info.Launcher = LauncherOpenMPI
		info.Rank, info.Size, err = rankSize(get, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE")
		if err == nil {
			info.LocalRank, localSize, err = local(get, "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE", info.Size)
		}
		info.JobID = firstOf(get, "OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE")
	case get("PMI_RANK") != "" || get("PMI_SIZE") != "" && get("PMIX_RANK") == "":
		info.Launcher = LauncherPMI
		info.Rank, info.Size, err = rankSize(get, "PMI_RANK", "PMI_SIZE")
		if err == nil {
			info.LocalRank, localSize, err = local(get, "MPI_LOCALRANKID", "MPI_LOCALNRANKS", info.Size)
		}
		if slurmStep { // srun --mpi=pmi2
			info.JobID = slurmJob(get)
		}
	case get("PMIX_RANK") != "":
		info.Launcher = LauncherPMIx
		sizeVar := ""
		switch {
		case get("PMI_SIZE") != "":
			sizeVar = "PMI_SIZE"
		case slurmStep && get("SLURM_STEP_NUM_TASKS") != "":
			sizeVar = "SLURM_STEP_NUM_TASKS"
		case slurmStep && get("SLURM_NTASKS") != "":
			sizeVar = "SLURM_NTASKS"
		default:
			return info, fmt.Errorf("rank: PMIX_RANK=%s is set but no size is (PMI_SIZE, OMPI_COMM_WORLD_SIZE or SLURM_STEP_NUM_TASKS); set PARIO_RANK and PARIO_SIZE", get("PMIX_RANK"))
		}
		info.Rank, info.Size, err = rankSize(get, "PMIX_RANK", sizeVar)
		info.JobID = get("PMIX_NAMESPACE")
	case slurmStep:
		info.Launcher = LauncherSlurm
		sizeVar := "SLURM_STEP_NUM_TASKS"
		if get(sizeVar) == "" {
			sizeVar = "SLURM_NTASKS"
		}
		info.Rank, info.Size, err = rankSize(get, "SLURM_PROCID", sizeVar)
		if err == nil && get("SLURM_LOCALID") != "" {
			info.LocalRank, err = intVar(get, "SLURM_LOCALID", 0, info.Size-1)
		}
		info.JobID = slurmJob(get)
	case get("PMI_ID") != "":
		// Hydra's -pmi-port names the rank PMI_ID and leaves the size to
		// the PMI protocol: one rank here would be a run of its own.
		err = fmt.Errorf("rank: PMI_ID=%s is set (MPICH's mpiexec -pmi-port) but PMI_RANK and PMI_SIZE are not: run mpiexec without -pmi-port, or set PARIO_RANK and PARIO_SIZE", get("PMI_ID"))
	case get("SLURM_PROCID") != "" && get("SLURM_PROCID") != "0":
		// A batch script is task 0; any other task is in a step, whose
		// variables are missing.
		err = fmt.Errorf("rank: SLURM_PROCID=%s is set but neither SLURM_STEP_ID nor SLURM_STEP_NUM_TASKS is: a task of srun other than 0 without its step; set PARIO_RANK and PARIO_SIZE", get("SLURM_PROCID"))
	}
	if err != nil {
		return info, err
	}
	if v := get("PARIO_JOB"); v != "" {
		info.JobID = v
	}

	info.Port = DefaultPort
	if info.JobID != "" {
		info.Port = derivedPort(info.JobID)
	}
	if get("PARIO_PORT") != "" {
		if info.Port, err = intVar(get, "PARIO_PORT", 1, 65535); err != nil {
			return info, err
		}
	}

	switch {
	case get("PARIO_RENDEZVOUS") != "":
		info.Rendezvous, err = withPort(get("PARIO_RENDEZVOUS"), info.Port)
		if err != nil {
			return info, fmt.Errorf("rank: PARIO_RENDEZVOUS=%q: %v", get("PARIO_RENDEZVOUS"), err)
		}
		info.RendezvousFrom = "PARIO_RENDEZVOUS"
	case info.Size == 1:
	case localSize == info.Size:
		info.Rendezvous = net.JoinHostPort("127.0.0.1", strconv.Itoa(info.Port))
		info.RendezvousFrom = "loopback (all ranks on one host)"
	case slurmStep && get("SLURM_STEP_NUM_NODES") == "1":
		info.Rendezvous = net.JoinHostPort("127.0.0.1", strconv.Itoa(info.Port))
		info.RendezvousFrom = "loopback (SLURM_STEP_NUM_NODES=1)"
	default:
		vars := []string{"SLURM_JOB_NODELIST", "SLURM_NODELIST"}
		if slurmStep {
			vars = append([]string{"SLURM_STEP_NODELIST"}, vars...)
		}
		for _, v := range vars {
			if get(v) == "" {
				continue
			}
			host, err := FirstNode(get(v))
			if err != nil {
				return info, fmt.Errorf("rank: %s: %w", v, err)
			}
			if info.Launcher == LauncherSlurm && info.Rank == 0 {
				if me := get("SLURMD_NODENAME"); me != "" && me != host {
					return info, fmt.Errorf("rank: rank 0 runs on %s (SLURMD_NODENAME) but the rendezvous is the first host of %s, %s: use the default task distribution or set PARIO_RENDEZVOUS", me, v, host)
				}
			}
			info.Rendezvous = net.JoinHostPort(host, strconv.Itoa(info.Port))
			info.RendezvousFrom = "first host of " + v
			break
		}
	}
	return info, nil
}

// inSlurmStep tells a task of an srun step from the batch script, which has
// SLURM_PROCID=0 and SLURM_NTASKS too but is one process.
func inSlurmStep(get func(string) string) bool {
	if get("SLURM_STEP_NUM_TASKS") != "" {
		return true
	}
	id := firstOf(get, "SLURM_STEP_ID", "SLURM_STEPID")
	n, err := strconv.ParseUint(id, 10, 32)
	return err == nil && n < 0xfffffff0 // the batch and extern steps use ids near 2^32
}

func slurmJob(get func(string) string) string {
	job := firstOf(get, "SLURM_JOB_ID", "SLURM_JOBID")
	if job == "" {
		return ""
	}
	if step := firstOf(get, "SLURM_STEP_ID", "SLURM_STEPID"); step != "" {
		job += "." + step
	}
	return job
}

func firstOf(get func(string) string, vars ...string) string {
	for _, v := range vars {
		if s := get(v); s != "" {
			return s
		}
	}
	return ""
}

func intVar(get func(string) string, name string, lo, hi int) (int, error) {
	s := get(name)
	n, err := strconv.ParseInt(s, 10, 64)
	if errors.Is(err, strconv.ErrRange) {
		return 0, fmt.Errorf("rank: %s=%s is out of range [%d, %d]", name, s, lo, hi)
	}
	if err != nil {
		return 0, fmt.Errorf("rank: %s=%q is not an integer", name, s)
	}
	if n < int64(lo) || n > int64(hi) {
		return 0, fmt.Errorf("rank: %s=%d is out of range [%d, %d]", name, n, lo, hi)
	}
	return int(n), nil
}

func rankSize(get func(string) string, rankVar, sizeVar string) (rank, size int, err error) {
	switch {
	case get(rankVar) == "":
		return 0, 0, fmt.Errorf("rank: %s=%s is set but %s is not", sizeVar, get(sizeVar), rankVar)
	case get(sizeVar) == "":
		return 0, 0, fmt.Errorf("rank: %s=%s is set but %s is not", rankVar, get(rankVar), sizeVar)
	}
	if size, err = intVar(get, sizeVar, 1, MaxSize); err != nil {
		return 0, 0, err
	}
	if rank, err = intVar(get, rankVar, 0, MaxSize); err != nil {
		return 0, 0, err
	}
	if rank >= size {
		return 0, 0, fmt.Errorf("rank: %s=%d is not below %s=%d", rankVar, rank, sizeVar, size)
	}
	return rank, size, nil
}

// local reads the optional local rank and local size variables.
func local(get func(string) string, rankVar, sizeVar string, size int) (lrank, lsize int, err error) {
	lrank, lsize = -1, -1
	if get(sizeVar) != "" {
		if lsize, err = intVar(get, sizeVar, 1, size); err != nil {
			return -1, -1, err
		}
	}
	if get(rankVar) != "" {
		hi := size - 1
		if lsize > 0 {
			hi = lsize - 1
		}
		if lrank, err = intVar(get, rankVar, 0, hi); err != nil {
			return -1, -1, err
		}
	}
	return lrank, lsize, nil
}

// derivedPort maps a job id to a port in [20000, 30000), below Linux's
// ephemeral range, so that jobs sharing a node rarely pick the same one.
func derivedPort(job string) int {
	h := fnv.New32a()
	h.Write([]byte(job))
	return 20000 + int(h.Sum32()%10000)
}

// withPort returns addr as host:port, adding port when addr has none.
func withPort(addr string, port int) (string, error) {
	if host, p, err := net.SplitHostPort(addr); err == nil {
		if host == "" {
			return "", fmt.Errorf("no host")
		}
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return "", fmt.Errorf("bad port %q", p)
		}
		return addr, nil
	}
	host := strings.TrimSuffix(strings.TrimPrefix(addr, "["), "]")
	if host == "" || strings.ContainsAny(host, " /[]") {
		return "", fmt.Errorf("not a host or host:port")
	}
	return net.JoinHostPort(host, strconv.Itoa(port)), nil
}

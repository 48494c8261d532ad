package fusefs_test

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pario/pario/fusefs"
)

// Ordinary tools against the mount, each in its own process.

func TestCpAndCmpSeveralStripes(t *testing.T) {
	need(t, "cp", "cmp", "stat")
	p := spawn(t)
	m := mount(t, p, fusefs.Options{})
	local := t.TempDir()
	src := filepath.Join(local, "src.dat")
	// 5 MiB and a bit: 80 strips of 64 KiB, 20 full stripes over 4 servers.
	data := randomBytes(t, 5<<20+12345)
	writeFile(t, src, data)
	sh(t, fmt.Sprintf("mkdir %[1]s/in && cp %[2]s %[1]s/in/copy.dat && cmp %[2]s %[1]s/in/copy.dat && cp %[1]s/in/copy.dat %[3]s/back.dat && cmp %[2]s %[3]s/back.dat",
		m.Dir, src, local))
	if got := strings.TrimSpace(sh(t, "stat -c %s "+m.path("in", "copy.dat"))); got != fmt.Sprint(len(data)) {
		t.Fatalf("stat size %s, want %d", got, len(data))
	}
	// It really is striped: every I/O server holds a quarter.
	f, err := m.c.Open(context.Background(), "/in/copy.dat")
	if err != nil {
		t.Fatal(err)
	}
	dfs, err := f.Datafiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, df := range dfs {
		if df.Size < int64(len(data))/4-65536 {
			t.Errorf("datafile %d on %s holds %d bytes", df.Datafile, df.Server.Name, df.Size)
		}
	}
}

func TestDdWithOneMiBBlocks(t *testing.T) {
	need(t, "dd", "cmp")
	p := spawn(t)
	m := mount(t, p, fusefs.Options{})
	local := t.TempDir()
	src := filepath.Join(local, "src.dat")
	writeFile(t, src, randomBytes(t, 24<<20))
	// The read opens the file afresh, so the kernel's cached pages of it
	// are dropped and it reads from the servers.
	sh(t, fmt.Sprintf(`dd if=%[1]s of=%[2]s/dd.dat bs=1M conv=fsync status=none
dd if=%[2]s/dd.dat of=%[3]s/back.dat bs=1M status=none
cmp %[1]s %[3]s/back.dat`, src, m.Dir, local))
	// The kernel sent 1 MiB requests both ways (max_write, read-ahead).
	st := m.Stats()
	if st.MaxWrite != fusefs.MaxIO || st.MaxRead != fusefs.MaxIO {
		t.Errorf("largest requests: write %d, read %d; want %d", st.MaxWrite, st.MaxRead, fusefs.MaxIO)
	}
	if info := mountInfo(m.Dir); !strings.Contains(info, "max_read=1048576") {
		t.Errorf("mount options: %s", info)
	}
}

func TestTarOfATreeAndBack(t *testing.T) {
	need(t, "tar")
	p := spawn(t)
	m := mount(t, p, fusefs.Options{})
	src, back := t.TempDir(), t.TempDir()
	makeTree(t, src)
	// Into the mount, an archive written on the mount, and out again.
	sh(t, fmt.Sprintf(`mkdir %[2]s/tree
tar -C %[1]s -cf - . | tar -C %[2]s/tree -xpf -
tar -C %[2]s/tree -cf %[2]s/tree.tar .
tar -C %[3]s -xpf %[2]s/tree.tar`, src, m.Dir, back))
	sameTree(t, src, m.path("tree"))
	sameDirs(t, src, m.path("tree"))
	sameTree(t, src, back)
	if out := sh(t, fmt.Sprintf("tar -tf %s/tree.tar | wc -l", m.Dir)); strings.TrimSpace(out) == "0" {
		t.Fatal("empty archive")
	}
}

// sameDirs checks what tar restores of directories, and find(1) relies
// on, beyond sameTree: each directory's modification time (to the second,
// as tar keeps it) and link count, which the mount answers itself for
// directories it made (dirtimes.go), and find's walk of the copy.
func sameDirs(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		si, err := os.Stat(p)
		if err != nil {
			return err
		}
		di, err := os.Stat(filepath.Join(dst, rel))
		if err != nil {
			return err
		}
		sl, dl := si.Sys().(*syscall.Stat_t).Nlink, di.Sys().(*syscall.Stat_t).Nlink
		if rel != "." && !si.ModTime().Truncate(time.Second).Equal(di.ModTime().Truncate(time.Second)) || sl != dl {
			t.Errorf("directory %s: mtime %v, %d links; the copy has %v, %d links", rel, si.ModTime(), sl, di.ModTime(), dl)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	find := "find %s -type d -printf '%%P\\n' | sort"
	if a, b := sh(t, fmt.Sprintf(find, src)), sh(t, fmt.Sprintf(find, dst)); a != b {
		t.Errorf("find lists the directories of the source as\n%s\nand of the copy as\n%s", a, b)
	}
}

func TestRsyncOfATreeAndBack(t *testing.T) {
	need(t, "rsync")
	p := spawn(t)
	m := mount(t, p, fusefs.Options{})
	src, back := t.TempDir(), t.TempDir()
	makeTree(t, src)
	sh(t, fmt.Sprintf("rsync -a %s/ %s/r/ && rsync -a %s/r/ %s/", src, m.Dir, m.Dir, back))
	sameTree(t, src, m.path("r"))
	sameTree(t, src, back)
	// Sizes, times and modes survived: a second pass has nothing to do.
	if out := sh(t, fmt.Sprintf("rsync -a -i -n %s/ %s/r/", src, m.Dir)); strings.TrimSpace(out) != "" {
		t.Errorf("rsync would still change:\n%s", out)
	}
	// Changed files are sent again (rsync writes a temporary file and
	// renames it over the old one).
	writeFile(t, filepath.Join(src, "a", "b", "f1-1.dat"), []byte("changed"))
	sh(t, fmt.Sprintf("rsync -a %s/ %s/r/", src, m.Dir))
	if got := readFile(t, m.path("r", "a", "b", "f1-1.dat")); string(got) != "changed" {
		t.Errorf("after a second rsync: %q", got)
	}
}

func TestConcurrentWritersOnDisjointRanges(t *testing.T) {
	need(t, "dd")
	p := spawn(t)
	m := mount(t, p, fusefs.Options{})
	local := t.TempDir()
	const writers, chunk = 4, 3 << 20
	var want []byte
	var cmds []*exec.Cmd
	writeFile(t, m.path("shared.dat"), nil)
	for i := 0; i < writers; i++ {
		part := randomBytes(t, chunk)
		want = append(want, part...)
		src := filepath.Join(local, fmt.Sprintf("part%d", i))
		writeFile(t, src, part)
		// Separate processes, each on its own 3 MiB range, all at once.
		cmd := exec.Command("dd", "if="+src, "of="+m.path("shared.dat"), "bs=64k", fmt.Sprintf("seek=%d", i*chunk/65536), "conv=notrunc", "status=none")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("writer %d: %v", i, err)
		}
	}
	if got := readFile(t, m.path("shared.dat")); !bytes.Equal(got, want) {
		t.Fatalf("shared file: %d bytes, want %d, contents differ", len(got), len(want))
	}
	// The same through the native client.
	f, err := m.c.Open(context.Background(), "/shared.dat")
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(want))
	if _, err := f.ReadAt(got, 0); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("native read: %v, equal %v", err, bytes.Equal(got, want))
	}
}

func TestMrBayesWritesThroughTheMount(t *testing.T) {
	need(t, "mb")
	p := spawn(t)
	m := mount(t, p, fusefs.Options{})
	nex, err := os.ReadFile(filepath.Join("testdata", "mrbayes.nex"))
	if err != nil {
		t.Fatal(err)
	}
	local := t.TempDir()
	onMount := m.path("mb")
	if err := os.Mkdir(onMount, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{local, onMount} {
		writeFile(t, filepath.Join(dir, "run.nex"), nex)
		// mb writes its output next to the input, in its working directory.
		sh(t, fmt.Sprintf("cd %s && mb run.nex > mb.log 2>&1 || { cat mb.log; exit 1; }", dir))
	}
	before := m.Stats().Writes
	// Two runs (nruns=2): their samples of parameters (.p) and trees (.t),
	// and the summaries made from them.
	names := []string{"run.nex.run1.p", "run.nex.run1.t", "run.nex.run2.p", "run.nex.run2.t", "run.nex.con.tre", "run.nex.trprobs"}
	for _, name := range names {
		a, b := readFile(t, filepath.Join(local, name)), readFile(t, filepath.Join(onMount, name))
		if len(a) == 0 || !bytes.Equal(a, b) {
			t.Errorf("%s: %d bytes on local disk, %d on the mount; identical %v", name, len(a), len(b), bytes.Equal(a, b))
		}
	}
	if before == 0 {
		t.Error("no writes went through the mount")
	}
	if log := readFile(t, filepath.Join(onMount, "mb.log")); !bytes.Contains(log, []byte("Analysis completed")) {
		t.Errorf("MrBayes did not complete:\n%s", log)
	}
}

package fusefs

import (
	"os"
	"runtime"
	"slices"
	"syscall"
	"testing"
)

func TestParseGroups(t *testing.T) {
	for _, tc := range []struct {
		line string
		want []uint32
	}{
		{"", nil},
		{"\t", nil},
		{"\t0 4 27 1000 ", []uint32{0, 4, 27, 1000}},
		{" 4294967295 x 4294967296 -1 5", []uint32{4294967295, 5}},
	} {
		if got := parseGroups(tc.line); !slices.Equal(got, tc.want) {
			t.Errorf("parseGroups(%q) = %v, want %v", tc.line, got, tc.want)
		}
	}
}

// This process's groups read from /proc are what getgroups(2) says, and
// each of its threads belongs to it; a thread that does not exist has no
// groups and is its own process.
func TestProcCaller(t *testing.T) {
	want, err := os.Getgroups()
	if err != nil {
		t.Fatal(err)
	}
	var w []uint32
	for _, g := range want {
		w = append(w, uint32(g))
	}
	if got := procCaller(uint32(os.Getpid())); !slices.Equal(got.groups, w) || got.tgid != uint32(os.Getpid()) {
		t.Errorf("procCaller(self) = %+v, want groups %v, process %d", got, w, os.Getpid())
	}
	// A thread of this process other than the main one.
	tids, read := make(chan int), make(chan struct{})
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
		tids <- syscall.Gettid()
		<-read
	}()
	if tid := <-tids; tid != os.Getpid() {
		if got := procCaller(uint32(tid)); got.tgid != uint32(os.Getpid()) {
			t.Errorf("thread %d's process %d, want %d", tid, got.tgid, os.Getpid())
		}
	}
	close(read)
	if got := procCaller(0); got.groups != nil || got.tgid != 0 {
		t.Errorf("procCaller(0) = %+v, want no groups, process 0", got)
	}
	var cs callers
	if got := cs.lookup(1<<31, 5, 5); got.groups != nil || got.tgid != 1<<31 {
		t.Errorf("no thread = %+v, want no groups and itself as its process", got)
	}
}

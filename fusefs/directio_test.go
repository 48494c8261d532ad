package fusefs

import (
	"syscall"
	"testing"
)

func TestDirectFor(t *testing.T) {
	const (
		rdonly = syscall.O_RDONLY
		wronly = syscall.O_WRONLY
		rdwr   = syscall.O_RDWR
		creat  = syscall.O_CREAT
		trunc  = syscall.O_TRUNC
	)
	tests := []struct {
		policy  DirectIO
		flags   uint32
		joining bool
		mmap    bool // FUSE_DIRECT_IO_ALLOW_MMAP granted
		want    bool
	}{
		{DirectWriters, wronly, false, true, true},
		{DirectWriters, wronly, false, false, true}, // cannot be mapped writable anyway
		{DirectWriters, wronly | creat | trunc, false, false, true},
		{DirectWriters, rdonly, false, true, false},
		{DirectWriters, rdonly, true, true, false},
		{DirectWriters, rdwr | creat, false, true, true},
		{DirectWriters, rdwr | trunc, false, true, true},
		{DirectWriters, rdwr | creat, false, false, false}, // MAP_SHARED must keep working
		{DirectWriters, rdwr, false, true, false},          // an existing file, read and written
		{DirectWriters, rdwr, true, true, true},            // another rank of a shared file
		{DirectWriters, rdwr, true, false, false},
		{DirectWriteOnly, wronly, false, true, true},
		{DirectWriteOnly, rdwr | creat, false, true, false},
		{DirectWriteOnly, rdwr, true, true, false},
		{DirectReadWrite, rdwr, false, true, true},
		{DirectReadWrite, rdwr, false, false, false},
		{DirectReadWrite, rdonly, false, true, false},
		{DirectNone, wronly, false, true, false},
		{DirectNone, rdwr | creat, true, true, false},
	}
	for _, tt := range tests {
		fsys := &fileSystem{opts: Options{DirectIO: tt.policy}}
		fsys.directMmap.Store(tt.mmap)
		if got := fsys.directFor(tt.flags, tt.joining); got != tt.want {
			t.Errorf("%v: flags %#o joining %v mmap %v: direct %v, want %v", tt.policy, tt.flags, tt.joining, tt.mmap, got, tt.want)
		}
	}
}

func TestParseDirectIO(t *testing.T) {
	for _, d := range []DirectIO{DirectWriters, DirectWriteOnly, DirectReadWrite, DirectNone} {
		got, err := ParseDirectIO(d.String())
		if err != nil || got != d {
			t.Errorf("ParseDirectIO(%q) = %v, %v", d.String(), got, err)
		}
	}
	for _, s := range []string{"", "all", "Writers", "direct"} {
		if _, err := ParseDirectIO(s); err == nil {
			t.Errorf("ParseDirectIO(%q) succeeded", s)
		}
	}
}

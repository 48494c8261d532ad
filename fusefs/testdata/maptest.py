# Maps a file it creates O_RDWR|O_CREAT on a pario mount, MAP_SHARED and MAP_PRIVATE, and checks
# what the mapping, another descriptor and later writes see. Run by TestReadWriteDescriptors in a
# process of its own: a process that faults on a mapping of a file served by a FUSE mount in the
# same process can deadlock (the fault holds the address space while the server allocates).
# Usage: python3 maptest.py DIR. Leaves DIR/shared.map and, what it should hold, DIR/shared.want,
# for the Go test to compare (also through the pario client).
import mmap, os, sys

d = sys.argv[1]
size = 3 * 2**20 + 123
p = os.path.join(d, "shared.map")
want = bytearray(os.urandom(size))
fd = os.open(p, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
os.pwrite(fd, want, 0)
m = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
if m[:] != want:
    sys.exit("the mapping differs from what was written through the descriptor")
for off in (0, 65535, 2**20, size - 1):
    m[off] ^= 0xFF
    want[off] ^= 0xFF
m[2**21 : 2**21 + 6000] = b"mapped" * 1000
want[2**21 : 2**21 + 6000] = b"mapped" * 1000
m.flush()  # msync(MS_SYNC)
with open(p, "rb") as f:
    if f.read() != want:
        sys.exit("another descriptor reads other data than the mapping's")
if os.pread(fd, size, 0) != want:
    sys.exit("the mapped descriptor reads other data than the mapping's")
fresh = b"written through the descriptor"
os.pwrite(fd, fresh, 4096 + 100)
want[4096 + 100 : 4096 + 100 + len(fresh)] = fresh
if m[4096 + 100 : 4096 + 100 + len(fresh)] != fresh:
    sys.exit("the mapping does not show a write through the descriptor")
other = os.open(p, os.O_RDWR)
os.pwrite(other, fresh, 2**20 + 7)
os.fsync(other)
want[2**20 + 7 : 2**20 + 7 + len(fresh)] = fresh
if m[2**20 + 7 : 2**20 + 7 + len(fresh)] != fresh:
    sys.exit("the mapping does not show a write through another descriptor")
os.close(other)
m.close()

# MAP_PRIVATE: stores stay in the mapping.
pm = mmap.mmap(fd, size, mmap.MAP_PRIVATE, mmap.PROT_READ | mmap.PROT_WRITE)
if pm[:] != want:
    sys.exit("the private mapping differs from the file")
pm[1000:1007] = b"private"
pm.close()
os.fsync(fd)
os.close(fd)
with open(os.path.join(d, "shared.want"), "wb") as f:
    f.write(want)

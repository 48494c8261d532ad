// Package fusefs mounts a pario cluster as a POSIX file system with FUSE
// (github.com/hanwen/go-fuse/v2), so that unmodified programs (MrBayes,
// BLAST, IOR, cp, tar, rsync) read and write striped pario files.
//
// Each FUSE request becomes client calls: namespace operations go to the
// metadata server, data goes straight to the I/O servers through a shared
// client.File per open file, split by the file's distribution exactly as
// the native client splits it. The kernel sends reads and writes of up to
// 1 MiB (max_write).
//
// # Consistency
//
// Close-to-open, as NFS: what one mount closed, another sees at its next
// open. write(2) returns once the data is copied into the mount; up to
// Options.WriteBehind bytes per open file are then on their way to the I/O
// servers, and close(2) and fsync(2) wait for them and return the first
// failure (as does the next write). close(2) records the modification
// time; fsync(2) makes the data durable. open(2) reads the file's
// attributes afresh and the kernel drops its cached pages of the file.
// Under a lease from the metadata server (lease.go) the kernel keeps names
// and attributes until the lease ends; the server answers a change only
// after every mount holding a lease has dropped what it contradicts, and a
// mount whose lease lapses stops caching. Sizes changed by writes through
// another client show at that writer's close or fsync. Without a lease
// (Options.NoLease) attributes are not cached and names are looked up at
// every open and stat, directory names kept for Options.EntryTimeout.
//
// Write-only descriptors bypass the page cache (FOPEN_DIRECT_IO); reading
// descriptors use it, with a read-ahead of 4 MiB.
//
// # Unlink of an open file
//
// Removing (or renaming over) a file that is open through this mount
// removes its name from the metadata server at once, but keeps its
// datafiles until the last descriptor on it is closed here: the open
// descriptors keep reading and writing the data, fstat still works, and
// the last release deletes the datafiles. If the mount dies first, the
// datafiles stay behind as orphans (as when an I/O server is down during a
// remove). Other mounts that have the file open see it vanish.
//
// # What the store cannot do
//
// Extended attributes other than those below are not supported (hard and
// symbolic links are in link.go).
//
// # Owners and permissions
//
// Every request acts for its caller: the uid and gid of the FUSE request
// and the caller's supplementary groups (cred.go) go with each metadata
// request, and the metadata server checks them against the stored owner,
// group and mode (docs/mount.md says what a second user can do).
//
// # Extended attributes
//
//	user.pario.layout   a file's layout (distribution and parameters), or a
//	                    directory's default layout for new files; settable on
//	                    a directory, or on a file that holds no data yet;
//	                    removing it from a directory clears the default
//	user.pario.servers  read-only: the I/O server of each datafile, in order
package fusefs

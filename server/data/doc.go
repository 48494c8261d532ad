// Package data is pario's I/O server: it keeps, under one data directory,
// the datafiles that hold the stripes of pario files placed on this server,
// and serves reads and writes of them to clients.
//
// # Datafiles
//
// Every pario file striped over this server has exactly one local file here,
// its datafile, named only by a uint64 id (the file's meta.FileID). A
// datafile is a plain sparse file holding the file's bytes for this server in
// the distribution's local (datafile) offsets. Only [Store.Create] and
// [Store.CreateBatch] make a datafile, exclusively (EEXIST if it exists),
// when the metadata server creates or unstuffs the file or fills a pool;
// reads, writes, truncates, sizes and syncs of a datafile that does not
// exist fail with ESTALE ([ErrStale]), so a write racing with the file's
// removal cannot bring it back and a read of a removed file is not taken
// for a read of an empty one.
//
// A datafile starts unwritten: a record in DIR/UNWRITTEN, not a file,
// until its first write or truncate makes the file (see unwritten.go for
// why and how the log is kept).
//
// # Cluster incarnation
//
// The first metadata server to claim the directory ([Store.Claim]) records
// its cluster incarnation, a random 64-bit number made with its database,
// in DIR/INCARNATION. A claim from another incarnation is refused while
// datafiles exist (unless the metadata server says to adopt them), and a
// directory with datafiles but no record refuses every datafile operation
// until claimed. Creates carry the incarnation and are refused for any
// other. A claim answers the highest datafile ID held, so the metadata
// server hands out only larger ones.
//
// # On-disk layout
//
// The data directory handed to [Open] looks like this:
//
//	DIR/
//	  LOCK                      flock(LOCK_EX) held while a Store is open;
//	                            holds the pid of the owning server
//	  INCARNATION               the cluster incarnation, 16 hex digits
//	  UNWRITTEN                 log of datafiles made but never written
//	  df/                       datafiles, sharded by the low byte of the id
//	    00/ … ff/               256 shard directories, created by Open
//	      00000000000001ab      datafile of id 0x1ab lives in df/ab/
//
// A datafile's path is derived from its id only: "df/" + two lower-case hex
// digits of id&0xff + "/" + sixteen lower-case hex digits of id, e.g. id
// 0x1ab is "df/ab/00000000000001ab". Sharding keeps directories small (a
// million datafiles make ~4k entries per shard) and lets a datafile's
// creation be made durable by fsyncing only its shard directory.
//
// # Listing
//
// [Store.List] (op list) pages through every datafile (id, size, mtime) in
// shard order, one shard directory read at a time, for `pario fsck`.
//
// # Confinement
//
// Every file access goes through a [vfs.FS]: by default [vfs.OS], an
// [os.Root] opened on DIR (and per-shard roots opened from it), so no
// datafile operation can reach anything outside the data directory, even if
// an administrator or an attacker with access to DIR plants symlinks in it:
// os.Root refuses to follow a symlink that leads out of the root. Names are
// built from numbers, never from client-supplied strings. Tests put a
// crashable in-memory file system ([vfs.MemFS]) or a fault-injecting one
// (vfs/errorfs) there instead ([StoreOptions.FS]).
//
// # Durability
//
// Writes go to the page cache. [Store.Sync] makes one datafile durable
// (fdatasync, plus an fsync of its shard directory the first time after the
// datafile was created); [Store.SyncAll] does so for everything written since
// the last sync and is meant for shutdown. A created datafile's directory
// entry becomes durable with its first Sync too: a crash before it may leave
// the file's inode (committed by the metadata server) without the
// datafile, which pario fsck reports. [Open] fsyncs df/ and DIR, so the
// layout is durable before any datafile is created in it. [Store.Remove] is
// not durable by itself: after a crash a removed datafile may come back
// with its last synced contents. A failed Sync, SyncAll or Remove leaves
// everything it did not finish for the next Sync or SyncAll to redo. To keep Sync latency low the store
// starts writeback early (sync_file_range(SYNC_FILE_RANGE_WRITE), like
// pebble's bytes-per-sync) every [StoreOptions.WriteBehind] bytes written to
// a datafile.
package data

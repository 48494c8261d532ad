// Package data is pario's I/O server: it keeps, under one data directory,
// the datafiles that hold the stripes of pario files placed on this server,
// and serves reads and writes of them to clients.
//
// # Datafiles
//
// Every pario file striped over this server has exactly one local file here,
// its datafile, named only by a uint64 id (the file's meta.FileID). A
// datafile is a plain sparse file holding the file's bytes for this server in
// the distribution's local (datafile) offsets. A datafile that was never
// written does not exist on disk and reads as an empty hole; the store
// creates it on the first write or truncate.
//
// # On-disk layout
//
// The data directory handed to [Open] looks like this:
//
//	DIR/
//	  LOCK                      flock(LOCK_EX) held while a Store is open;
//	                            holds the pid of the owning server
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
// the last sync and is meant for shutdown. [Open] fsyncs df/ and DIR, so the
// layout is durable before any datafile is created in it. [Store.Remove] is
// not durable by itself: after a crash a removed datafile may come back
// with its last synced contents. A failed Sync, SyncAll or Remove leaves
// everything it did not finish for the next Sync or SyncAll to redo. To keep Sync latency low the store
// starts writeback early (sync_file_range(SYNC_FILE_RANGE_WRITE), like
// pebble's bytes-per-sync) every [StoreOptions.WriteBehind] bytes written to
// a datafile.
package data

package meta

import (
	"errors"
	"flag"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/pario/pario/dist"
	"github.com/pario/pario/wire"
	"github.com/pario/pario/wire/optest"
)

var updateCorpus = flag.Bool("update-corpus", false, "rewrite testdata/fuzz/FuzzOp* from the op samples")

var (
	sampleFile = Attr{
		ID: 42, Kind: KindFile, Mode: 0o644, Mtime: 1700000000123456789, Ctime: 1700000000987654321, Atime: 1700000000555555555,
		Layout:  dist.Layout{Dist: dist.SimpleStripe, Params: "strip_size=65536", Datafiles: 3},
		Servers: []uint32{2, 0, 1}, Stuffed: true, Size: 5000,
	}
	sampleLink   = Attr{ID: 43, Kind: KindSymlink, Mode: 0o777, Uid: 1000, Gid: 100, Nlink: 1, Target: "../a/b", Mtime: 3, Ctime: 3, Atime: 3}
	sampleDir    = Attr{ID: RootID, Kind: KindDir, Mode: 0o755, Mtime: 1, Ctime: 2}
	sampleLayout = dist.Layout{Dist: dist.SimpleStripe, Params: "strip_size=1048576", Datafiles: 2}
)

// Raw layouts of the argument sections, as the hand-written encoders
// before the op types wrote them.
func rawAttr(a Attr) func(*wire.Enc)   { return func(e *wire.Enc) { e.Blob(encodeAttr(&a)) } }
func rawPath(p string) func(*wire.Enc) { return func(e *wire.Enc) { e.String(p) } }
func rawID(id FileID) func(*wire.Enc)  { return func(e *wire.Enc) { e.U64(uint64(id)) } }
func empty(*wire.Enc)                  {}

// rawCred is the layout of the credentials every path request ends with
// (no watcher).
func rawCred(uid, gid uint32, groups ...uint32) func(*wire.Enc) {
	return func(e *wire.Enc) {
		e.U32(uid)
		e.U32(gid)
		e.Uvarint(uint64(len(groups)))
		for _, g := range groups {
			e.U32(g)
		}
		e.Uvarint(0)
	}
}

// rawCredW is rawCred of a mount's request: its watcher ID last.
func rawCredW(uid, gid uint32, watcher uint64) func(*wire.Enc) {
	return func(e *wire.Enc) {
		e.U32(uid)
		e.U32(gid)
		e.Uvarint(0)
		e.Uvarint(watcher)
	}
}

// then joins raw layouts.
func then(fs ...func(*wire.Enc)) func(*wire.Enc) {
	return func(e *wire.Enc) {
		for _, f := range fs {
			f(e)
		}
	}
}

var noCred = rawCred(0, 0)

// rawExpect is the layout of what a path request expects its path to
// resolve to (Expect), just before the credentials.
func rawExpect(dir, to, self FileID) func(*wire.Enc) {
	return func(e *wire.Enc) {
		e.Uvarint(uint64(dir))
		e.Uvarint(uint64(to))
		e.Uvarint(uint64(self))
	}
}

var noExpect = rawExpect(0, 0, 0)

func attrResponses() []optest.Value {
	return []optest.Value{
		optest.V(&AttrResponse{Attr: sampleFile}, rawAttr(sampleFile)),
		optest.V(&AttrResponse{Attr: sampleDir}, rawAttr(sampleDir)),
	}
}

func ptr[T any](v T) *T { return &v }

// opSamples are representative values of every op, each with the layout
// its argument section had before the op types.
var opSamples = []optest.Sample{
	{
		Op:       OpServers.OpInfo,
		Requests: []optest.Value{optest.V(&ServersRequest{}, empty)},
		Responses: []optest.Value{
			optest.V(&ServersResponse{Servers: []ServerInfo{{"data0", "10.0.0.2:7001"}, {"data1", "[::1]:7002"}}, Incarnation: 0xfeed}, func(e *wire.Enc) {
				e.Uvarint(2)
				e.String("data0")
				e.String("10.0.0.2:7001")
				e.String("data1")
				e.String("[::1]:7002")
				e.U64(0xfeed)
			}),
			optest.V(&ServersResponse{}, func(e *wire.Enc) { e.Uvarint(0); e.U64(0) }),
		},
	},
	{
		Op: OpLookup.OpInfo,
		Requests: []optest.Value{
			optest.V(&LookupRequest{Path: "/a/b"}, then(rawPath("/a/b"), noExpect, noCred)),
			optest.V(&LookupRequest{Path: "/a/b", Expect: Expect{Dir: 300}}, then(rawPath("/a/b"), rawExpect(300, 0, 0), noCred)),
			optest.V(&LookupRequest{Path: "/a", Cred: Cred{Uid: 1000, Gid: 100, Groups: []uint32{4, 27}}}, then(rawPath("/a"), noExpect, rawCred(1000, 100, 4, 27))),
		},
		Responses: attrResponses(),
	},
	{
		Op: OpCreate.OpInfo,
		Requests: []optest.Value{
			optest.V(&CreateRequest{Path: "/f", Mode: 0o600, Layout: sampleLayout}, func(e *wire.Enc) {
				e.String("/f")
				e.U32(0o600)
				e.String(sampleLayout.String())
				noExpect(e)
				noCred(e)
			}),
			optest.V(&CreateRequest{Path: "/g", Mode: 0o644, Cred: Cred{Uid: 7, Gid: 8}}, func(e *wire.Enc) { e.String("/g"); e.U32(0o644); e.String(""); noExpect(e); rawCred(7, 8)(e) }),
		},
		Responses: attrResponses(),
	},
	{
		Op:        OpMkdir.OpInfo,
		Requests:  []optest.Value{optest.V(&MkdirRequest{Path: "/d", Mode: 0o750}, func(e *wire.Enc) { e.String("/d"); e.U32(0o750); noExpect(e); noCred(e) })},
		Responses: attrResponses(),
	},
	{
		Op: OpReaddir.OpInfo,
		Requests: []optest.Value{
			optest.V(&ReaddirRequest{Path: "/"}, func(e *wire.Enc) { e.String("/"); e.String(""); e.U32(0); noExpect(e); noCred(e) }),
			optest.V(&ReaddirRequest{Path: "/d", Cookie: "f", Max: 100}, func(e *wire.Enc) { e.String("/d"); e.String("f"); e.U32(100); noExpect(e); noCred(e) }),
		},
		Responses: []optest.Value{
			optest.V(&ReaddirResponse{Entries: []DirEntry{{Name: "d", Attr: sampleDir}, {Name: "f", Attr: sampleFile}}, Next: "f"}, func(e *wire.Enc) {
				e.Uvarint(2)
				e.String("d")
				rawAttr(sampleDir)(e)
				e.String("f")
				rawAttr(sampleFile)(e)
				e.String("f")
			}),
			optest.V(&ReaddirResponse{}, func(e *wire.Enc) { e.Uvarint(0); e.String("") }),
		},
	},
	{
		Op: OpRename.OpInfo,
		Requests: []optest.Value{
			optest.V(&RenameRequest{OldPath: "/a", NewPath: "/b/c"}, func(e *wire.Enc) { e.String("/a"); e.String("/b/c"); noExpect(e); noCred(e); e.Bool(false) }),
			optest.V(&RenameRequest{OldPath: "/a", NewPath: "/b", KeepData: true}, func(e *wire.Enc) { e.String("/a"); e.String("/b"); noExpect(e); noCred(e); e.Bool(true) }),
			optest.V(&RenameRequest{OldPath: "/d/a", NewPath: "/e/b", Expect: Expect{Dir: 5, To: 1 << 40}}, func(e *wire.Enc) {
				e.String("/d/a")
				e.String("/e/b")
				rawExpect(5, 1<<40, 0)(e)
				noCred(e)
				e.Bool(false)
			}),
		},
		Responses: []optest.Value{
			optest.V(&RenameResponse{}, func(e *wire.Enc) { e.Bool(false) }),
			optest.V(&RenameResponse{Replaced: ptr(sampleFile)}, func(e *wire.Enc) { e.Bool(true); rawAttr(sampleFile)(e) }),
		},
	},
	{
		Op: OpRemove.OpInfo,
		Requests: []optest.Value{
			optest.V(&RemoveRequest{Path: "/a"}, then(rawPath("/a"), noExpect, noCred, func(e *wire.Enc) { e.Bool(false) })),
			optest.V(&RemoveRequest{Path: "/a", KeepData: true, Cred: Cred{Uid: 3, Gid: 4, Watcher: 9, Mount: 9}}, then(rawPath("/a"), noExpect, rawCredW(3, 4, 9), func(e *wire.Enc) { e.Bool(true) })),
			// A mount's request that is not the kernel's own change: its
			// watcher ID marked as Mount alone.
			optest.V(&RemoveRequest{Path: "/a", Cred: Cred{Uid: 3, Gid: 4, Mount: 9}}, then(rawPath("/a"), noExpect, rawCredW(3, 4, 9|mountOnly), func(e *wire.Enc) { e.Bool(false) })),
		},
		Responses: attrResponses(),
	},
	{
		Op: OpSetLayout.OpInfo,
		Requests: []optest.Value{
			optest.V(&SetLayoutRequest{Path: "/d", Layout: sampleLayout, FileIsEmpty: true}, func(e *wire.Enc) {
				e.String("/d")
				e.String(sampleLayout.String())
				e.Bool(true)
				noExpect(e)
				noCred(e)
			}),
			optest.V(&SetLayoutRequest{Path: "/d"}, func(e *wire.Enc) { e.String("/d"); e.String(""); e.Bool(false); noExpect(e); noCred(e) }),
		},
		Responses: attrResponses(),
	},
	{
		Op:        OpUnstuff.OpInfo,
		Requests:  []optest.Value{optest.V(&UnstuffRequest{ID: 42}, rawID(42))},
		Responses: attrResponses(),
	},
	{
		Op: OpSetAttr.OpInfo,
		Requests: []optest.Value{
			optest.V(&SetAttrRequest{Path: "/f", AttrChanges: AttrChanges{Mtime: ptr(int64(-5))}}, func(e *wire.Enc) {
				e.String("/f")
				e.Bool(false)
				e.U32(0)
				e.Bool(true)
				e.I64(-5)
				e.Bool(false)
				e.I64(0)
				e.Bool(false)
				e.I64(0)
				e.Bool(false)
				e.Bool(false)
				e.U32(0)
				e.Bool(false)
				e.U32(0)
				e.Bool(false)
				e.Bool(false)
				noExpect(e)
				noCred(e)
			}),
			optest.V(&SetAttrRequest{Path: "/f", AttrChanges: AttrChanges{Mode: ptr(uint32(0o640)), Size: ptr(int64(1 << 40))}}, func(e *wire.Enc) {
				e.String("/f")
				e.Bool(true)
				e.U32(0o640)
				e.Bool(false)
				e.I64(0)
				e.Bool(true)
				e.I64(1 << 40)
				e.Bool(false)
				e.I64(0)
				e.Bool(false)
				e.Bool(false)
				e.U32(0)
				e.Bool(false)
				e.U32(0)
				e.Bool(false)
				e.Bool(false)
				noExpect(e)
				noCred(e)
			}),
			optest.V(&SetAttrRequest{Path: "/f", AttrChanges: AttrChanges{Atime: ptr(int64(1700000000123456789)), Access: true}}, func(e *wire.Enc) {
				e.String("/f")
				e.Bool(false)
				e.U32(0)
				e.Bool(false)
				e.I64(0)
				e.Bool(false)
				e.I64(0)
				e.Bool(true)
				e.I64(1700000000123456789)
				e.Bool(true)
				e.Bool(false)
				e.U32(0)
				e.Bool(false)
				e.U32(0)
				e.Bool(false)
				e.Bool(false)
				noExpect(e)
				noCred(e)
			}),
			optest.V(&SetAttrRequest{Path: "/f", AttrChanges: AttrChanges{Uid: ptr(uint32(1000)), Gid: ptr(uint32(100)), KillPriv: true, Now: true}, Cred: Cred{Uid: 5, Gid: 6, Groups: []uint32{100}}}, func(e *wire.Enc) {
				e.String("/f")
				e.Bool(false)
				e.U32(0)
				e.Bool(false)
				e.I64(0)
				e.Bool(false)
				e.I64(0)
				e.Bool(false)
				e.I64(0)
				e.Bool(false)
				e.Bool(true)
				e.U32(1000)
				e.Bool(true)
				e.U32(100)
				e.Bool(true)
				e.Bool(true)
				noExpect(e)
				rawCred(5, 6, 100)(e)
			}),
		},
		Responses: attrResponses(),
	},
	{
		Op: OpGetByID.OpInfo,
		Requests: []optest.Value{
			optest.V(&GetByIDRequest{ID: 7}, then(rawID(7), func(e *wire.Enc) { e.U32(0) }, noCred)),
			optest.V(&GetByIDRequest{ID: 7, Want: MayRead | MayWrite, Cred: Cred{Uid: 1}}, then(rawID(7), func(e *wire.Enc) { e.U32(6) }, rawCred(1, 0))),
		},
		Responses: attrResponses(),
	},
	{
		Op: OpMknod.OpInfo,
		Requests: []optest.Value{
			optest.V(&MknodRequest{Path: "/fifo", Kind: KindFIFO, Mode: 0o644}, func(e *wire.Enc) {
				e.String("/fifo")
				e.U8(3)
				e.U32(0o644)
				e.U64(0)
				noExpect(e)
				noCred(e)
			}),
			optest.V(&MknodRequest{Path: "/dev/null", Kind: KindCharDev, Mode: 0o666, Rdev: 0x0103}, func(e *wire.Enc) {
				e.String("/dev/null")
				e.U8(5)
				e.U32(0o666)
				e.U64(0x0103)
				noExpect(e)
				noCred(e)
			}),
		},
		Responses: attrResponses(),
	},
	{
		Op: OpSymlink.OpInfo,
		Requests: []optest.Value{
			optest.V(&SymlinkRequest{Target: "../a/b", Path: "/l", Cred: Cred{Uid: 1000, Gid: 100, Groups: []uint32{10}}},
				then(rawPath("../a/b"), rawPath("/l"), noExpect, rawCred(1000, 100, 10))),
		},
		Responses: []optest.Value{
			optest.V(&AttrResponse{Attr: sampleLink}, rawAttr(sampleLink)),
		},
	},
	{
		Op: OpLink.OpInfo,
		Requests: []optest.Value{
			optest.V(&LinkRequest{ID: 42, Path: "/g", Cred: Cred{Uid: 7, Gid: 8}}, then(rawID(42), rawPath("/g"), noExpect, rawCred(7, 8))),
		},
		Responses: attrResponses(),
	},
	{
		Op: OpReadlink.OpInfo,
		Requests: []optest.Value{
			optest.V(&ReadlinkRequest{Path: "/l"}, then(rawPath("/l"), noExpect, noCred)),
			optest.V(&ReadlinkRequest{Path: "/l", Expect: Expect{Self: 9}}, then(rawPath("/l"), rawExpect(0, 0, 9), noCred)),
		},
		Responses: []optest.Value{
			optest.V(&ReadlinkResponse{Target: "../a/b"}, rawPath("../a/b")),
			optest.V(&ReadlinkResponse{Target: ""}, rawPath("")),
		},
	},
	{
		Op:        OpStats.OpInfo,
		Requests:  []optest.Value{optest.V(&StatsRequest{}, empty)},
		Responses: []optest.Value{optest.V(&StatsResponse{Files: 10, Dirs: 3}, func(e *wire.Enc) { e.I64(10); e.I64(3) })},
	},
	{
		Op: OpScan.OpInfo,
		Requests: []optest.Value{
			optest.V(&ScanRequest{Max: 100}, func(e *wire.Enc) { e.Blob(nil); e.U32(100) }),
			optest.V(&ScanRequest{Cookie: []byte{1, 0, 0, 0, 0, 0, 0, 0, 1, 'f'}}, func(e *wire.Enc) { e.Blob([]byte{1, 0, 0, 0, 0, 0, 0, 0, 1, 'f'}); e.U32(0) }),
		},
		Responses: []optest.Value{
			optest.V(&ScanResponse{ScanPage{
				Inodes:  []Attr{sampleDir, sampleFile},
				Dirents: []Dirent{{Parent: RootID, Name: "f", Child: 42}},
				Bad:     []string{"inode 7: meta: corrupt attribute record"},
				Pending: []PendingRemoval{{ID: 40, Servers: []uint32{0, 3}}},
				NextID:  43, Cookie: []byte{0, 0, 0, 0, 0, 0, 0, 0, 42},
				Pooled: []Pooled{{ID: 99, Servers: []uint32{0, 2}}},
			}}, func(e *wire.Enc) {
				e.Uvarint(2)
				rawAttr(sampleDir)(e)
				rawAttr(sampleFile)(e)
				e.Uvarint(1)
				e.U64(1)
				e.String("f")
				e.U64(42)
				e.Uvarint(1)
				e.String("inode 7: meta: corrupt attribute record")
				e.Uvarint(1)
				e.U64(40)
				e.Uvarint(2)
				e.U32(0)
				e.U32(3)
				e.U64(43)
				e.Blob([]byte{0, 0, 0, 0, 0, 0, 0, 0, 42})
				e.Bool(false)
				e.Uvarint(1)
				e.U64(99)
				e.Uvarint(2)
				e.U32(0)
				e.U32(2)
			}),
			optest.V(&ScanResponse{ScanPage{NextID: 2, Done: true}}, func(e *wire.Enc) {
				e.Uvarint(0)
				e.Uvarint(0)
				e.Uvarint(0)
				e.Uvarint(0)
				e.U64(2)
				e.Blob(nil)
				e.Bool(true)
				e.Uvarint(0)
			}),
		},
	},
	{
		Op: OpUnlinkDangling.OpInfo,
		Requests: []optest.Value{optest.V(&UnlinkDanglingRequest{Parent: 5, Name: "gone", Child: 77}, func(e *wire.Enc) {
			e.U64(5)
			e.String("gone")
			e.U64(77)
		})},
		Responses: []optest.Value{optest.V(&UnlinkDanglingResponse{}, empty)},
	},
	{
		Op: OpDelegate.OpInfo,
		Requests: []optest.Value{
			optest.V(&DelegateRequest{Path: "/d", Expect: Expect{Self: 7}, Cred: Cred{Uid: 3, Gid: 4, Mount: 9}}, then(rawPath("/d"), rawExpect(0, 0, 7), rawCredW(3, 4, 9|mountOnly))),
		},
		Responses: []optest.Value{
			optest.V(&DelegateResponse{Attr: sampleDir, Given: true}, then(rawAttr(sampleDir), func(e *wire.Enc) { e.Bool(true) })),
			optest.V(&DelegateResponse{Attr: sampleDir}, then(rawAttr(sampleDir), func(e *wire.Enc) { e.Bool(false) })),
		},
	},
	{
		Op: OpBatch.OpInfo,
		Requests: []optest.Value{
			optest.V(&BatchRequest{Ops: []BatchOp{{Dir: 7, Name: "a", Self: 8}, {Dir: 7, Name: "b", Self: 1 << 40, Rmdir: true}}, Cred: Cred{Uid: 3, Gid: 4, Watcher: 9, Mount: 9}}, func(e *wire.Enc) {
				e.Uvarint(2)
				e.Uvarint(7)
				e.String("a")
				e.Uvarint(8)
				e.U8(0)
				e.Uvarint(7)
				e.String("b")
				e.Uvarint(1 << 40)
				e.U8(1)
				rawCredW(3, 4, 9)(e)
			}),
			optest.V(&BatchRequest{Ops: []BatchOp{
				{Dir: 7, Name: "c", Self: 9, SetAttr: &BatchAttrs{Mode: new(uint32(0o640)), Mtime: new(int64(-5)), Ctime: 1 << 50}},
				{Dir: 7, Name: "d", Self: 10, SetAttr: &BatchAttrs{Atime: new(int64(3)), Ctime: 4}},
			}, Cred: Cred{Uid: 3, Gid: 4, Watcher: 9, Mount: 9}}, func(e *wire.Enc) {
				e.Uvarint(2)
				e.Uvarint(7)
				e.String("c")
				e.Uvarint(9)
				e.U8(2)
				e.U8(1 | 4)
				e.U32(0o640)
				e.I64(-5)
				e.I64(1 << 50)
				e.Uvarint(7)
				e.String("d")
				e.Uvarint(10)
				e.U8(2)
				e.U8(2)
				e.I64(3)
				e.I64(4)
				rawCredW(3, 4, 9)(e)
			}),
			optest.V(&BatchRequest{Ops: []BatchOp{
				{Dir: 7, Name: "n", Self: 11, Owner: 1 << 63, Create: &BatchCreate{Mode: 0o2644, Time: -1}},
				{Self: 12, Owner: 5, Unreserve: true},
			}, Cred: Cred{Uid: 3, Gid: 4, Watcher: 9, Mount: 9}}, func(e *wire.Enc) {
				e.Uvarint(2)
				e.Uvarint(7)
				e.String("n")
				e.Uvarint(11)
				e.U8(3)
				e.U64(1 << 63)
				e.U32(0o2644)
				e.I64(-1)
				e.Uvarint(0)
				e.String("")
				e.Uvarint(12)
				e.U8(4)
				e.U64(5)
				rawCredW(3, 4, 9)(e)
			}),
			optest.V(&BatchRequest{}, func(e *wire.Enc) { e.Uvarint(0); noCred(e) }),
		},
		Responses: []optest.Value{
			optest.V(&BatchResponse{Errs: []error{nil, &BatchError{Errno: syscall.ESTALE, Msg: "replaced"}}}, func(e *wire.Enc) {
				e.Uvarint(2)
				e.U32(0)
				e.U32(uint32(syscall.ESTALE))
				e.String("replaced")
			}),
		},
	},
	{
		Op: OpReserve.OpInfo,
		Requests: []optest.Value{
			optest.V(&ReserveRequest{Path: "/d", Owner: 1<<64 - 1, Count: 16, Expect: Expect{Self: 7}, Cred: Cred{Uid: 3, Gid: 4, Mount: 9}}, then(rawPath("/d"), func(e *wire.Enc) {
				e.U64(1<<64 - 1)
				e.Uvarint(16)
			}, rawExpect(0, 0, 7), rawCredW(3, 4, 9|mountOnly))),
		},
		Responses: []optest.Value{
			optest.V(&ReserveResponse{IDs: ReservedIDs{Layout: sampleFile, Slots: []Slot{{ID: 20, Servers: []uint32{1, 0}}, {ID: 21, Servers: []uint32{0, 1}}}}}, then(func(e *wire.Enc) { e.Bool(true) }, rawAttr(sampleFile), func(e *wire.Enc) {
				e.Uvarint(2)
				e.U64(20)
				e.Uvarint(2)
				e.U32(1)
				e.U32(0)
				e.U64(21)
				e.Uvarint(2)
				e.U32(0)
				e.U32(1)
			})),
		},
	},
	{
		Op: OpMkdirHeld.OpInfo,
		Requests: []optest.Value{
			optest.V(&MkdirHeldRequest{Path: "/d", Mode: 0o755, Owner: 3, Count: 16, Expect: Expect{Dir: 1}, Cred: Cred{Uid: 3, Gid: 4, Watcher: 9, Mount: 9}}, then(rawPath("/d"), func(e *wire.Enc) {
				e.U32(0o755)
				e.U64(3)
				e.Uvarint(16)
			}, rawExpect(1, 0, 0), rawCredW(3, 4, 9))),
		},
		Responses: []optest.Value{
			optest.V(&MkdirHeldResponse{Attr: sampleDir, Given: true, IDs: ReservedIDs{Layout: sampleFile, Slots: []Slot{{ID: 20, Servers: []uint32{1}}}}}, then(rawAttr(sampleDir), func(e *wire.Enc) { e.Bool(true); e.Bool(true) }, rawAttr(sampleFile), func(e *wire.Enc) {
				e.Uvarint(1)
				e.U64(20)
				e.Uvarint(1)
				e.U32(1)
			})),
			optest.V(&MkdirHeldResponse{Attr: sampleDir}, then(rawAttr(sampleDir), func(e *wire.Enc) { e.Bool(false); e.Bool(false); e.Uvarint(0) })),
		},
	},
	{
		Op:        OpSync.OpInfo,
		Requests:  []optest.Value{optest.V(&SyncRequest{}, empty)},
		Responses: []optest.Value{optest.V(&SyncResponse{}, empty)},
	},
	{
		Op: OpWatch.OpInfo,
		Requests: []optest.Value{optest.V(&WatchRequest{Watcher: 3, Acked: 41}, func(e *wire.Enc) {
			e.U64(3)
			e.U64(41)
			e.Bool(false)
		})},
		Responses: []optest.Value{optest.V(&WatchResponse{Watcher: 3, Seq: 42, Lease: Lease, Changes: []Change{{ID: 5}, {ID: 6, Parent: 1, Name: "x"}}}, func(e *wire.Enc) {
			e.U64(3)
			e.U64(42)
			e.U64(uint64(Lease))
			e.Uvarint(2)
			e.U64(5)
			e.U64(0)
			e.String("")
			e.U64(6)
			e.U64(1)
			e.String("x")
		})},
	},
}

func TestOpTable(t *testing.T) {
	optest.CheckTable(t, Ops, OpName, opSamples)
}

func TestOpRoundTrip(t *testing.T) {
	optest.CheckSamples(t, opSamples)
	if *updateCorpus {
		if err := optest.WriteCorpus("testdata/fuzz", opSamples); err != nil {
			t.Fatal(err)
		}
	}
}

func sample(t testing.TB, op wire.OpInfo) optest.Sample { return optest.Find(t, opSamples, op) }

func FuzzOpServers(f *testing.F)   { optest.Fuzz(f, sample(f, OpServers.OpInfo)) }
func FuzzOpLookup(f *testing.F)    { optest.Fuzz(f, sample(f, OpLookup.OpInfo)) }
func FuzzOpCreate(f *testing.F)    { optest.Fuzz(f, sample(f, OpCreate.OpInfo)) }
func FuzzOpMkdir(f *testing.F)     { optest.Fuzz(f, sample(f, OpMkdir.OpInfo)) }
func FuzzOpReaddir(f *testing.F)   { optest.Fuzz(f, sample(f, OpReaddir.OpInfo)) }
func FuzzOpRename(f *testing.F)    { optest.Fuzz(f, sample(f, OpRename.OpInfo)) }
func FuzzOpRemove(f *testing.F)    { optest.Fuzz(f, sample(f, OpRemove.OpInfo)) }
func FuzzOpSetlayout(f *testing.F) { optest.Fuzz(f, sample(f, OpSetLayout.OpInfo)) }
func FuzzOpUnstuff(f *testing.F)   { optest.Fuzz(f, sample(f, OpUnstuff.OpInfo)) }
func FuzzOpSetattr(f *testing.F)   { optest.Fuzz(f, sample(f, OpSetAttr.OpInfo)) }
func FuzzOpGetbyid(f *testing.F)   { optest.Fuzz(f, sample(f, OpGetByID.OpInfo)) }
func FuzzOpStats(f *testing.F)     { optest.Fuzz(f, sample(f, OpStats.OpInfo)) }
func FuzzOpScan(f *testing.F)      { optest.Fuzz(f, sample(f, OpScan.OpInfo)) }
func FuzzOpMknod(f *testing.F)     { optest.Fuzz(f, sample(f, OpMknod.OpInfo)) }
func FuzzOpWatch(f *testing.F)     { optest.Fuzz(f, sample(f, OpWatch.OpInfo)) }
func FuzzOpSymlink(f *testing.F)   { optest.Fuzz(f, sample(f, OpSymlink.OpInfo)) }
func FuzzOpReadlink(f *testing.F)  { optest.Fuzz(f, sample(f, OpReadlink.OpInfo)) }
func FuzzOpLink(f *testing.F)      { optest.Fuzz(f, sample(f, OpLink.OpInfo)) }
func FuzzOpSync(f *testing.F)      { optest.Fuzz(f, sample(f, OpSync.OpInfo)) }
func FuzzOpDelegate(f *testing.F)  { optest.Fuzz(f, sample(f, OpDelegate.OpInfo)) }
func FuzzOpBatch(f *testing.F)     { optest.Fuzz(f, sample(f, OpBatch.OpInfo)) }
func FuzzOpReserve(f *testing.F)   { optest.Fuzz(f, sample(f, OpReserve.OpInfo)) }
func FuzzOpMkdirheld(f *testing.F) { optest.Fuzz(f, sample(f, OpMkdirHeld.OpInfo)) }
func FuzzOpUnlinkdangling(f *testing.F) {
	optest.Fuzz(f, sample(f, OpUnlinkDangling.OpInfo))
}

// The handler answers a request whose arguments do not decode with EINVAL
// naming the op and the field, and changes nothing; an unknown op is ENOSYS.
func TestHandlerBadRequests(t *testing.T) {
	s := openT(t, Options{Servers: 2})
	h := &Handler{Store: s, Servers: []ServerInfo{{"d0", "a:1"}, {"d1", "a:2"}}}
	before := snapshot(t, s)
	for _, tc := range []struct {
		op    wire.OpInfo
		args  func(e *wire.Enc)
		field string
	}{
		{OpCreate.OpInfo, func(e *wire.Enc) { e.String("/f"); e.U32(0o644); e.String("no_such_dist") }, `field "layout"`},
		{OpSetLayout.OpInfo, func(e *wire.Enc) { e.String("/"); e.String(""); e.U8(2) }, `field "file is empty"`},
		{OpRename.OpInfo, func(e *wire.Enc) { e.String("/a") }, `field "new path"`},
		{OpSetAttr.OpInfo, func(e *wire.Enc) {
			e.String("/")
			e.Bool(false)
			e.U32(0)
			e.Bool(false)
			e.I64(0)
			e.Bool(true)
			e.I64(-1)
		}, `field "size": negative`},
		{OpMkdir.OpInfo, func(e *wire.Enc) { e.String("/d"); e.U32(0o755); noExpect(e); noCred(e); e.U8(0) }, "trailing"},
		{OpLookup.OpInfo, func(e *wire.Enc) { e.String("/d"); noExpect(e); e.U32(0); e.U32(0); e.Uvarint(MaxGroups + 1) }, `field "group count"`},
		{OpLookup.OpInfo, func(e *wire.Enc) { e.String("/d"); e.Uvarint(1); e.Uvarint(0) }, `field "expected entry"`},
		{OpServers.OpInfo, func(e *wire.Enc) { e.U8(0) }, "trailing"},
		{OpScan.OpInfo, func(e *wire.Enc) { e.Blob(nil) }, `field "max"`},
		{OpUnlinkDangling.OpInfo, func(e *wire.Enc) { e.U64(1); e.String("x") }, `field "child"`},
		{OpBatch.OpInfo, func(e *wire.Enc) { e.Uvarint(1); e.Uvarint(7); e.String("a"); e.Uvarint(8); e.U8(9) }, `field "kind" at byte 6: unknown batch operation 9`},
		{OpBatch.OpInfo, func(e *wire.Enc) {
			e.Uvarint(1)
			e.Uvarint(7)
			e.String("a")
			e.Uvarint(8)
			e.U8(2)
			e.U8(8)
		}, `field "attributes set" at byte 7: unknown attribute bits 0x8`},
		{OpBatch.OpInfo, func(e *wire.Enc) {
			e.Uvarint(1)
			e.Uvarint(7)
			e.String("a")
			e.Uvarint(8)
			e.U8(2)
			e.U8(1)
			e.U32(0o600)
		}, `field "ctime"`},
		{OpMknod.OpInfo, func(e *wire.Enc) {
			e.String("/f")
			e.U8(2)
			e.U32(0)
			e.U64(0)
			noExpect(e)
			noCred(e)
		}, `field "kind"`},
	} {
		var e wire.Enc
		tc.args(&e)
		_, err := h.ServeWire(t.Context(), &wire.Request{Op: tc.op.Code, Args: e.Bytes()})
		if !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), tc.op.Name+" request: ") || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s with %x: %v, want EINVAL naming the op and %s", tc.op.Name, e.Bytes(), err, tc.field)
		}
	}
	if after := snapshot(t, s); !reflect.DeepEqual(after, before) {
		t.Errorf("bad requests changed the namespace: %v", after)
	}
	if _, err := h.ServeWire(t.Context(), &wire.Request{Op: 99}); !errors.Is(err, syscall.ENOSYS) {
		t.Errorf("unknown op: %v, want ENOSYS", err)
	}
}

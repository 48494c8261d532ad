package data

import (
	"errors"
	"flag"
	"math"
	"strings"
	"syscall"
	"testing"

	"github.com/pario/pario/wire"
	"github.com/pario/pario/wire/optest"
)

var updateCorpus = flag.Bool("update-corpus", false, "rewrite testdata/fuzz/FuzzOp* from the op samples")

// opSamples are representative values of every op, each with the layout
// its argument section had before the op types (raw wire.Enc calls).
var opSamples = []optest.Sample{
	{
		Op: OpWrite.OpInfo,
		Requests: []optest.Value{
			optest.V(&WriteRequest{ID: 0x1ab, Offset: 1 << 40, Origin: 0x9e3779b97f4a7c15}, func(e *wire.Enc) { e.U64(0x1ab); e.I64(1 << 40); e.U64(0x9e3779b97f4a7c15) }),
			optest.V(&WriteRequest{ID: math.MaxUint64}, func(e *wire.Enc) { e.U64(math.MaxUint64); e.I64(0); e.U64(0) }),
		},
		Responses: []optest.Value{optest.V(&WriteResponse{}, func(*wire.Enc) {})},
	},
	{
		Op: OpWriteList.OpInfo,
		Requests: []optest.Value{
			optest.V(&WriteListRequest{ID: 0x1ab, Origin: 3, Ranges: []Range{{Offset: 0, Length: 401}, {Offset: 1 << 40, Length: 7}}},
				func(e *wire.Enc) {
					e.U64(0x1ab)
					e.U64(3)
					e.Uvarint(2)
					e.I64(0)
					e.I64(401)
					e.I64(1 << 40)
					e.I64(7)
				}),
			optest.V(&WriteListRequest{ID: math.MaxUint64}, func(e *wire.Enc) { e.U64(math.MaxUint64); e.U64(0); e.Uvarint(0) }),
		},
		Responses: []optest.Value{optest.V(&WriteResponse{}, func(*wire.Enc) {})},
	},
	{
		Op: OpRead.OpInfo,
		Requests: []optest.Value{
			optest.V(&ReadRequest{ID: 7, Offset: 4096, Length: 1 << 20}, func(e *wire.Enc) { e.U64(7); e.I64(4096); e.I64(1 << 20) }),
			optest.V(&ReadRequest{ID: 1, Length: wire.MaxDataLen}, func(e *wire.Enc) { e.U64(1); e.I64(0); e.I64(wire.MaxDataLen) }),
		},
		Responses: []optest.Value{optest.V(&ReadResponse{}, func(*wire.Enc) {})},
	},
	{
		Op:        OpTruncate.OpInfo,
		Requests:  []optest.Value{optest.V(&TruncateRequest{ID: 9, Size: 12345}, func(e *wire.Enc) { e.U64(9); e.I64(12345) })},
		Responses: []optest.Value{optest.V(&TruncateResponse{}, func(*wire.Enc) {})},
	},
	{
		Op:       OpSize.OpInfo,
		Requests: []optest.Value{optest.V(&SizeRequest{ID: 3}, func(e *wire.Enc) { e.U64(3) })},
		Responses: []optest.Value{
			optest.V(&SizeResponse{Size: 1 << 33, Allocated: 1 << 20}, func(e *wire.Enc) { e.I64(1 << 33); e.I64(1 << 20) }),
			optest.V(&SizeResponse{}, func(e *wire.Enc) { e.I64(0); e.I64(0) }),
		},
	},
	{
		Op: OpUsageBatch.OpInfo,
		Requests: []optest.Value{
			optest.V(&UsageBatchRequest{IDs: []uint64{3, math.MaxUint64}}, func(e *wire.Enc) { e.Uvarint(2); e.U64(3); e.U64(math.MaxUint64) }),
			optest.V(&UsageBatchRequest{}, func(e *wire.Enc) { e.Uvarint(0) }),
		},
		Responses: []optest.Value{
			optest.V(&UsageBatchResponse{Usages: []DatafileUsage{{Size: 1 << 33, Allocated: 1 << 20}, {Errno: syscall.ESTALE}}},
				func(e *wire.Enc) {
					e.Uvarint(2)
					e.U32(0)
					e.I64(1 << 33)
					e.I64(1 << 20)
					e.U32(uint32(syscall.ESTALE))
					e.I64(0)
					e.I64(0)
				}),
			optest.V(&UsageBatchResponse{}, func(e *wire.Enc) { e.Uvarint(0) }),
		},
	},
	{
		Op:        OpSync.OpInfo,
		Requests:  []optest.Value{optest.V(&SyncRequest{ID: 4}, func(e *wire.Enc) { e.U64(4) })},
		Responses: []optest.Value{optest.V(&SyncResponse{}, func(*wire.Enc) {})},
	},
	{
		Op:        OpRemove.OpInfo,
		Requests:  []optest.Value{optest.V(&RemoveRequest{ID: 5, Incarnation: 0xabc}, func(e *wire.Enc) { e.U64(5); e.U64(0xabc) })},
		Responses: []optest.Value{optest.V(&RemoveResponse{}, func(*wire.Enc) {})},
	},
	{
		Op: OpRemoveBatch.OpInfo,
		Requests: []optest.Value{
			optest.V(&RemoveBatchRequest{Incarnation: 0xabc, IDs: []uint64{5, 1 << 40}}, func(e *wire.Enc) { e.U64(0xabc); e.Uvarint(2); e.U64(5); e.U64(1 << 40) }),
			optest.V(&RemoveBatchRequest{Incarnation: 1}, func(e *wire.Enc) { e.U64(1); e.Uvarint(0) }),
		},
		Responses: []optest.Value{optest.V(&RemoveBatchResponse{}, func(*wire.Enc) {})},
	},
	{
		Op:       OpStatfs.OpInfo,
		Requests: []optest.Value{optest.V(&StatfsRequest{}, func(*wire.Enc) {})},
		Responses: []optest.Value{optest.V(&StatfsResponse{Statfs{Total: 1 << 40, Free: 1 << 39, Avail: 1 << 38, Used: 12345, Datafiles: 6, FSID: 0xfeed}},
			func(e *wire.Enc) {
				e.U64(1 << 40)
				e.U64(1 << 39)
				e.U64(1 << 38)
				e.U64(12345)
				e.U64(6)
				e.U64(0xfeed)
			})},
	},
	{
		Op: OpList.OpInfo,
		Requests: []optest.Value{
			optest.V(&ListRequest{}, func(e *wire.Enc) { e.U64(0); e.U32(0) }),
			optest.V(&ListRequest{From: ListPos(0x1ab), Max: 4096}, func(e *wire.Enc) { e.U64(0xab00000000000001); e.U32(4096) }),
		},
		Responses: []optest.Value{
			optest.V(&ListResponse{Datafiles: []DatafileInfo{{ID: 0x100, Size: 1 << 20, Mtime: 1700000000123456789}, {ID: 0x1ab, Mtime: -1}},
				Next: ListPos(0x2ab), Now: 1700000000987654321},
				func(e *wire.Enc) {
					e.Uvarint(2)
					e.U64(0x100)
					e.I64(1 << 20)
					e.I64(1700000000123456789)
					e.U64(0x1ab)
					e.I64(0)
					e.I64(-1)
					e.U64(0xab00000000000002)
					e.Bool(false)
					e.I64(1700000000987654321)
				}),
			optest.V(&ListResponse{Done: true}, func(e *wire.Enc) { e.Uvarint(0); e.U64(0); e.Bool(true); e.I64(0) }),
		},
	},
	{
		Op: OpCreate.OpInfo,
		Requests: []optest.Value{
			optest.V(&CreateRequest{ID: 0x1ab, Incarnation: 0x0123456789abcdef}, func(e *wire.Enc) { e.U64(0x1ab); e.U64(0x0123456789abcdef) }),
			optest.V(&CreateRequest{ID: math.MaxUint64, Incarnation: 1}, func(e *wire.Enc) { e.U64(math.MaxUint64); e.U64(1) }),
		},
		Responses: []optest.Value{optest.V(&CreateResponse{}, func(*wire.Enc) {})},
	},
	{
		Op: OpCreateBatch.OpInfo,
		Requests: []optest.Value{
			optest.V(&CreateBatchRequest{Incarnation: 0x0123456789abcdef, IDs: []uint64{0x100, 0x101}}, func(e *wire.Enc) {
				e.U64(0x0123456789abcdef)
				e.Uvarint(2)
				e.U64(0x100)
				e.U64(0x101)
				e.Bool(false)
			}),
			optest.V(&CreateBatchRequest{Incarnation: 1, IDs: []uint64{7}, RemoveIfEmpty: true}, func(e *wire.Enc) {
				e.U64(1)
				e.Uvarint(1)
				e.U64(7)
				e.Bool(true)
			}),
		},
		Responses: []optest.Value{
			optest.V(&CreateBatchResponse{Kept: []uint64{0x101}}, func(e *wire.Enc) { e.Uvarint(1); e.U64(0x101) }),
			optest.V(&CreateBatchResponse{}, func(e *wire.Enc) { e.Uvarint(0) }),
		},
	},
	{
		Op: OpClaim.OpInfo,
		Requests: []optest.Value{
			optest.V(&ClaimRequest{Incarnation: 0xfedcba9876543210}, func(e *wire.Enc) { e.U64(0xfedcba9876543210); e.U8(0); e.String("") }),
			optest.V(&ClaimRequest{Incarnation: 7, Adopt: AdoptUnrecorded, Name: "data0"}, func(e *wire.Enc) { e.U64(7); e.U8(1); e.String("data0") }),
			optest.V(&ClaimRequest{Incarnation: 8, Adopt: AdoptAny, Name: "io-17"}, func(e *wire.Enc) { e.U64(8); e.U8(2); e.String("io-17") }),
		},
		Responses: []optest.Value{
			optest.V(&ClaimResponse{ClaimResult{MaxID: 0x1ff, Datafiles: 12}}, func(e *wire.Enc) { e.U64(0x1ff); e.U64(12) }),
			optest.V(&ClaimResponse{}, func(e *wire.Enc) { e.U64(0); e.U64(0) }),
		},
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

func FuzzOpWrite(f *testing.F)       { optest.Fuzz(f, sample(f, OpWrite.OpInfo)) }
func FuzzOpWriteList(f *testing.F)   { optest.Fuzz(f, sample(f, OpWriteList.OpInfo)) }
func FuzzOpRead(f *testing.F)        { optest.Fuzz(f, sample(f, OpRead.OpInfo)) }
func FuzzOpTruncate(f *testing.F)    { optest.Fuzz(f, sample(f, OpTruncate.OpInfo)) }
func FuzzOpSize(f *testing.F)        { optest.Fuzz(f, sample(f, OpSize.OpInfo)) }
func FuzzOpSync(f *testing.F)        { optest.Fuzz(f, sample(f, OpSync.OpInfo)) }
func FuzzOpRemove(f *testing.F)      { optest.Fuzz(f, sample(f, OpRemove.OpInfo)) }
func FuzzOpRemoveBatch(f *testing.F) { optest.Fuzz(f, sample(f, OpRemoveBatch.OpInfo)) }
func FuzzOpStatfs(f *testing.F)      { optest.Fuzz(f, sample(f, OpStatfs.OpInfo)) }
func FuzzOpList(f *testing.F)        { optest.Fuzz(f, sample(f, OpList.OpInfo)) }
func FuzzOpCreate(f *testing.F)      { optest.Fuzz(f, sample(f, OpCreate.OpInfo)) }
func FuzzOpClaim(f *testing.F)       { optest.Fuzz(f, sample(f, OpClaim.OpInfo)) }
func FuzzOpCreateBatch(f *testing.F) { optest.Fuzz(f, sample(f, OpCreateBatch.OpInfo)) }
func FuzzOpUsageBatch(f *testing.F)  { optest.Fuzz(f, sample(f, OpUsageBatch.OpInfo)) }

// The handler answers a request whose arguments do not decode with EINVAL
// naming the op and the field, and executes nothing; an unknown op is
// ENOSYS.
func TestHandlerBadRequests(t *testing.T) {
	s := openStore(t, StoreOptions{})
	h := &Handler{Store: s}
	id := func(e *wire.Enc) { e.U64(9) }
	for _, tc := range []struct {
		op    wire.OpInfo
		args  func(e *wire.Enc)
		field string
	}{
		{OpWrite.OpInfo, id, `"offset"`},
		{OpWrite.OpInfo, func(e *wire.Enc) { id(e); e.I64(-1) }, `"offset": negative value -1`},
		{OpRead.OpInfo, func(e *wire.Enc) { id(e); e.I64(0); e.I64(wire.MaxDataLen + 1) }, `"length": read of`},
		{OpTruncate.OpInfo, func(e *wire.Enc) { id(e); e.I64(-5) }, `"size": negative value -5`},
		{OpSize.OpInfo, func(e *wire.Enc) { id(e); e.U8(0) }, "trailing"},
		{OpSync.OpInfo, func(*wire.Enc) {}, `"id"`},
		{OpUsageBatch.OpInfo, func(e *wire.Enc) { e.Uvarint(MaxUsageBatch + 1) }, `"id count"`},
		{OpUsageBatch.OpInfo, func(e *wire.Enc) { e.Uvarint(2); e.U64(9) }, `"id"`},
		{OpRemove.OpInfo, func(e *wire.Enc) { e.U32(9) }, `"id"`},
		{OpRemove.OpInfo, id, `"incarnation"`},
		{OpStatfs.OpInfo, func(e *wire.Enc) { e.U8(1) }, "trailing"},
		{OpList.OpInfo, func(e *wire.Enc) { e.U64(0) }, `"max"`},
		{OpCreate.OpInfo, id, `"incarnation"`},
		{OpClaim.OpInfo, func(e *wire.Enc) { e.U64(7); e.U8(3); e.String("") }, `"adopt": unknown value 3`},
		{OpClaim.OpInfo, func(e *wire.Enc) { e.U64(7); e.U8(0) }, `"name"`},
		{OpCreateBatch.OpInfo, func(e *wire.Enc) { e.U64(1); e.Uvarint(MaxBatch + 1) }, `"id count"`},
		{OpWrite.OpInfo, func(e *wire.Enc) { id(e); e.I64(0) }, `"origin"`},
		{OpWriteList.OpInfo, id, `"origin"`},
		{OpWriteList.OpInfo, func(e *wire.Enc) { id(e); e.U64(0); e.Uvarint(1); e.I64(0); e.I64(5) }, "ranges of 5 bytes or more for 1 bytes"},
		{OpWriteList.OpInfo, func(e *wire.Enc) { id(e); e.U64(0); e.Uvarint(1); e.I64(-1); e.I64(1) }, `"range offset": negative value -1`},
		{OpWriteList.OpInfo, func(e *wire.Enc) { id(e); e.U64(0); e.Uvarint(MaxWriteRanges + 1) }, `"range count"`},
	} {
		var e wire.Enc
		tc.args(&e)
		_, err := h.ServeWire(ctx, &wire.Request{Op: tc.op.Code, Args: e.Bytes(), Data: []byte("x")})
		if !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), tc.op.Name+" request: ") || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s with %x: %v, want EINVAL naming the op and %s", tc.op.Name, e.Bytes(), err, tc.field)
		}
	}
	if st, err := s.Statfs(ctx); err != nil || st.Datafiles != 0 {
		t.Errorf("after bad requests: %+v, %v; want no datafile", st, err)
	}
	if _, err := h.ServeWire(ctx, &wire.Request{Op: 99}); !errors.Is(err, syscall.ENOSYS) {
		t.Errorf("unknown op: %v, want ENOSYS", err)
	}
}

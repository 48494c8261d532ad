package data

// Operation codes of the I/O server protocol. Arguments are encoded with
// wire.Enc in the order listed; "data" is the frame's bulk section.
const (
	OpWrite    uint8 = 1 // id u64, off i64; data: the bytes           -> (nothing)
	OpRead     uint8 = 2 // id u64, off i64, len i64                   -> data: up to len bytes (short at the datafile's end)
	OpTruncate uint8 = 3 // id u64, size i64                           -> (nothing)
	OpSize     uint8 = 4 // id u64                                     -> size i64
	OpSync     uint8 = 5 // id u64                                     -> (nothing)
	OpRemove   uint8 = 6 // id u64                                     -> (nothing)
	OpStatfs   uint8 = 7 // (nothing)                                  -> total, free, avail, used, datafiles u64
)

// OpName names an operation for logs and errors.
func OpName(op uint8) string {
	switch op {
	case OpWrite:
		return "write"
	case OpRead:
		return "read"
	case OpTruncate:
		return "truncate"
	case OpSize:
		return "size"
	case OpSync:
		return "sync"
	case OpRemove:
		return "remove"
	case OpStatfs:
		return "statfs"
	}
	return "unknown"
}

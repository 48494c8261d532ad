// Package results is the tuner's results database: every evaluation of a
// search (a simulation, a model evaluation or a real benchmark run) is
// stored under its system, its objective and its parameters, so that a
// parameter set is never evaluated twice (paper section IV: "previous
// search results and sets of parameters are stored in a database, so that
// the search process can avoid redoing the test for an existing result").
//
// A [Store] is one bbolt file. [Store.Cached] wraps a search.Objective so
// that it answers from the store when it can and records what it has to
// evaluate; it counts hits and misses. Because searches are deterministic
// for a seed (package tune/search), running a search again with the same
// seed against the same database evaluates nothing new, and a search that
// was interrupted (its context cancelled, the process killed) and is run
// again replays the recorded part from the database and carries on where it
// stopped.
//
// # Schema (format version 1)
//
// Bucket "meta": key "format" = FormatVersion as 8 bytes big-endian.
//
// Bucket "results": key = [Key.Encode]: version byte, system, objective,
// then the parameters sorted by name (strings are uvarint-length-prefixed,
// values zig-zag varints), so that a key is canonical whatever the order of
// the dimensions, and the keys of one system (or of one system and
// objective) are contiguous. Value = version byte, the float64 value as 8
// bytes big-endian, time (unix ns, varint), duration (ns, varint), source
// (length-prefixed string). Both decoders reject unknown versions,
// truncation, trailing bytes and non-canonical input with an error and never
// panic (see FuzzDecodeKey and FuzzDecodeRecord).
//
// # Errors
//
// Open names the path and says what is wrong with a file it cannot use: a
// directory, a file that cannot be read, a file that is not a bbolt
// database, a damaged one (Open reads and decodes every record, so damage
// shows at Open rather than in the middle of a search), a bbolt database of
// another kind, an unknown format version, or a file locked by another
// process. bbolt panics on some damaged pages and faults through its memory
// map on others; the store turns both into errors (runtime/debug's
// SetPanicOnFault around every transaction), so a damaged file never
// crashes the process (TestDamagedFiles). One residue: when the damage trips
// bbolt inside bbolt.Open itself (a broken free list), bbolt's memory map of
// the file cannot be released, and the file stays locked for the rest of
// the process; a later Open of it in the same process says it is locked.
package results

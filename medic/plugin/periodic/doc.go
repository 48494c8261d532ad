// Package periodic is the medic plugin for periodic event traces (the
// ParaMEDIC MPE/CLOG2 plugin).
//
// A trace is a text stream of timestamped communication events, one per
// line, merged across ranks in time order (the shape of an MPE CLOG2 log
// after clog2TOslog2-style merging):
//
//	<time> <rank> <event> <peer> <tag> <size>
//
// time is seconds with exactly two decimals ("12.34", no sign, no leading
// zeros but "0.xx"), rank, peer (-1 for none), tag and size decimal integers
// (peer and tag may be negative, -1 meaning none), event a lower-case word (send, recv, barrier,
// allreduce, bcast, compute, io, ...). Fields are separated by one space and
// every line ends in "\n". Parse and Format are inverses on this form.
//
// Encode finds the period of the event sequence: every record is hashed to
// a few ±1 channels, the autocorrelation of those channels is computed
// through the FFT (gonum dsp/fourier; zero-padded, so it is linear, not
// circular), normalised per lag, and the period is the first strong peak of
// that autocorrelation — not the FFT's peak bin, which for real traces is
// often a harmonic. To stay robust when jitter reorders the merged events,
// the score of a lag averages the exact autocorrelation with that of a
// 16-record moving sum. The first period is stored whole; every later record
// is stored as its difference from the same event (rank, event, peer, tag,
// size) nearest to one period earlier: the offset from exactly one period
// (usually 0) and the timestamp difference, itself as the change from the
// previous record's (which absorbs a slow or fast iteration). Events with no
// earlier occurrence (irregular ones) are stored whole. Columns of zigzag
// varints, then zstd. Regeneration is exact: Decode writes the very bytes. Input that is
// not in the canonical form above, or that has no period worth using, is
// still encoded losslessly (a plain zstd or period-less columnar form, the
// smallest wins).
package periodic

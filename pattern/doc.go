// Package pattern generates and analyses the access patterns of the
// IOR-compatible benchmark. It is pure arithmetic: it does no I/O.
//
// # IOR offsets
//
// IOR describes a test with a block size b, a transfer size t, a segment
// count s and a number of tasks (ranks) N. In a shared file the file is a
// sequence of s segments, each holding one block of b bytes per rank in
// rank order; a rank moves its block in b/t transfers of t bytes:
//
//	shared file:       off(r, i, j) = i*N*b + r*b + j*t
//	file per process:  off(r, i, j) = i*b + j*t           (in rank r's own file)
//
// for segment i < s and transfer j < b/t, issued segment by segment, j
// ascending. The aggregate size is b*s*N. [IOR] holds the parameters and
// [IOR.Transfers] yields each rank's calls in IOR's issue order, including
// IOR 4's -C (reorderTasks), -Q (taskPerNodeOffset) and -z (randomOffset)
// semantics (see [IOR.TargetRank]), and the non-IOR extensions DataStart (an
// unaligned container header) and Strided (one call covering many blocks).
//
// # Patterns
//
// Analyze maps every transfer onto the I/O servers through a
// dist.Distribution and classifies the pattern the way the HDF5/NetCDF-4
// thesis (seed 002, chapter 4) does: disjoint (each rank one contiguous
// region) or interleaved (non-contiguous regions), and x-OST (each rank talks
// to exactly x servers over the whole test; all-to-all when every rank talks
// to every server). It counts transfers that straddle strip boundaries,
// computes the store thesis' delta_iox and delta_ioz, and, given link and
// disk rates, a theoretical maximum aggregate bandwidth. Report.Text renders
// the result as tables for `pario bench --analyze`.
//
// # Alignment
//
// HDF5 places a dataset's data (or each chunk) after its header, at an
// address rounded up to the file's alignment (AlignUp); NetCDF-4 never set
// it, so its data started a few KiB in and every strip-sized request
// touched two strips (seed 002, section 5.1). AnalyzeAlignment counts the
// requests that straddle for an address, transfer and strip size;
// AnalyzeShifted analyses a pattern as configured and once a header
// shifts it, because the class changes (1-OST becomes 2-OST) while the
// thesis' name for it does not.
package pattern

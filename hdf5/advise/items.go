package advise

import (
	"fmt"
	"math"
	"strings"

	"github.com/pario/pario/hdf5"
	"github.com/pario/pario/pattern"
	"github.com/pario/pario/units"
)

func size(n int64) string { return units.FormatBytes(n) }

// class is the x-OST class with the pieces (per-datafile requests) one
// call becomes.
func class(r *pattern.Report) string {
	return fmt.Sprintf("%s, %.2f pieces per request", r.Class(), float64(r.Pieces)/float64(max(r.Transfers, 1)))
}

// straddling describes requests of transfer bytes from addr on strips.
func straddling(addr, transfer, strip int64) string {
	// One period of the offsets within a strip gives the exact share; a
	// period whose requests would pass the largest offset is cut there.
	n := max(strip/gcd(transfer, strip), 1)
	n = max(min(n, (math.MaxInt64-addr)/transfer), 1)
	al, err := pattern.AnalyzeAlignment(addr, transfer, strip, n)
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("%.0f%% of requests touch one strip more than their size needs", al.StraddleFraction()*100)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func (ad *Advice) alignmentItem(strip int64) Item {
	a := ad.Access
	it := Item{Topic: "alignment"}
	addr := ad.dataAddr()
	switch {
	case a.stored:
		it.Now = fmt.Sprintf("data at byte %d (read from the file)", addr)
	case a.API == NetCDF4:
		it.Now = fmt.Sprintf("none: NetCDF-4 sets no HDF5 alignment, data at byte %d", addr)
	case a.Alignment == 1:
		it.Now = fmt.Sprintf("none (HDF5's default), data at byte %d", addr)
	default:
		it.Now = fmt.Sprintf("%s, data at byte %d", size(a.Alignment), addr)
	}
	if addr%strip == 0 {
		it.Advice = "keep: the data starts on a strip boundary"
		it.Effect = fmt.Sprintf("now %s; %s", class(ad.Now.Actual), straddling(addr, a.Transfer, a.StripSize))
		return it
	}
	it.Change = true
	if a.API == NetCDF4 {
		it.Advice = fmt.Sprintf("nc_set_alignment(0, %d) before nc_create_par (netCDF >= 4.9.0); IOR: -O setAlignment=%s", strip, units.FormatSize(strip))
	} else {
		it.Advice = fmt.Sprintf("H5Pset_alignment(fapl, 0, %d) on the file access property list; IOR: -O setAlignment=%s", strip, units.FormatSize(strip))
	}
	it.Effect = fmt.Sprintf("now %s, %s; aligned %s, %s. Thesis, NetCDF-4 1-OST: write 477 -> 916 MiB/s, read 495 -> 903, collective write 55 -> 774",
		class(ad.Now.Actual), straddling(addr, a.Transfer, a.StripSize), class(ad.Now.Configured), straddling(0, a.Transfer, a.StripSize))
	return it
}

func (ad *Advice) layoutItem() Item {
	a := ad.Access
	it := Item{Topic: "layout", Now: string(a.Layout)}
	switch {
	case a.Unlimited:
		it.Now = "chunked (an unlimited dimension makes the dataset extendible)"
		it.Advice = fmt.Sprintf("if the %d records are known in advance, make the dimension fixed and the layout contiguous", a.Dims[0])
		it.Effect = "thesis, extendible datasets: HDF5 257.9 MiB/s, NetCDF-4 52.4 MiB/s, far below contiguous"
		it.Change = true
	case a.Layout == Chunked:
		it.Advice = "contiguous, unless the data is compressed (compression needs chunks)"
		it.Effect = "every chunk is an entry of a B-tree HDF5 reads and writes; contiguous data has none"
		it.Change = true
	default:
		it.Advice = "keep: contiguous is the fastest layout"
		it.Effect = "one extent, no chunk index"
	}
	return it
}

func (ad *Advice) chunkItem() Item {
	a := ad.Access
	it := Item{Topic: "chunk shape"}
	extent := a.Dims
	chunk := a.Chunk
	if chunk == nil {
		// Only NetCDF-4 gets here (HDF5 needs a shape): its default.
		dims := make([]hdf5.Dim, len(a.Dims))
		for i, d := range a.Dims {
			dims[i] = hdf5.Dim{Len: d}
		}
		if a.Unlimited {
			dims[0] = hdf5.Dim{Unlimited: true}
		}
		orig, _ := hdf5.DefaultChunks(hdf5.RuleOriginal, dims, ad.Elem, 0)
		fixed, _ := hdf5.DefaultChunks(hdf5.RuleThesis, dims, ad.Elem, 0)
		chunk = orig
		it.Now = fmt.Sprintf("NetCDF-4's default %s (%s per chunk, %d chunks)", FormatDims(orig),
			size(int64(hdf5.ChunkBytes(orig, ad.Elem))), chunkCount(extent, orig))
		if FormatDims(orig) != FormatDims(fixed) {
			it.Now += fmt.Sprintf("; the thesis' rule gives %s (%d chunks)", FormatDims(fixed), chunkCount(extent, fixed))
		}
	} else {
		it.Now = fmt.Sprintf("%s (%s per chunk, %d chunks)", FormatDims(chunk), size(int64(hdf5.ChunkBytes(chunk, ad.Elem))), chunkCount(extent, chunk))
	}
	want := ad.advisedChunk()
	if want == nil {
		it.Advice = "no chunk shape fits one rank's turn as a whole slab; keep chunks at least a strip and inside one rank's part"
		return it
	}
	it.Advice = fmt.Sprintf("%s: one rank's turn of %s, so every chunk is written by one rank (disjoint) and is whole strips", FormatDims(want), size(ad.IOR.Block))
	it.Change = FormatDims(want) != FormatDims(chunk)
	if !it.Change {
		it.Advice = "keep: " + it.Advice
	}
	it.Effect = fmt.Sprintf("%d chunks -> %d (B-tree entries; halving the chunk doubles them). Thesis: small chunks slow writes most; an unlimited-only NetCDF-4 variable with 1-element chunks wrote at 0.01 MiB/s, 746 MiB/s with the thesis' rule",
		chunkCount(extent, chunk), chunkCount(extent, want))
	return it
}

func chunkCount(extent, chunk []uint64) uint64 {
	n, err := hdf5.ChunkCount(extent, chunk)
	if err != nil {
		return 0
	}
	return n
}

// advisedChunk is a slab of one rank's turn: the trailing dimensions whole
// as far as they fit, then a part of the next one. nil when the turn is
// not such a slab.
func (ad *Advice) advisedChunk() []uint64 {
	dims := ad.Access.Dims
	elems := uint64(ad.IOR.Block) / ad.Elem
	chunk := make([]uint64, len(dims))
	for i := range chunk {
		chunk[i] = 1
	}
	left := elems
	for i := len(dims) - 1; i >= 0; i-- {
		switch {
		case left%dims[i] == 0 && i > 0:
			chunk[i] = dims[i]
			left /= dims[i]
		case i == 0 || dims[i]%left == 0:
			if left > dims[i] && !(i == 0 && ad.Access.Unlimited) {
				return nil
			}
			chunk[i] = left
			return chunk
		default:
			return nil
		}
	}
	return chunk
}

func (ad *Advice) fillItem() Item {
	a := ad.Access
	it := Item{Topic: "fill values"}
	how := "H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER); IOR: -O noFill"
	if a.API == NetCDF4 {
		how = "nc_def_var_fill(ncid, varid, NC_NOFILL, NULL); IOR: -O noFill"
	}
	now := func(s string) string {
		if a.fillFrom != "" {
			return s + " (" + a.fillFrom + ")"
		}
		return s
	}
	if !a.Fill {
		it.Now, it.Advice = now("off"), "keep off"
		it.Effect = "each byte is written once"
		return it
	}
	it.Now, it.Advice, it.Change = now("on"), "off: "+how, true
	measure := "pario bench -a HDF5 --hdf5.fill against --hdf5.nofill"
	if a.API == NetCDF4 {
		measure = "pario bench -a NC4 against -a NC4 --nc4.nofill"
	}
	it.Effect = fmt.Sprintf("fill writes the %s once more at allocation (2x the bytes); the thesis expects about half the write speed (unmeasured there; %s measures it)", size(ad.Bytes), measure)
	return it
}

func (ad *Advice) modeItem() Item {
	a := ad.Access
	it := Item{Topic: "I/O mode", Now: "independent"}
	if a.Collective {
		it.Now = "collective"
	}
	collective := ad.chunked()
	var why string
	if collective {
		it.Advice = "collective (H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE) / nc_var_par_access(NC_COLLECTIVE); IOR -c)"
		why = "chunked: the thesis saw widely varying independent rates; collective with the disjoint pattern and large chunks was best"
	} else {
		it.Advice = "independent (IOR without -c)"
		why = fmt.Sprintf("contiguous and %s: collective adds a file view and synchronisation per call; thesis, HDF5 1-OST: independent beat collective", ad.Then.Actual.Class())
	}
	it.Change = collective != a.Collective
	if !it.Change {
		it.Advice = "keep " + it.Advice
	}
	it.Effect = why
	if a.Unlimited && a.API == NetCDF4 {
		it.Effect += "; extending the unlimited dimension is collective whatever the mode"
	}
	return it
}

func (ad *Advice) transferItem(strip int64) Item {
	a := ad.Access
	it := Item{Topic: "transfer size", Now: units.FormatSize(a.Transfer)}
	t := ad.advisedTransfer(strip)
	switch {
	case t != a.Transfer:
		it.Advice = fmt.Sprintf("%s: a multiple of the %s strip", units.FormatSize(t), units.FormatSize(strip))
		it.Change = true
	case a.Transfer < strip:
		it.Advice = fmt.Sprintf("keep %s or raise it to a multiple of the %s strip, if the rank's turn allows", units.FormatSize(a.Transfer), units.FormatSize(strip))
	default:
		it.Advice = "keep: a multiple of the strip; larger is better"
	}
	it.Effect = fmt.Sprintf("aligned data, %s: %s. Thesis: 128 and 256 KiB transfers were slow, reads kept rising up to 512 MiB",
		units.FormatSize(t), straddling(0, t, strip))
	return it
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func (ad *Advice) stripingItem(strip int64, count int) Item {
	a := ad.Access
	it := Item{Topic: "striping",
		Now:    fmt.Sprintf("strip %s over %s", units.FormatSize(a.StripSize), plural(a.StripeCount, "datafile", "datafiles")),
		Advice: fmt.Sprintf("strip %s over %s: pario layout set DIR %s", units.FormatSize(strip), plural(count, "datafile", "datafiles"), ad.Layout),
	}
	it.Change = strip != a.StripSize || count != a.StripeCount
	if !it.Change {
		it.Advice = "keep " + it.Advice
	}
	it.Effect = fmt.Sprintf("now %s; advised (aligned) %s. Thesis, 10 OSTs: 1-OST fastest, near the link limit; POSIX write disjoint 782.6 vs 2-OST 499.9 MiB/s, HDF5 collective 773.0 vs 122.1",
		class(ad.Now.Actual), class(ad.Then.Actual))
	return it
}

// reductionItem shows finding 3 on the records this program writes: the
// ranks agree on the new length with MPI_Allreduce(MAX).
func (ad *Advice) reductionItem() Item {
	a := ad.Access
	n := a.Dims[0]
	lengths := []uint64{n}
	for r := 1; r < a.Ranks && r < 4; r++ {
		lengths = append(lengths, n/uint64(r+1))
	}
	var parts []string
	wrong := false
	for _, red := range []hdf5.Reduction{hdf5.ReduceInt32, hdf5.ReduceUint32, hdf5.ReduceUint64} {
		got, _ := hdf5.ReduceMax(red, lengths)
		parts = append(parts, fmt.Sprintf("%v %d", red, got))
		wrong = wrong || got != n
	}
	it := Item{Topic: "dimension length", Now: fmt.Sprintf("%d records", n)}
	if wrong {
		it.Advice = "use a netCDF that reduces lengths in 64 bits (MPI_UNSIGNED_LONG_LONG); older ones corrupt the length"
		it.Change = true
	} else {
		it.Advice = "fine: under 2^31 records every reduction is right"
	}
	it.Effect = "agreed length with " + strings.Join(parts, ", ")
	return it
}

package search

// Names of the striping parameters, as dimensions of the Table IV spaces.
// "strip-size" is what Lustre calls the stripe size: the bytes written to
// one target before moving to the next.
const (
	StripeCount  = "stripe-count"
	StripSize    = "strip-size"
	TransferSize = "transfer-size"
	Procs        = "procs"
)

// TableIVSequential returns the dimensions of the paper's search space for
// sequential POSIX I/O (Table IV): stripe count 1-160, strip size and
// transfer size 1 MiB-256 MiB in powers of two; 160 x 9 x 9 = 12,960 points.
func TableIVSequential() []Dim {
	return []Dim{
		{Name: StripeCount, Kind: Int, Min: 1, Max: 160},
		{Name: StripSize, Kind: Pow2, Min: 1 << 20, Max: 256 << 20},
		{Name: TransferSize, Kind: Pow2, Min: 1 << 20, Max: 256 << 20},
	}
}

// TableIVParallel returns the dimensions of the paper's search space for
// parallel POSIX I/O (Table IV): the sequential ones plus the number of I/O
// processes, 1-12K in powers of two and 12,288 (15 values); 194,400 points.
func TableIVParallel() []Dim {
	return append(TableIVSequential(), Dim{Name: Procs, Kind: Pow2, Min: 1, Max: 12 << 10})
}

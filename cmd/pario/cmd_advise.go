package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pario/pario/client"
	"github.com/pario/pario/hdf5/advise"
	"github.com/pario/pario/hdf5/inspect"
	"github.com/pario/pario/units"
)

func newAdviseCommand() *cobra.Command {
	var (
		a             advise.Access
		api, pat, lay string
		dims, chunk   string
		applyTo       string
		file, varName string
	)
	cmd := &cobra.Command{
		Use:   "advise",
		Short: "Best practices for an HDF5 or NetCDF-4 program's writes to a striped directory",
		Long: `Describe how a parallel program writes one HDF5 or NetCDF-4 dataset and how
the target directory is striped; advise prints what the HDF5/NetCDF-4 thesis'
best practices say for it (alignment to the strip, contiguous or chunked and
which chunk shape, fill values off, independent or collective I/O, transfer
size, stripe count and strip size), each with its expected effect: how the
requests land on the strips now and with the advice taken (pattern's x-OST
analysis), beside the thesis' measurements. See docs/hdf5.md.

The dataset is split among the ranks along its first dimension: --pattern
disjoint gives each rank one contiguous part, interleaved makes them take
turns of --block bytes (IOR's segments). Sizes take k, m, g (binary).

  # NetCDF-4, 10 ranks taking 1 MiB turns on 10 servers with 1 MiB strips
  pario advise --api netcdf4 --dims 10240x1048576 --type byte --ranks 10 \
      --pattern interleaved --block 1m --transfer 1m --strip-size 1m --stripe-count 10

  # an unlimited-only NetCDF-4 variable (the default-chunk finding)
  pario advise --api netcdf4 --dims 10485760 --unlimited --type byte --ranks 1 \
      --transfer 1m --strip-size 1m --stripe-count 1

  # an existing file (needs pario built with make build-hdf5); bench writes one
  pario-hdf5 bench -a NC4 -o out.nc -b 16m -t 1m -w -k
  pario-hdf5 advise --file out.nc --var data --ranks 4 --transfer 1m \
      --strip-size 1m --stripe-count 4

  # set the advised layout on a pario directory (needs a running cluster)
  pario mkdir /runs
  pario advise --dims 1024x1024 --type double --ranks 4 --strip-size 64k \
      --stripe-count 4 --apply /runs`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			a.API, a.Pattern, a.Layout = advise.API(api), advise.Pattern(pat), advise.Layout(lay)
			a.TransferDefault = !cmd.Flags().Changed("transfer")
			if cmd.Flags().Changed("header") && a.Header == 0 {
				// advise.Access takes 0 as "the default header".
				return usageError{fmt.Errorf("--header 0: the data of an HDF5 or NetCDF-4 file cannot start at byte 0, where the file's superblock is (leave --header out for the default, %s)", units.FormatSize(advise.DefaultHeader))}
			}
			var err error
			if file != "" {
				if err := adviseFromFile(cmd, &a, file, varName); err != nil {
					return err
				}
			} else {
				if varName != "" {
					return usageError{fmt.Errorf("--var names a dataset of --file")}
				}
				if a.Dims, err = advise.ParseDims("--dims", dims); err != nil {
					return usageError{err}
				}
				if chunk != "" {
					if a.Chunk, err = advise.ParseDims("--chunk", chunk); err != nil {
						return usageError{err}
					}
				}
			}
			ad, err := advise.Advise(a)
			if err != nil {
				return usageError{err}
			}
			if !cmd.Flags().Changed("apply") {
				return ad.WriteText(cmd.OutOrStdout())
			}
			// --apply: the directory is checked before any advice is
			// printed, and the advice is for the cluster it is on: the
			// servers available are the cluster's unless --servers says.
			return withClient(cmd, func(ctx context.Context, c *client.Client) error {
				dir, err := applyDir(ctx, c, applyTo)
				if err != nil {
					return err
				}
				have := len(c.Servers())
				switch {
				case a.Servers > have:
					return usageError{fmt.Errorf("--servers %d: the cluster of --apply %s has %d I/O servers", a.Servers, applyTo, have)}
				case a.StripeCount > have:
					return usageError{fmt.Errorf("--stripe-count %d: the cluster of --apply %s has %d I/O servers", a.StripeCount, applyTo, have)}
				case a.Servers == 0:
					a.Servers = have
					if ad, err = advise.Advise(a); err != nil {
						return usageError{err}
					}
				}
				if err := ad.WriteText(cmd.OutOrStdout()); err != nil {
					return err
				}
				if err := c.SetLayout(ctx, dir, ad.Layout); err != nil {
					return fmt.Errorf("--apply %s: %w", applyTo, err)
				}
				at, err := c.Lookup(ctx, dir)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "applied: %s: %s\n", dir, layoutOf(at))
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&api, "api", "hdf5", "library: hdf5 or netcdf4")
	f.StringVar(&dims, "dims", "", "dataset dimensions in elements, e.g. 1024x1024 (required without --file)")
	f.StringVar(&file, "file", "", "read the dataset (dimensions, type, layout, chunks, fill, data address) from an existing HDF5 or NetCDF-4 file (pario built with make build-hdf5)")
	f.StringVar(&varName, "var", "", "--file: the dataset (NetCDF variable) to advise on, a path in a group: sub/inner (default: the only one)")
	f.BoolVar(&a.Unlimited, "unlimited", false, "the first dimension is unlimited (its --dims length is the records written)")
	f.StringVar(&a.Type, "type", "double", "element type: byte, short, int, float, int64, double")
	f.IntVar(&a.Ranks, "ranks", 1, "number of ranks (MPI processes) writing")
	f.StringVar(&pat, "pattern", "disjoint", "disjoint (one contiguous part per rank) or interleaved (turns of --block)")
	f.Var(units.SizeFlag(&a.Block, units.AllowZero), "block", "interleaved: bytes per rank per turn (default: the transfer size)")
	a.Transfer = 1 << 20
	f.Var(units.SizeFlag(&a.Transfer), "transfer", "bytes per write call")
	f.StringVar(&lay, "layout", "", "contiguous or chunked (default: contiguous, chunked with --unlimited or --chunk)")
	f.StringVar(&chunk, "chunk", "", "chunk shape in elements, e.g. 16x1024 (default: NetCDF-4's rule; HDF5 needs one)")
	f.BoolVar(&a.Collective, "collective", false, "the program uses collective I/O")
	f.BoolVar(&a.Fill, "fill", false, "the program leaves fill values on")
	a.Alignment = 1
	f.Var(units.SizeFlag(&a.Alignment), "alignment", "HDF5 alignment the program sets now (1 = none)")
	f.Var(units.SizeFlag(&a.Header, units.AllowZero), "header", "bytes before the data when unaligned, at least 1 (default 2k)")
	a.StripSize = 1 << 20
	f.Var(units.SizeFlag(&a.StripSize), "strip-size", "the target directory's strip size")
	f.IntVar(&a.StripeCount, "stripe-count", 1, "the target directory's stripe count (datafiles per file)")
	f.IntVar(&a.Servers, "servers", 0, "I/O servers available (default: the stripe count; with --apply, the cluster's)")
	f.StringVar(&applyTo, "apply", "", "set the advised layout as the default of this pario directory (the servers available default to its cluster's)")
	return cmd
}

// adviseFromFile fills a from a dataset of an existing file; the flags
// that describe the dataset conflict with it.
func adviseFromFile(cmd *cobra.Command, a *advise.Access, path, name string) error {
	for _, fl := range []string{"dims", "type", "chunk", "layout", "unlimited", "fill", "api", "alignment", "header"} {
		if cmd.Flags().Changed(fl) {
			return usageError{fmt.Errorf("--%s comes from --file %s; drop it", fl, path)}
		}
	}
	f, err := inspectFile(cmd.Context(), path)
	if err != nil {
		return err
	}
	d, err := f.Find(name)
	if err != nil {
		// The file is fine: --var (or its absence) is wrong.
		if name != "" {
			err = fmt.Errorf("--var: %w", err)
		}
		return usageError{err}
	}
	s := advise.Stored{Path: path, Name: d.Name, NetCDF4: f.NetCDF4, Dims: d.Dims, Unlimited: d.Unlimited,
		ElemSize: d.ElemSize, Class: d.Class, VarString: d.VarString, Layout: d.Layout, Chunk: d.Chunk, Addr: d.Addr, FillTime: d.FillTime, FillValue: d.FillValue}
	if err := advise.FromStored(a, s); err != nil {
		return usageError{err}
	}
	return nil
}

// inspectTimeout bounds how long the HDF5 library may take over a file.
const inspectTimeout = time.Minute

// inspectFile reads path's datasets through the HDF5 library in a child
// process (pario hdf5-inspect). The library does not survive every
// damaged file: 1.10.8 (Debian 12's) dies of a segmentation fault in
// H5F__accum_read on a root group whose local heap is overwritten, as
// h5dump does, and that must end in an error naming the file, not in a
// Go crash report.
func inspectFile(ctx context.Context, path string) (*inspect.File, error) {
	if !inspect.HaveLibrary {
		return inspect.Open(path)
	}
	// A named pipe would hold the child until its timeout.
	if err := inspect.Regular(path); err != nil {
		if errors.Is(err, inspect.ErrNotRegular) {
			return nil, usageError{fmt.Errorf("--file %w", err)}
		}
		if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
			return nil, fmt.Errorf("--file %s: %w", path, pe.Err)
		}
		return nil, err
	}
	// An empty or NetCDF classic file is a mistake in the call, told
	// before the library reads it.
	if err := inspect.Sniff(path); err != nil {
		if errors.Is(err, inspect.ErrNotHDF5) {
			return nil, usageError{fmt.Errorf("--file %w", err)}
		}
		return nil, fmt.Errorf("--file %w", err)
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("%s: find this program to read it: %w", path, err)
	}
	ctx, cancel := context.WithTimeout(ctx, inspectTimeout)
	defer cancel()
	child := exec.CommandContext(ctx, self, "hdf5-inspect", "--", path)
	var out, errOut bytes.Buffer
	child.Stdout, child.Stderr = &out, &errOut
	err = child.Run()
	var ee *exec.ExitError
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return nil, fmt.Errorf("%s: the HDF5 library did not finish reading it in %v (a damaged file?)", path, inspectTimeout)
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case errors.As(err, &ee):
		// An error of the reader is one line, "pario: " and the
		// message, with exit status 1; anything else is a crash.
		msg, ok := strings.CutPrefix(errOut.String(), "pario: ")
		if ee.ExitCode() == 1 && ok && strings.Count(msg, "\n") == 1 {
			return nil, errors.New(strings.TrimSpace(msg))
		}
		first, _, _ := strings.Cut(strings.TrimSpace(errOut.String()), "\n")
		if first == "" {
			first = ee.String()
		}
		return nil, fmt.Errorf("%s: a damaged HDF5 file: the HDF5 library crashed reading it (%s)", path, first)
	case err != nil:
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var f inspect.File
	if err := json.Unmarshal(out.Bytes(), &f); err != nil {
		return nil, fmt.Errorf("%s: reading it: %s hdf5-inspect answered %q: %w", path, self, out.String(), err)
	}
	return &f, nil
}

// newHDF5InspectCommand is inspectFile's child: it prints what the HDF5
// library reads from a file as JSON.
func newHDF5InspectCommand() *cobra.Command {
	return &cobra.Command{
		Use:    "hdf5-inspect FILE",
		Short:  "Print an HDF5 file's datasets as JSON (pario advise --file runs it to keep the library's crashes out)",
		Args:   cobra.ExactArgs(1),
		Hidden: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := inspect.Open(args[0])
			if err != nil {
				return err
			}
			return json.NewEncoder(cmd.OutOrStdout()).Encode(f)
		},
	}
}

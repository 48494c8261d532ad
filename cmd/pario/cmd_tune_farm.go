package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pario/pario/template"
	"github.com/pario/pario/tune/results"
	"github.com/pario/pario/tune/search"
	"github.com/pario/pario/units"
)

// tuneFarmFlags are tune search's flags of --objective farm.
type tuneFarmFlags struct {
	in, annotations string
	groups, ranks   string
	block           int64
	repetitions     int
}

func (tf *tuneFarmFlags) register(f *pflag.FlagSet) {
	f.StringVar(&tf.in, "farm-in", "", "--objective farm: pario farm's input (a local file)")
	f.StringVar(&tf.annotations, "farm-annotations", "", "--objective farm: annotation file (default $"+template.EnvAnnotations+")")
	f.StringVar(&tf.groups, "farm-group", "1:8", "--objective farm: group sizes MIN:MAX (powers of two and both bounds)")
	f.StringVar(&tf.ranks, "farm-ranks", "8", "--objective farm: ranks (-N) of the runs, N or MIN:MAX (powers of two and both bounds)")
	f.Var(units.SizeFlag(&tf.block, units.AllowZero), "farm-block", "--objective farm: pario farm's --block (default its own)")
	f.IntVar(&tf.repetitions, "farm-repetitions", 3, "--objective farm: runs per point (the fastest counts)")
}

// runTuneFarm is tune search --objective farm: argv is the farm's command.
func runTuneFarm(cmd *cobra.Command, tf tuneFarmFlags, argv []string, dbPath, system string) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "pario-tune-farm-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	req := search.FarmRequest{Groups: tf.groups, Ranks: tf.ranks, System: system,
		Farm: search.Farm{Exe: exe, In: tf.in, Annotations: tf.annotations, Argv: argv,
			Block: tf.block, Repetitions: tf.repetitions, Dir: tmp}}
	if err := req.Farm.Validate(); err != nil {
		return usageError{err}
	}
	if _, err := search.FarmSpace(req.Groups, req.Ranks); err != nil {
		return usageError{err}
	}
	if dbPath == "" {
		dbPath = filepath.Join(defaultDataDir(), "tune.db")
	}
	if err := os.MkdirAll(filepath.Dir(dbPath), 0o755); err != nil {
		return err
	}
	store, err := results.Open(dbPath, results.Options{})
	if err != nil {
		return err
	}
	defer store.Close()
	req.Store = store
	rec, err := search.SearchFarm(cmd.Context(), req)
	if err != nil {
		return err
	}
	return search.WriteFarmText(os.Stdout, rec)
}

// farmGroupAuto is --group auto: the group size tune search found fastest.
const farmGroupAuto = -1

// farmGroupFlag is pario farm's --group: a number of ranks, or auto.
type farmGroupFlag struct{ n *int }

func (g farmGroupFlag) String() string {
	if g.n == nil {
		return "0"
	}
	if *g.n == farmGroupAuto {
		return "auto"
	}
	return strconv.Itoa(*g.n)
}

func (g farmGroupFlag) Set(s string) error {
	if s == "auto" {
		*g.n = farmGroupAuto
		return nil
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 0 {
		return fmt.Errorf("%q: want a number of ranks, 0 (one output file) or auto", s)
	}
	*g.n = v
	return nil
}

func (farmGroupFlag) Type() string { return "N|auto" }

// autoFarmGroup is the group size of the fastest stored run of `pario
// tune search --objective farm` with this input, annotations, command and
// block on ranks ranks, from DATA_DIR/tune.db. Every rank reads it (the
// database opened read-only, so they share it) and finds the same.
func autoFarmGroup(ff farmFlags, argv []string, ranks int) (int, error) {
	f := search.Farm{In: ff.in, Annotations: ff.annotations, Argv: argv, Block: ff.block}
	id, err := f.ID()
	if err != nil {
		return 0, fmt.Errorf("farm: --group auto: %w", err)
	}
	db := filepath.Join(defaultDataDir(), "tune.db")
	hint := fmt.Sprintf("run pario tune search --objective farm --farm-in %s --farm-ranks %d ... -- %s first", ff.in, ranks, argv[0])
	if _, err := os.Stat(db); errors.Is(err, os.ErrNotExist) {
		return 0, fmt.Errorf("farm: --group auto: no results database %s: %s", db, hint)
	}
	store, err := results.Open(db, results.Options{ReadOnly: true})
	if err != nil {
		return 0, fmt.Errorf("farm: --group auto: %w", err)
	}
	defer store.Close()
	g, _, ok, err := search.FarmGroupFrom(int64(ranks), func(fn func(search.Params, float64) error) error {
		return store.Each(search.FarmSystem(), id, func(k results.Key, r results.Record) error { return fn(k.Params, r.Value) })
	})
	if err != nil {
		return 0, fmt.Errorf("farm: --group auto: %w", err)
	}
	if !ok {
		return 0, fmt.Errorf("farm: --group auto: %s has no farm search of this input, annotations, command and --block on %d ranks: %s", db, ranks, hint)
	}
	return int(g), nil
}

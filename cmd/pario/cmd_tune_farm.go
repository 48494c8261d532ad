package main

import (
	"os"
	"path/filepath"

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
	defaultRanks    int
	block           int64
	repetitions     int
}

func (tf *tuneFarmFlags) register(f *pflag.FlagSet) {
	f.StringVar(&tf.in, "farm-in", "", "--objective farm: pario farm's input (a local file)")
	f.StringVar(&tf.annotations, "farm-annotations", "", "--objective farm: annotation file (default $"+template.EnvAnnotations+")")
	f.StringVar(&tf.groups, "farm-group", "1:8", "--objective farm: group sizes MIN:MAX (powers of two and both bounds)")
	f.StringVar(&tf.ranks, "farm-ranks", "", "--objective farm: ranks MIN:MAX searched too (default: --farm-n alone)")
	f.IntVar(&tf.defaultRanks, "farm-n", 8, "--objective farm: ranks of every run when --farm-ranks is not given")
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
		Farm: search.Farm{Exe: exe, In: tf.in, Annotations: tf.annotations, Argv: argv, Ranks: tf.defaultRanks,
			Block: tf.block, Repetitions: tf.repetitions, Dir: tmp}}
	if err := req.Farm.Validate(); err != nil {
		return usageError{err}
	}
	if _, err := search.FarmSpace(req.Groups, req.Ranks, req.Farm.Ranks); err != nil {
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

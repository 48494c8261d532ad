// Command pario is the parallel I/O toolkit's single binary: it runs the
// servers of a striped parallel file store (metadata and I/O servers, or a
// whole embedded cluster with `pario up`), and the tools to use it.
//
// One file per command group; each command is a thin shell over the
// packages (cluster, client, dist).
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
)

func main() {
	stopSignals := []os.Signal{os.Interrupt, syscall.SIGTERM}
	// A hangup (the terminal that started pario up closed) stops a
	// command as SIGTERM does: its default action killed the servers
	// without syncing. Under nohup it stays ignored.
	if !signal.Ignored(syscall.SIGHUP) {
		stopSignals = append(stopSignals, syscall.SIGHUP)
	}
	ctx, stop := signal.NotifyContext(context.Background(), stopSignals...)
	// The first Ctrl-C (or SIGTERM) cancels ctx, for the command to stop
	// cleanly; the second is the default one and ends the process, so that
	// a command blocked where it does not look at ctx (a read of a pipe
	// whose writer never writes) can still be stopped.
	context.AfterFunc(ctx, stop)
	cmd, err := newRootCommand().ExecuteContextC(ctx)
	if err == nil {
		// pario GROUP nosuch --help: cobra prints GROUP's help (it
		// looks at --help before the arguments), which helpFor
		// suppressed; the call is as wrong as without --help.
		err = unknownSubcommand(cmd, cmd.Flags().Args())
	}
	stop()
	var es exitStatus
	if errors.As(err, &es) {
		if es.msg != "" {
			fmt.Fprintln(os.Stderr, "pario:", es.msg)
		}
		os.Exit(es.code)
	}
	if err != nil {
		// Errors joined by a command that goes on after a failure (rm A B)
		// print one to a line, each as an error of its own.
		errs := []error{err}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			errs = j.Unwrap()
		}
		for _, e := range errs {
			fmt.Fprintln(os.Stderr, "pario:", e)
		}
		var ue usageError
		if errors.As(err, &ue) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// usageError marks errors in how a command was called (exit status 2).
type usageError struct{ error }

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "pario",
		Short: "pario: a parallel I/O toolkit for cluster computers",
		Long: `pario stores huge files striped over many I/O servers, with the distribution
function (simple_stripe, basic, varstrip, twod_stripe) chosen per file.

Start a cluster on this machine and use it:

  pario up &                        # metadata server + 4 I/O servers on loopback
  pario cp big.dat pario:/big.dat   # copy in (striped over the 4 servers)
  pario viewdist /big.dat           # which server holds how many bytes
  pario cp pario:/big.dat copy.dat  # copy out

Commands find the cluster through --cluster, $PARIO_CLUSTER, or the cluster
file 'pario up' writes into its data directory (default ` + "`~/.local/share/pario`" + `).`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVar(&globalClusterFile, "cluster", "", "cluster file (default $PARIO_CLUSTER, else DATA_DIR/cluster)")
	root.PersistentFlags().StringVar(&globalLogLevel, "log-level", "info", "server log level: debug, info, warn, error")
	// pario mount has an --op-timeout of its own (default 30s), which
	// shadows this one.
	root.PersistentFlags().DurationVar(&globalOpTimeout, "op-timeout", defaultOpTimeout,
		"longest wait for a server in one call, retries included, before a command fails naming it (a hung server); bench -a MPIIO/HDF5/NC4: longest wait for the other ranks after a rank failed, before it ends the MPI job")
	root.PersistentPreRunE = func(*cobra.Command, []string) error { return checkGlobalFlags() }
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(
		newDemoCommand(),
		newUpCommand(), newMetaCommand(), newDataCommand(), newSecretCommand(),
		newCpCommand(), newLsCommand(), newStatCommand(), newMkdirCommand(), newRmCommand(), newMvCommand(),
		newLayoutCommand(), newViewdistCommand(), newDfCommand(),
		newBenchCommand(), newAdviseCommand(), newHDF5InspectCommand(), newTuneCommand(), newMountCommand(), newUmountCommand(),
		newMedicCommand(), newFsckCommand(), newMcmcCommand(), newFarmCommand(),
	)
	usageErrors(root)
	// Help for a command group called with an argument that is none of
	// its subcommands (pario nosuch --help, pario help nosuch) is the
	// usage error the call is without --help, not the group's help.
	help := root.HelpFunc()
	root.SetHelpFunc(func(cmd *cobra.Command, args []string) {
		if unknownSubcommand(cmd, cmd.Flags().Args()) == nil {
			help(cmd, args)
		}
	})
	root.InitDefaultHelpCmd()
	for _, c := range root.Commands() {
		if c.Name() != "help" || c.Run == nil {
			continue
		}
		run := c.Run
		c.Run = nil
		c.RunE = func(c *cobra.Command, args []string) error {
			target, rest, err := c.Root().Find(args)
			if err != nil {
				return usageError{err}
			}
			if err := unknownSubcommand(target, rest); err != nil {
				return err
			}
			run(c, args)
			return nil
		}
	}
	return root
}

// groupAnnotation marks the command groups (commands that only hold
// subcommands) for unknownSubcommand.
const groupAnnotation = "pario-group"

// unknownSubcommand is the usage error of calling command group cmd with
// args, when the first is none of its subcommands; nil for any other
// command or no arguments.
func unknownSubcommand(cmd *cobra.Command, args []string) error {
	if cmd == nil || cmd.Annotations[groupAnnotation] == "" || len(args) == 0 {
		return nil
	}
	return cmd.Args(cmd, args)
}

// argsPassedOnAnnotation marks commands whose arguments are another
// program's command line (pario farm -- awk ” ...): an empty one is that
// program's business, not a path.
const argsPassedOnAnnotation = "pario-args-passed-on"

// noEmptyArgs refuses an empty argument. Every other argument of pario's
// commands names a file, a store path or a layout, and ” names none: as
// a store path it used to mean the root (pario rm -r ” tried to remove
// /, pario mv /f ” moved /f into /), where ls ” and rm ” say "No such
// file or directory".
func noEmptyArgs(args []string) error {
	for i, a := range args {
		if a == "" {
			return usageError{fmt.Errorf("argument %d is empty: '' names no file or path (the store's root is pario:/)", i+1)}
		}
	}
	return nil
}

// usageErrors makes every mistake in how c and its subcommands are called
// a usageError (exit status 2): wrong argument counts, and an unknown
// subcommand of a command group (cobra prints the group's help and exits 0
// for that, or exits 1 at the top level).
func usageErrors(c *cobra.Command) {
	if c.HasSubCommands() && !c.Runnable() {
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[groupAnnotation] = "yes"
		c.Args = func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return nil
			}
			msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
			if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
				msg += " (did you mean " + strings.Join(s, " or ") + "?)"
			}
			return errors.New(msg + "; see " + cmd.CommandPath() + " --help")
		}
		c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
	}
	if c.Args == nil && c.Runnable() && c.HasParent() {
		c.Args = cobra.ArbitraryArgs // what cobra does for nil; checked for '' below
	}
	if check := c.Args; check != nil {
		c.Args = func(cmd *cobra.Command, args []string) error {
			if err := check(cmd, args); err != nil {
				return usageError{err}
			}
			if cmd.Annotations[argsPassedOnAnnotation] == "" {
				return noEmptyArgs(args)
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		usageErrors(sub)
	}
}

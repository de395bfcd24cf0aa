// Command kl is the KiloLock command-line client: it shows states, their
// history and locks, diffs and rolls back versions, edits states on the
// server side, and queries the store, either through a kld server
// (--server) or directly on its database (--database). The commands and
// their grammar live in internal/klcli; this file parses the command line,
// runs the command and maps errors to exit codes.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/alecthomas/kong"

	"github.com/kilolock/kilolock/internal/klcli"
	"github.com/kilolock/kilolock/orchestrate"
)

func main() {
	os.Exit(run())
}

func run() int {
	// Ctrl-C, SIGTERM or a reader gone (kl drift check | head) ends ctx,
	// which stops the IaC CLI gracefully and ends kl's apply run.
	ctx, stop := orchestrate.SignalContext(context.Background())
	defer stop()
	var cli klcli.App
	parser, err := kong.New(&cli,
		kong.Name("kl"),
		kong.Description(klcli.Description()),
		klcli.Vars(),
		klcli.Examples(),
		kong.BindTo(ctx, (*context.Context)(nil)),
	)
	if err != nil {
		panic(err)
	}
	klcli.Complete(parser) // a shell asking for completions: answered, and exits
	kctx, err := parser.Parse(klcli.Args(os.Args[1:]))
	if err != nil {
		var perr *kong.ParseError
		if errors.As(err, &perr) && perr.Context != nil {
			parser.Stdout = os.Stderr
			_ = perr.Context.PrintUsage(true)
		}
		fmt.Fprintf(os.Stderr, "kl: %v\n", err)
		return klcli.ExitUsage
	}
	cli.Globals.PreferFlags(os.Getenv)
	if err := kctx.Run(&cli.Globals); err != nil {
		klcli.Report(os.Stderr, err)
		if ctx.Err() != nil {
			return 130 // interrupted
		}
		return klcli.ExitCode(err)
	}
	return klcli.ExitOK
}

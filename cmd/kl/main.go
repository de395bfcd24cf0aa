// Command kl is the KiloLock command-line client: it shows states, their
// history and locks, and queries the store, either through a kld server
// (--server) or directly on its database (--database). The commands live in
// internal/klcli; this file parses flags and maps errors to exit codes.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/alecthomas/kong"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/internal/buildinfo"
	"github.com/kilolock/kilolock/internal/klcli"
)

type globals struct {
	Server   string        `help:"Base URL of the kld server (default ${default_server} when no --database is given)." env:"KL_SERVER" placeholder:"URL"`
	Database string        `help:"Open the database directly instead: a postgres:// URL or a SQLite file path." env:"KL_DATABASE_URL" placeholder:"URL"`
	Token    string        `help:"Bearer token for the server." env:"KL_TOKEN"`
	Timeout  time.Duration `help:"Timeout of each request to the server." default:"30s"`
}

type jsonFlag struct {
	JSON bool `name:"json" help:"Write JSON for scripts instead of a table."`
}

type statusCmd struct {
	jsonFlag
	Name string `arg:"" help:"State name."`
}

func (c *statusCmd) Run(ctx context.Context, g *globals) error {
	return withCLI(ctx, g, c.JSON, func(cli *klcli.CLI) error { return cli.Status(ctx, c.Name) })
}

type historyCmd struct {
	jsonFlag
	Name     string `arg:"" help:"State name."`
	Limit    int    `help:"Show at most N versions." default:"20" placeholder:"N"`
	Before   int64  `help:"Show only versions numbered below M (for paging)." placeholder:"M"`
	Rejected bool   `help:"List the rejected commits instead (as kl conflicts does)."`
}

func (c *historyCmd) Run(ctx context.Context, g *globals) error {
	if c.Rejected && c.Before != 0 {
		return &klcli.UsageError{Message: "--before pages versions, not rejected commits", Hint: "use kl history NAME --rejected --limit N"}
	}
	return withCLI(ctx, g, c.JSON, func(cli *klcli.CLI) error {
		if c.Rejected {
			return cli.Conflicts(ctx, c.Name, c.Limit)
		}
		return cli.History(ctx, c.Name, kilolock.HistoryOptions{Limit: c.Limit, Before: c.Before})
	})
}

type conflictsCmd struct {
	jsonFlag
	Name  string `arg:"" help:"State name."`
	Limit int    `help:"Show at most N rejected commits." default:"20" placeholder:"N"`
}

func (c *conflictsCmd) Run(ctx context.Context, g *globals) error {
	return withCLI(ctx, g, c.JSON, func(cli *klcli.CLI) error { return cli.Conflicts(ctx, c.Name, c.Limit) })
}

type statesCmd struct {
	jsonFlag
}

func (c *statesCmd) Run(ctx context.Context, g *globals) error {
	return withCLI(ctx, g, c.JSON, func(cli *klcli.CLI) error { return cli.States(ctx) })
}

type queryCmd struct {
	jsonFlag
	SQL []string `arg:"" name:"sql" help:"One SQL statement (quote it; words are joined by spaces). It runs read-only."`
}

func (c *queryCmd) Run(ctx context.Context, g *globals) error {
	return withCLI(ctx, g, c.JSON, func(cli *klcli.CLI) error { return cli.Query(ctx, strings.Join(c.SQL, " ")) })
}

type versionCmd struct {
	jsonFlag
}

func (c *versionCmd) Run(ctx context.Context, g *globals) error {
	info := buildinfo.Info()
	client := klcli.VersionInfo{Version: info.Version, Commit: info.Commit, GoVersion: info.GoVersion}
	if g.Server == "" {
		// No server named: show kl's own version without dialing anyone.
		cli := &klcli.CLI{Out: os.Stdout, JSON: c.JSON}
		return cli.Version(ctx, client)
	}
	return withCLI(ctx, g, c.JSON, func(cli *klcli.CLI) error { return cli.Version(ctx, client) })
}

type stateConfigCmd struct {
	jsonFlag
	Name               string `arg:"" help:"State name."`
	ExclusiveLocks     *bool  `negatable:"" help:"=true: one lock holder at a time (classic); =false: optimistic, many holders, each write merged or refused with 409. Only while nobody holds a lock."`
	AllowLineageChange *bool  `negatable:"" help:"Let the next writes carry another lineage (=false to refuse again)."`
}

func (c *stateConfigCmd) Run(ctx context.Context, g *globals) error {
	return withCLI(ctx, g, c.JSON, func(cli *klcli.CLI) error {
		return cli.ConfigureState(ctx, c.Name, klcli.StateSettings{ExclusiveLocks: c.ExclusiveLocks, AllowLineageChange: c.AllowLineageChange})
	})
}

type statePullCmd struct {
	Name    string `arg:"" help:"State name."`
	Version int64  `help:"Version number (default: the current one)." placeholder:"N"`
}

func (c *statePullCmd) Run(ctx context.Context, g *globals) error {
	return withCLI(ctx, g, false, func(cli *klcli.CLI) error { return cli.Pull(ctx, c.Name, c.Version) })
}

type app struct {
	globals

	Status    statusCmd    `cmd:"" help:"Show a state: version, lineage, lock holders, instances by type."`
	History   historyCmd   `cmd:"" help:"List a state's versions, newest first."`
	Conflicts conflictsCmd `cmd:"" help:"List a state's rejected commits, newest first: who, what addresses, who won, what next."`
	States    statesCmd    `cmd:"" help:"List the states."`
	Query     queryCmd     `cmd:"" help:"Run a read-only SQL query on the store."`
	Version   versionCmd   `cmd:"" help:"Show kl's version, and the server's with --server."`
	State     struct {
		Config stateConfigCmd `cmd:"" help:"Configure a state: its lock mode, whether it may change lineage (at least one setting)."`
		Pull   statePullCmd   `cmd:"" help:"Write a version of a state to stdout."`
	} `cmd:"" help:"Operate on one state."`
}

// withCLI opens the backend g names, runs f on it and closes it.
func withCLI(ctx context.Context, g *globals, json bool, f func(*klcli.CLI) error) error {
	b, err := klcli.Open(ctx, klcli.Target{Server: g.Server, Database: g.Database, Token: g.Token, Timeout: g.Timeout})
	if err != nil {
		return err
	}
	defer b.Close()
	return f(&klcli.CLI{Backend: b, Out: os.Stdout, JSON: json})
}

func main() {
	os.Exit(run())
}

func run() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var cli app
	parser, err := kong.New(&cli,
		kong.Name("kl"),
		kong.Description("KiloLock client: states, history, locks and SQL, through a kld server or on its database."),
		kong.Vars{"default_server": klcli.DefaultServer},
		kong.BindTo(ctx, (*context.Context)(nil)),
	)
	if err != nil {
		panic(err)
	}
	kctx, err := parser.Parse(os.Args[1:])
	if err != nil {
		var perr *kong.ParseError
		if errors.As(err, &perr) && perr.Context != nil {
			parser.Stdout = os.Stderr
			_ = perr.Context.PrintUsage(true)
		}
		fmt.Fprintf(os.Stderr, "kl: %v\n", err)
		return klcli.ExitUsage
	}
	if err := kctx.Run(&cli.globals); err != nil {
		klcli.Report(os.Stderr, err)
		if ctx.Err() != nil {
			return 130 // interrupted
		}
		return klcli.ExitCode(err)
	}
	return klcli.ExitOK
}

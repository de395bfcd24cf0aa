package klcli

import (
	"context"

	"github.com/alecthomas/kong"
	"github.com/kilolock/kilolock/internal/bytesize"
	"github.com/kilolock/kilolock/retention"
	"github.com/kilolock/kilolock/store"
)

// BackupCmd is kl backup.
type BackupCmd struct {
	JSONFlag
	Output string `short:"o" required:"" help:"File to write the backup to (- for stdout); it is written as FILE.partial and renamed once read back whole." placeholder:"FILE" type:"path"`
}

// Help is kl backup --help's long text.
func (c *BackupCmd) Help() string {
	return `Writes a consistent online snapshot of the whole store — states, versions, payloads,
intervals, kept bytes, refused commits, apply runs and reservations, quotas,
tenancy, the audit log, retention policies and markers — as a gzip file of JSON
lines (docs/backup.md), while writes go on. Held locks are left out and counted.

With --database it reads the database directly; with --server it downloads the
backup from kld's API, which needs the operator token (--token klo_…). Restore
it with kl restore --database URL FILE, into an empty database of either store.`
}

// Run runs the command.
func (c *BackupCmd) Run(ctx context.Context, g *Globals) error {
	return g.with(ctx, c.JSON, func(cli *CLI) error { return cli.Backup(ctx, c.Output) })
}

// RestoreCmd is kl restore.
type RestoreCmd struct {
	JSONFlag
	File     string        `arg:"" help:"The backup file kl backup wrote (- for stdin)." type:"path"`
	MaxValue bytesize.Size `default:"256MiB" help:"Largest value (a state's document, an instance object) the restore puts together: at least the largest state the store took (kld --body-limit)."`
	MaxLine  bytesize.Size `default:"16MiB" help:"Longest line of the file read. Backups this kl writes keep lines short; a backup in format 1 may need more."`
}

// Help is kl restore --help's long text.
func (c *RestoreCmd) Help() string {
	return `Loads a backup into the empty database --database names: a SQLite file (made if
missing) or a PostgreSQL database (migrated first), whichever store the backup
came from. It is one transaction: a damaged, cut or altered file (every object
is checked against its content address), or a database that already holds
states, changes nothing. Its memory is bounded whatever the file holds
(--max-line, --max-value). Start kld on the database afterwards.`
}

// Run runs the command.
func (c *RestoreCmd) Run(ctx context.Context, g *Globals) error {
	if g.Database == "" {
		return &UsageError{Message: "kl restore loads a backup into a database, not through a server", Hint: "kl restore --database URL FILE (a postgres:// URL or a SQLite file path, empty)"}
	}
	ring, err := loadKeyring(g.KeyFile)
	if err != nil {
		return err
	}
	lim := retention.RestoreLimits{MaxLine: int64(c.MaxLine), MaxValue: int64(c.MaxValue)}
	return Restore(ctx, g.out(), c.JSON, g.Database, c.File, lim, store.WithKeyring(ring))
}

// RetentionCmds are kl retention list|set|unset|apply|pruned.
type RetentionCmds struct {
	List JSONFlag `cmd:"" help:"List the retention policies." example:"kl retention list"`
	Set  struct {
		JSONFlag
		retentionScopeFlags
		KeepLast int64 `help:"Keep the newest N versions." placeholder:"N"`
		KeepDays int64 `help:"Keep the versions of the last D days." placeholder:"D"`
		KeepAll  bool  `help:"Keep every version: exempts the state or environment from a broader policy."`
	} `cmd:"" help:"Set the policy of the server, an environment or a state: keep the last N versions and/or those of the last D days." example:"kl retention set --state prod --keep-last 50 --keep-days 30"`
	Unset retentionScopeFlags `cmd:"" help:"Remove a policy." example:"kl retention unset --state prod"`
	Apply struct {
		JSONFlag
		DryRun bool   `help:"List what would be pruned; change nothing."`
		State  string `help:"Prune only this state." placeholder:"NAME" predictor:"state"`
		Batch  int    `help:"Prune at most N versions per transaction (1 to 10000; default 100)." placeholder:"N"`
	} `cmd:"" help:"Prune the versions the policies do not keep (--dry-run: list them)." example:"kl retention apply --dry-run"`
	Pruned struct {
		JSONFlag
		Name   string `arg:"" help:"State name." predictor:"state"`
		Before int64  `help:"Only versions numbered below M." placeholder:"M"`
		Limit  int    `help:"At most N runs of versions." default:"50" placeholder:"N"`
	} `cmd:"" help:"List the pruned versions of a state, who pruned them and under what policy." example:"kl retention pruned prod"`
}

// Help is kl retention --help's long text: the model.
func (c *RetentionCmds) Help() string {
	return `A retention policy keeps the last N versions (--keep-last) and/or the versions of
the last D days (--keep-days) of a state; a version either keeps is kept. A state
follows its own policy, else its environment's, else the server's; a policy with
neither limit keeps everything and so exempts a state or environment.

Whatever the policy, retention never prunes a state's current version, a
version a held lock or an apply run in flight is based on (nor any later one),
nor a version a rollback plan names (pinned for a week by kl rollback's dry run).
Pruning deletes the versions, the intervals and payloads only they referenced,
and keeps a marker per version (kl retention pruned, kl history) and an audit
entry per batch. kld prunes on a schedule with --retention-interval.`
}

// maxBatch bounds --batch (as kld's API does).
const maxBatch = 10_000

// Run runs the subcommand.
func (c *RetentionCmds) Run(ctx context.Context, g *Globals, k *kong.Context) error {
	switch k.Selected().Name {
	case "list":
		return g.with(ctx, c.List.JSON, func(cli *CLI) error { return cli.RetentionPolicies(ctx) })
	case "set":
		a := &c.Set
		scope, target, err := a.scope()
		if err != nil {
			return err
		}
		if a.KeepAll == (a.KeepLast != 0 || a.KeepDays != 0) {
			return &UsageError{Message: "give --keep-last N and/or --keep-days D, or --keep-all", Hint: "e.g. kl retention set --state prod --keep-last 50 --keep-days 30"}
		}
		p := retention.RetentionPolicy{Scope: scope, Target: target, KeepLast: a.KeepLast, KeepDays: a.KeepDays}
		return g.with(ctx, a.JSON, func(cli *CLI) error {
			if scope == retention.RetentionState {
				g.warnMissingState(ctx, cli.Conn, target)
			}
			return cli.SetRetentionPolicy(ctx, p)
		})
	case "unset":
		scope, target, err := c.Unset.scope()
		if err != nil {
			return err
		}
		return g.with(ctx, false, func(cli *CLI) error { return cli.UnsetRetentionPolicy(ctx, scope, target) })
	case "apply":
		a := &c.Apply
		if a.Batch < 0 || a.Batch > maxBatch {
			return &UsageError{Message: "--batch takes 1 to 10000", Hint: "leave it out for the default, 100"}
		}
		return g.with(ctx, a.JSON, func(cli *CLI) error { return cli.ApplyRetention(ctx, a.DryRun, a.State, a.Batch) })
	case "pruned":
		a := &c.Pruned
		return g.with(ctx, a.JSON, func(cli *CLI) error { return cli.Pruned(ctx, a.Name, a.Before, a.Limit) })
	}
	return unknownCommand(k)
}

// retentionScopeFlags name what a policy applies to.
type retentionScopeFlags struct {
	State       string `help:"The policy of this state." placeholder:"NAME" predictor:"state" xor:"scope"`
	Environment string `name:"env" help:"The policy of this environment (env_…): its tenants' states." placeholder:"ENV" xor:"scope"`
	ServerWide  bool   `name:"server-wide" help:"The server's policy: every state without its own or its environment's." xor:"scope"`
}

// scope returns the policy's scope and target.
func (f *retentionScopeFlags) scope() (retention.RetentionScope, string, error) {
	switch {
	case f.State != "":
		return retention.RetentionState, f.State, nil
	case f.Environment != "":
		return retention.RetentionEnvironment, f.Environment, nil
	case f.ServerWide:
		return retention.RetentionServer, "", nil
	}
	return "", "", &UsageError{Message: "say which policy: --state NAME, --env ENV or --server-wide", Hint: "e.g. kl retention set --server-wide --keep-last 100"}
}

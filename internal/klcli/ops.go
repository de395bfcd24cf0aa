package klcli

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/alecthomas/kong"
	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/client"
	"github.com/kilolock/kilolock/internal/bytesize"
	"github.com/kilolock/kilolock/keyring"
	"github.com/kilolock/kilolock/retention"
	"github.com/kilolock/kilolock/store"
	"github.com/kilolock/kilolock/store/sqlstore"
)

// Backup writes the server's backup to w, with the operator
// token, with no bound on its whole time.
func (b *Conn) Backup(ctx context.Context, w io.Writer) error {
	r, err := b.long.Backup(transfer(ctx))
	if err != nil {
		return err
	}
	defer r.Close()
	_, err = io.Copy(w, r)
	return err
}

// Backup writes a backup of the whole store to the file output ("-":
// stdout), reading it back whole as it goes (sqlstore.CopyBackup), and
// reports what it holds. A file is written as output.partial and renamed
// only once it is whole, so no cut-short backup ever takes the name.
func (c *CLI) Backup(ctx context.Context, output string) error {
	if output == "" {
		return &UsageError{Message: "kl backup needs a file to write", Hint: "kl backup -o kilolock-backup.json.gz (or -o - for stdout)"}
	}
	download := func(w io.Writer) error { return c.Conn.Backup(ctx, w) }
	if output == "-" {
		_, err := sqlstore.CopyBackup(c.Out, download)
		return err
	}
	tmp := output + ".partial"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return withHint(fmt.Errorf("write the backup: %w", err), "-o names a file in a directory that exists and that kl may write")
	}
	sum, err := sqlstore.CopyBackup(f, download)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, output)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return c.show(sum, func() error {
		abs, _ := filepath.Abs(output)
		fmt.Fprintf(c.Out, "Backed up %s of a %s store (schema %d), taken %s, to %s (%s).\n",
			plural(int(sum.Rows()), "row", "rows"), sum.Store, sum.Schema, formatTime(sum.Created), abs, byteSize(sum.Bytes))
		c.backupTables(sum)
		return nil
	})
}

// backupTables lists the tables of a backup and their rows, and what was
// left out.
func (c *CLI) backupTables(sum *retention.BackupSummary) {
	w := c.table()
	row(w, "TABLE", "ROWS")
	for _, t := range sum.Tables {
		if t.Rows > 0 {
			row(w, t.Name, strconv.FormatInt(t.Rows, 10))
		}
	}
	w.Flush()
	for _, t := range sum.Excluded {
		if t.Rows > 0 {
			fmt.Fprintf(c.Out, "Left out: %s of %s (%s).\n", plural(int(t.Rows), "row", "rows"), t.Name, t.Reason)
		}
	}
}

// Restore loads the backup file (or stdin for "-") into the empty database
// at databaseURL, of either store, opened with opts (the keyring of an
// encrypted store's backup: without it the restore is refused), within
// lim, and reports what it loaded.
func Restore(ctx context.Context, out io.Writer, json bool, databaseURL, file string, lim retention.RestoreLimits, opts ...store.Option) error {
	var in io.Reader = os.Stdin
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return withHint(fmt.Errorf("read the backup: %w", err), "name the file kl backup wrote")
		}
		defer f.Close()
		in = f
	}
	st, err := openStore(ctx, databaseURL, opts...)
	if err != nil {
		return err
	}
	defer st.Close()
	sum, err := retention.Restore(ctx, st, in, lim)
	if err != nil {
		// A backup of an encrypted store needs its keys.
		return keyHint(err, "")
	}
	c := &CLI{Out: out, JSON: json}
	if json {
		return c.writeJSON(sum)
	}
	fmt.Fprintf(out, "Restored %s of a %s store (schema %d), taken %s, into %s.\n",
		plural(int(sum.Rows()), "row", "rows"), sum.Store, sum.Schema, formatTime(sum.Created), redactURL(databaseURL))
	c.backupTables(sum)
	return nil
}

// redactURL hides a database URL's password.
func redactURL(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		return u.Redacted()
	}
	return raw
}

// byteSize shows n bytes to three figures.
func byteSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// RetentionPolicies lists the policies.
func (c *CLI) RetentionPolicies(ctx context.Context) error {
	l, err := c.api().RetentionPolicies(ctx)
	if err != nil {
		return err
	}
	ps := nonNil(l.Policies)
	return c.show(map[string]any{"policies": ps}, func() error {
		if len(ps) == 0 {
			return c.printf("no retention policy: every version is kept\n")
		}
		return writeTable(c, ps, []string{"SCOPE", "TARGET", "KEEP LAST", "KEEP DAYS", "UPDATED", "BY"}, func(p retention.RetentionPolicy) []string {
			return []string{string(p.Scope), orDash(p.Target), limitText(p.KeepLast), limitText(p.KeepDays), formatTime(p.Updated), orDash(p.UpdatedBy)}
		})
	})
}

func limitText(n int64) string {
	if n <= 0 {
		return "-"
	}
	return strconv.FormatInt(n, 10)
}

// SetRetentionPolicy stores a policy and shows it.
func (c *CLI) SetRetentionPolicy(ctx context.Context, p retention.RetentionPolicy) error {
	out, err := c.api().SetRetentionPolicy(ctx, p)
	if err != nil {
		return err
	}
	return c.show(out, func() error {
		return c.printf("Retention policy set: %s. kl retention apply --dry-run shows what it prunes.\n", out.String())
	})
}

// UnsetRetentionPolicy removes a policy.
func (c *CLI) UnsetRetentionPolicy(ctx context.Context, scope retention.RetentionScope, target string) error {
	if _, err := c.api().DeleteRetentionPolicy(ctx, scope, target); err != nil {
		return err
	}
	return c.printf("Retention policy removed: %s.\n", (&retention.RetentionPolicy{Scope: scope, Target: target}).String())
}

// ApplyRetention prunes (or with dryRun lists) what the policies do not
// keep, and reports it state by state.
func (c *CLI) ApplyRetention(ctx context.Context, dryRun bool, state string, batch int) error {
	rep, err := c.Conn.long.ApplyRetention(ctx, client.RetentionRequest{DryRun: dryRun, State: state, Batch: batch})
	if err != nil {
		return err
	}
	return c.show(rep, func() error {
		verb := "Pruned"
		if dryRun {
			verb = "Would prune"
		}
		if len(rep.States) == 0 {
			return c.printf("No state has a retention policy that prunes: nothing to do (kl retention set adds one).\n")
		}
		if err := writeTable(c, rep.States, []string{"STATE", "POLICY", "VERSIONS", "PRUNED"}, func(sp retention.StatePruning) []string {
			return []string{cell(sp.State), sp.Policy, strconv.Itoa(len(sp.Versions)), orDash(retention.VersionRuns(sp.Versions))}
		}); err != nil {
			return err
		}
		if dryRun {
			for _, sp := range rep.States {
				if len(sp.Kept) == 0 {
					continue
				}
				fmt.Fprintf(c.Out, "%s keeps:\n", sp.State)
				for _, k := range sp.Kept {
					fmt.Fprintf(c.Out, "  %s\n", k)
				}
			}
			fmt.Fprintf(c.Out, "%s %s.\n", verb, plural(rep.Versions, "version", "versions"))
			writeDryRunEnd(c.Out, withoutDryRun)
			return nil
		}
		_, err = fmt.Fprintf(c.Out, "%s %s: %s and %s deleted, %s moved onto kept versions. kl history shows where they were.\n",
			verb, plural(rep.Versions, "version", "versions"), plural(rep.Intervals, "interval", "intervals"),
			plural(rep.Payloads, "object", "objects"), plural(rep.Moved, "interval", "intervals"))
		return err
	})
}

// Pruned lists the runs of pruned versions of state name below before (0:
// all), newest first: who pruned them, when and under what policy.
func (c *CLI) Pruned(ctx context.Context, name string, before int64, limit int) error {
	if before < 0 || limit < 1 || limit > maxHistoryPruned {
		return &UsageError{Message: fmt.Sprintf("--before takes a version number and --limit 1 to %d", maxHistoryPruned), Hint: "e.g. kl retention pruned NAME --limit 20"}
	}
	l, err := c.api().Pruned(ctx, name, before, limit)
	if err != nil {
		return err
	}
	out := nonNil(l.Pruned)
	return c.show(map[string]any{"state": name, "pruned": out}, func() error {
		if len(out) == 0 {
			return c.printf("no version of state %s was pruned\n", name)
		}
		return writeTable(c, out, []string{"VERSIONS", "COUNT", "PRUNED", "BY", "POLICY"}, func(p kilolock.PrunedRange) []string {
			return []string{p.String(), strconv.FormatInt(p.Versions, 10), formatTime(p.PrunedAt), orDash(p.PrunedBy), p.Policy}
		})
	})
}

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
		stateArg
		Before int64 `help:"Only versions numbered below M." placeholder:"M"`
		Limit  int   `help:"At most N runs of versions." default:"50" placeholder:"N"`
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

// KeysCmds are kl keys: the keys of encryption at rest.
type KeysCmds struct {
	Generate struct{} `cmd:"" help:"Print a new random key (base64, 32 bytes) for a key file: put it first to make it the active key." example:"(umask 077; kl keys generate > keys)"`
	Status   JSONFlag `cmd:"" help:"List the keys that wrap the states' data keys, and the configured ones." example:"kl keys status"`
	Rotate   struct {
		JSONFlag
		NoWait bool          `help:"On a server: start the rotation and return; kl keys status shows what is left."`
		Every  time.Duration `help:"How often a server's progress is asked for." default:"1s" hidden:""`
	} `cmd:"" help:"Re-wrap every state's data key with the active key (the first of the key file), in the background on a server; shows the progress until done." example:"kl keys rotate --no-wait"`
}

// Run runs the subcommand.
func (c *KeysCmds) Run(ctx context.Context, g *Globals, k *kong.Context) error {
	switch k.Selected().Name {
	case "generate":
		_, err := fmt.Fprintln(g.out(), keyring.Generate())
		return err
	case "status":
		return g.with(ctx, c.Status.JSON, func(cli *CLI) error { return cli.KeyStatus(ctx) })
	case "rotate":
		return g.with(ctx, c.Rotate.JSON, func(cli *CLI) error { return cli.RotateKeys(ctx, !c.Rotate.NoWait, c.Rotate.Every) })
	}
	return unknownCommand(k)
}

// KeysJSON is the JSON output of kl keys status.
type KeysJSON struct {
	Keys []kilolock.KeyUsage `json:"keys"`
}

// KeyStatus lists the keys.
func (c *CLI) KeyStatus(ctx context.Context) error {
	keys, err := c.api().Keys(ctx)
	if err != nil {
		return err
	}
	usage := keys.Keys
	return c.show(KeysJSON{Keys: usage}, func() error {
		if len(usage) == 0 {
			return c.printf("encryption at rest is off: no key is configured and nothing is encrypted\n")
		}
		return writeTable(c, usage, []string{"KEY", "ACTIVE", "CONFIGURED", "STATES"}, func(u kilolock.KeyUsage) []string {
			return []string{u.KeyID, yesNo(u.Active), yesNo(u.Configured), strconv.FormatInt(u.States, 10)}
		})
	})
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// RotateKeys re-wraps the data keys with the active key, printing a line
// of progress per batch (on a server, per poll), and what is left to do.
func (c *CLI) RotateKeys(ctx context.Context, wait bool, every time.Duration) error {
	last := int64(-1)
	res, err := c.api().RotateKeysAndFollow(ctx, client.RotationOptions{Wait: wait, Every: every, Progress: func(r kilolock.KeyRotation) {
		if c.JSON || r.Done == last {
			return
		}
		last = r.Done
		fmt.Fprintf(c.Out, "rotating to key %s: %d of %d data keys re-wrapped, %d left\n", r.Active, r.Done, r.Total, r.Remaining)
	}})
	if err != nil {
		return err
	}
	return c.show(res, func() error {
		if !wait && res.Finished.IsZero() {
			return c.printf("rotation to key %s started on the server: %d data keys to re-wrap; kl keys status shows what is left\n", res.Active, res.Total)
		}
		_, err = fmt.Fprintf(c.Out, "done: %d data keys re-wrapped to key %s in %s; a key that wraps none (kl keys status) can leave the key file\n",
			res.Done, res.Active, res.Finished.Sub(res.Started).Round(time.Millisecond))
		return err
	})
}

package klcli

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strconv"

	"github.com/kilolock/kilolock/client"

	"github.com/kilolock/kilolock"
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
// stdout), then reads it back whole (sqlstore.VerifyBackup) and reports
// what it holds. A file is written as output.partial and renamed only once
// it is whole, so no cut-short backup ever takes the name.
func (c *CLI) Backup(ctx context.Context, output string) error {
	if output == "" {
		return &UsageError{Message: "kl backup needs a file to write", Hint: "kl backup -o kilolock-backup.json.gz (or -o - for stdout)"}
	}
	var sum *retention.BackupSummary
	verify := func(w io.Writer) error {
		pr, pw := io.Pipe()
		done := make(chan error, 1)
		go func() {
			var err error
			sum, err = sqlstore.VerifyBackup(pr)
			pr.CloseWithError(err)
			done <- err
		}()
		err := c.Conn.Backup(ctx, io.MultiWriter(w, pw))
		pw.CloseWithError(err)
		if verr := <-done; err == nil && verr != nil {
			err = fmt.Errorf("the backup read back is not whole: %w", verr)
		}
		return err
	}
	if output == "-" {
		if err := verify(c.Out); err != nil {
			return err
		}
		return nil
	}
	tmp := output + ".partial"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return withHint(fmt.Errorf("write the backup: %w", err), "-o names a file in a directory that exists and that kl may write")
	}
	err = verify(f)
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
			_, err := fmt.Fprintln(c.Out, "no retention policy: every version is kept")
			return err
		}
		w := c.table()
		row(w, "SCOPE", "TARGET", "KEEP LAST", "KEEP DAYS", "UPDATED", "BY")
		for _, p := range ps {
			row(w, string(p.Scope), orDash(p.Target), limitText(p.KeepLast), limitText(p.KeepDays), formatTime(p.Updated), orDash(p.UpdatedBy))
		}
		return w.Flush()
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
		_, err = fmt.Fprintf(c.Out, "Retention policy set: %s. kl retention apply --dry-run shows what it prunes.\n", out.String())
		return err
	})
}

// UnsetRetentionPolicy removes a policy.
func (c *CLI) UnsetRetentionPolicy(ctx context.Context, scope retention.RetentionScope, target string) error {
	if _, err := c.api().DeleteRetentionPolicy(ctx, scope, target); err != nil {
		return err
	}
	_, err := fmt.Fprintf(c.Out, "Retention policy removed: %s.\n", (&retention.RetentionPolicy{Scope: scope, Target: target}).String())
	return err
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
			_, err := fmt.Fprintln(c.Out, "No state has a retention policy that prunes: nothing to do (kl retention set adds one).")
			return err
		}
		w := c.table()
		row(w, "STATE", "POLICY", "VERSIONS", "PRUNED")
		for _, sp := range rep.States {
			row(w, cell(sp.State), sp.Policy, strconv.Itoa(len(sp.Versions)), orDash(retention.VersionRuns(sp.Versions)))
		}
		if err := w.Flush(); err != nil {
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
			_, err := fmt.Fprintf(c.Out, "no version of state %s was pruned\n", name)
			return err
		}
		w := c.table()
		row(w, "VERSIONS", "COUNT", "PRUNED", "BY", "POLICY")
		for _, p := range out {
			row(w, rangeText(p), strconv.FormatInt(p.Versions, 10), formatTime(p.PrunedAt), orDash(p.PrunedBy), p.Policy)
		}
		return w.Flush()
	})
}

// rangeText shows a run of versions: "@3-@9", or "@3" alone.
func rangeText(p kilolock.PrunedRange) string {
	if p.To > p.From {
		return fmt.Sprintf("@%d-@%d", p.From, p.To)
	}
	return fmt.Sprintf("@%d", p.From)
}

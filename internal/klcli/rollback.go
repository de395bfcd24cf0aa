package klcli

import (
	"context"
	"fmt"

	"github.com/kilolock/kilolock/history"
)

// Rollback rolls a state — or, with r.Address, one instance or resource —
// back to version r.To. Without r.Apply it is a dry run: it prints what
// would be added back, removed and changed. It always prints the warning
// that rolling back state does not roll back infrastructure. Applying
// needs yes as well: --apply without --yes is a *UsageError.
func (c *CLI) Rollback(ctx context.Context, name string, r RollbackRequest, yes bool) error {
	if r.Apply && !yes {
		return &UsageError{
			Message: "kl rollback --apply changes the state and needs --yes as well",
			Hint:    "run the dry run first (without --apply), read the warning, then add --apply --yes",
		}
	}
	res, err := c.Backend.Rollback(ctx, name, r)
	if err != nil {
		return err
	}
	return c.show(struct {
		*history.RollbackResult
		DryRun bool `json:"dry_run"`
	}{res, !r.Apply}, func() error {
		p := &res.Plan
		what := "state " + name
		if p.Address != "" {
			what = fmt.Sprintf("%s in state %s", p.Address, name)
		}
		mode := "dry run, nothing written"
		if r.Apply {
			mode = "applied"
		}
		fmt.Fprintf(c.Out, "Rollback of %s to %s from the current %s (%s):\n\n", what, versionText(&p.Target), versionText(&p.Base), mode)
		if p.Opaque {
			fmt.Fprintf(c.Out, "  %s or %s is client-side encrypted: the whole of %s is restored as it was written; its resources cannot be listed.\n",
				versionText(&p.Target), versionText(&p.Base), versionText(&p.Target))
		} else {
			verbs := rollbackVerbs
			if r.Apply && res.Version != nil {
				verbs = rolledVerbs
			}
			writeChangeSet(c.Out, &p.ChangeSet, verbs)
		}
		warning := p.Warning
		if warning == "" {
			warning = history.RollbackWarning
		}
		fmt.Fprintf(c.Out, "\nWarning: %s\n\n", warning)
		switch {
		case !r.Apply:
			cmd := fmt.Sprintf("kl rollback %s --to %s", name, r.To)
			if r.Address != "" {
				cmd = fmt.Sprintf("kl rollback resource %s %s --to %s", name, r.Address, r.To)
			}
			fmt.Fprintf(c.Out, "This was a dry run. To append this rollback as a new version: %s --apply --yes\n", cmd)
		case res.Version == nil:
			fmt.Fprintf(c.Out, "The current version already has the content of %s: nothing was written.\n", versionText(&p.Target))
		default:
			fmt.Fprintf(c.Out, "Rolled back as new version %s (source rollback); %s stays in the history.\n", versionText(res.Version), versionText(&p.Base))
		}
		return nil
	})
}

package klcli

import (
	"context"
	"fmt"
	"strconv"

	"github.com/kilolock/kilolock/client"

	"github.com/kilolock/kilolock"
)

// TagCmds are kl tag set, list and unset.
type TagCmds struct {
	Set   TagSetCmd   `cmd:"" help:"Name a version: kl tag set NAME TAG REF; the tag is then a version reference (kl rollback NAME --to TAG)."`
	List  TagListCmd  `cmd:"" help:"List a state's tags and the versions they name."`
	Unset TagUnsetCmd `cmd:"" help:"Remove a tag; the version stays."`
}

// TagSetCmd is kl tag set.
type TagSetCmd struct {
	JSONFlag
	Name        string `arg:"" help:"State name." predictor:"state"`
	Tag         string `arg:"" help:"Tag name: letters, digits, '.', '-', '_' (not latest, @N, serial:S or a number)."`
	Ref         string `arg:"" optional:"" help:"The version it names (set again to move it): ${version_ref}"`
	Description string `help:"What the version is, for people." placeholder:"TEXT"`
}

// Run runs the command.
func (c *TagSetCmd) Run(ctx context.Context, g *Globals) error {
	ref, err := refArg(c.Ref)
	if err != nil {
		return err
	}
	if err := kilolock.ValidTagName(c.Tag); err != nil {
		return err
	}
	return g.with(ctx, c.JSON, func(cli *CLI) error {
		t, err := cli.api().SetTag(ctx, c.Name, c.Tag, client.TagRequest{Ref: ref.String(), Description: c.Description})
		if err != nil {
			return err
		}
		return cli.say(t, "tag %s names @%d of state %s\n", t.Name, t.Version, c.Name)
	})
}

// TagListCmd is kl tag list.
type TagListCmd struct {
	JSONFlag
	Name string `arg:"" help:"State name." predictor:"state"`
}

// Run runs the command.
func (c *TagListCmd) Run(ctx context.Context, g *Globals) error {
	return g.with(ctx, c.JSON, func(cli *CLI) error {
		l, err := cli.api().Tags(ctx, c.Name)
		if err != nil {
			return err
		}
		tags := nonNil(l.Tags)
		return cli.show(map[string]any{"tags": tags}, func() error {
			w := cli.table()
			row(w, "TAG", "VERSION", "SET", "BY", "DESCRIPTION")
			for _, t := range tags {
				row(w, cell(t.Name), "@"+strconv.FormatInt(t.Version, 10), formatTime(t.Created), orDash(t.Actor), orDash(t.Description))
			}
			return w.Flush()
		})
	})
}

// TagUnsetCmd is kl tag unset.
type TagUnsetCmd struct {
	Name string `arg:"" help:"State name." predictor:"state"`
	Tag  string `arg:"" help:"Tag name."`
}

// Run runs the command.
func (c *TagUnsetCmd) Run(ctx context.Context, g *Globals) error {
	return g.with(ctx, false, func(cli *CLI) error {
		if _, err := cli.api().DeleteTag(ctx, c.Name, c.Tag); err != nil {
			return err
		}
		_, err := fmt.Fprintf(cli.Out, "tag %s of state %s removed\n", c.Tag, c.Name)
		return err
	})
}

package klcli

import (
	"context"
	"fmt"
	"strconv"

	"github.com/alecthomas/kong"
	"github.com/kilolock/kilolock/client"

	"github.com/kilolock/kilolock"
)

// TagCmds are kl tag set, list and unset.
type TagCmds struct {
	Set struct {
		JSONFlag
		Name        string `arg:"" help:"State name." predictor:"state"`
		Tag         string `arg:"" help:"Tag name: letters, digits, '.', '-', '_' (not latest, @N, serial:S or a number)."`
		Ref         string `arg:"" optional:"" help:"The version it names (set again to move it): ${version_ref}"`
		Description string `help:"What the version is, for people." placeholder:"TEXT"`
	} `cmd:"" help:"Name a version: kl tag set NAME TAG REF; the tag is then a version reference (kl rollback NAME --to TAG)."`
	List struct {
		JSONFlag
		Name string `arg:"" help:"State name." predictor:"state"`
	} `cmd:"" help:"List a state's tags and the versions they name."`
	Unset struct {
		Name string `arg:"" help:"State name." predictor:"state"`
		Tag  string `arg:"" help:"Tag name."`
	} `cmd:"" help:"Remove a tag; the version stays."`
}

// Run runs the subcommand.
func (c *TagCmds) Run(ctx context.Context, g *Globals, k *kong.Context) error {
	switch k.Selected().Name {
	case "set":
		a := &c.Set
		ref, err := refArg(a.Ref)
		if err != nil {
			return err
		}
		if err := kilolock.ValidTagName(a.Tag); err != nil {
			return err
		}
		return g.with(ctx, a.JSON, func(cli *CLI) error {
			t, err := cli.api().SetTag(ctx, a.Name, a.Tag, client.TagRequest{Ref: ref.String(), Description: a.Description})
			if err != nil {
				return err
			}
			return cli.say(t, "tag %s names @%d of state %s\n", t.Name, t.Version, a.Name)
		})
	case "list":
		return g.with(ctx, c.List.JSON, func(cli *CLI) error {
			l, err := cli.api().Tags(ctx, c.List.Name)
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
	case "unset":
		a := &c.Unset
		return g.with(ctx, false, func(cli *CLI) error {
			if _, err := cli.api().DeleteTag(ctx, a.Name, a.Tag); err != nil {
				return err
			}
			_, err := fmt.Fprintf(cli.Out, "tag %s of state %s removed\n", a.Tag, a.Name)
			return err
		})
	}
	return unknownCommand(k)
}

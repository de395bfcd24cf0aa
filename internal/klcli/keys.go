package klcli

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/alecthomas/kong"
	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/keyring"
)

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
			_, err := fmt.Fprintln(c.Out, "encryption at rest is off: no key is configured and nothing is encrypted")
			return err
		}
		w := c.table()
		row(w, "KEY", "ACTIVE", "CONFIGURED", "STATES")
		for _, u := range usage {
			row(w, u.KeyID, yesNo(u.Active), yesNo(u.Configured), strconv.FormatInt(u.States, 10))
		}
		return w.Flush()
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
	res, err := c.Conn.RotateKeys(ctx, wait, every, func(r kilolock.KeyRotation) {
		if c.JSON || r.Done == last {
			return
		}
		last = r.Done
		fmt.Fprintf(c.Out, "rotating to key %s: %d of %d data keys re-wrapped, %d left\n", r.Active, r.Done, r.Total, r.Remaining)
	})
	if err != nil {
		return err
	}
	return c.show(res, func() error {
		if !wait && res.Finished.IsZero() {
			_, err := fmt.Fprintf(c.Out, "rotation to key %s started on the server: %d data keys to re-wrap; kl keys status shows what is left\n", res.Active, res.Total)
			return err
		}
		_, err = fmt.Fprintf(c.Out, "done: %d data keys re-wrapped to key %s in %s; a key that wraps none (kl keys status) can leave the key file\n",
			res.Done, res.Active, res.Finished.Sub(res.Started).Round(time.Millisecond))
		return err
	})
}

// RotateKeys starts the server's rotation of the data keys to the active
// key and, with wait, asks for its progress every so often until it is
// over, calling progress each time.
func (b *Conn) RotateKeys(ctx context.Context, wait bool, every time.Duration, progress func(kilolock.KeyRotation)) (kilolock.KeyRotation, error) {
	started, err := b.api.RotateKeys(ctx)
	if err != nil {
		return kilolock.KeyRotation{}, err
	}
	r := started.Rotation
	progress(r)
	for wait && r.Finished.IsZero() && r.Error == "" {
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case <-time.After(max(every, 10*time.Millisecond)):
		}
		st, err := b.api.Keys(ctx)
		if err != nil {
			return r, err
		}
		if st.Rotation != nil {
			r = *st.Rotation
		}
		progress(r)
	}
	if r.Error != "" {
		return r, fmt.Errorf("key rotation on the server stopped after %d data keys: %s", r.Done, r.Error)
	}
	return r, nil
}

package klcli

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/kilolock/kilolock"
)

// StatesCmd is kl states.
type StatesCmd struct {
	JSONFlag
}

// Run runs the command.
func (c *StatesCmd) Run(ctx context.Context, g *Globals) error {
	return g.with(ctx, c.JSON, func(cli *CLI) error { return cli.States(ctx) })
}

// StatesJSON is the JSON output of States, as the server's API answers it.
type StatesJSON struct {
	States []kilolock.State `json:"states"`
}

// States lists every state: current version and serial, lock mode and who
// holds it.
func (c *CLI) States(ctx context.Context) error {
	l, err := c.api().States(ctx)
	if err != nil {
		return err
	}
	sts := nonNil(l.States)
	return c.show(StatesJSON{States: sts}, func() error {
		if len(sts) == 0 {
			_, err := fmt.Fprintln(c.Out, "no states yet")
			return err
		}
		w := c.table()
		row(w, "NAME", "VERSION", "SERIAL", "LOCK MODE", "LOCKED BY", "ENCRYPTION", "CREATED")
		for _, s := range sts {
			version, serial := "-", "-"
			if s.Current > 0 {
				version, serial = strconv.FormatInt(s.Current, 10), strconv.FormatUint(s.Serial, 10)
			}
			row(w, cell(s.Name), version, serial, string(s.LockMode), holders(s.Locks), encryptionCell(&s), formatTime(s.Created))
		}
		return w.Flush()
	})
}

// encryptionCell is what kl states says of a state's client-side
// encryption: the key providers of its current version, and whether it
// requires encryption; "-" for a plaintext state that does not.
func encryptionCell(s *kilolock.State) string {
	var parts []string
	if enc := s.ClientEncryption; enc != nil {
		providers := keyProviders(enc)
		if providers == "" {
			providers = "client-side"
		}
		parts = append(parts, providers)
	}
	if s.ClientEncryptionRequired() {
		parts = append(parts, "required")
	}
	if len(parts) == 0 {
		return "-"
	}
	return cell(strings.Join(parts, ", "))
}

// keyProviders lists the key providers an envelope's meta names, as an
// encryption block names them (pbkdf2.team), "" when none is known.
func keyProviders(enc *kilolock.ClientEncryption) string {
	names := make([]string, 0, len(enc.KeyProviders)+1)
	for _, k := range enc.KeyProviders {
		names = append(names, k.String())
	}
	if enc.MoreKeyProviders > 0 {
		names = append(names, fmt.Sprintf("%d more", enc.MoreKeyProviders))
	}
	return strings.Join(names, ", ")
}

// clientEncryption is what kl status says of a state's client-side
// encryption: how its current version is encrypted and what the state and
// its environment require; "" for a plaintext state that requires
// nothing.
func clientEncryption(s *kilolock.State) string {
	var parts []string
	if enc := s.ClientEncryption; enc != nil {
		what := "client-side (OpenTofu"
		if enc.Version != "" {
			what += " " + enc.Version
		}
		what += ")"
		if p := keyProviders(enc); p != "" {
			what += ", key providers " + p
		} else {
			what += ", key providers known after the next write"
		}
		parts = append(parts, what)
	} else if s.Current > 0 {
		parts = append(parts, "none: the current version is plaintext")
	}
	switch {
	case s.RequireClientEncryption:
		parts = append(parts, "required by the state; plaintext writes are refused")
	case s.EnvironmentRequiresClientEncryption:
		parts = append(parts, "required by its environment; plaintext writes are refused")
	case s.ClientEncryption == nil:
		return ""
	}
	return cell(strings.Join(parts, "; "))
}

// holders names who holds locks, "-" for nobody.
func holders(locks []kilolock.Lock) string {
	if len(locks) == 0 {
		return "-"
	}
	who := make([]string, len(locks))
	for i, l := range locks {
		who[i] = orDash(l.Info.Who)
	}
	return strings.Join(who, ", ")
}

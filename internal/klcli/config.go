package klcli

import (
	"context"
	"fmt"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/client"
)

// StateConfigCmd is kl state config.
type StateConfigCmd struct {
	JSONFlag
	Name               string `arg:"" help:"State name." predictor:"state"`
	ExclusiveLocks     *bool  `negatable:"" help:"=true: one lock holder at a time (classic); =false: optimistic, many holders, each write merged or refused with 409. Only while nobody holds a lock."`
	AllowLineageChange *bool  `negatable:"" help:"Let the next writes carry another lineage (=false to refuse again)."`
	SharedPlanLocks    *bool  `negatable:"" help:"=true (the default): a plan takes a shared read lock, granted beside an apply and other plans; =false: plans wait like applies."`
	// RequireClientEncryption is named as the state's setting is.
	RequireClientEncryption *bool `negatable:"" help:"Refuse plaintext writes: the state takes only OpenTofu client-side encrypted ones (terraform { encryption { … } }); =false lifts it. Its environment may require it too (kl env config)."`
}

// run runs kl state config.
func (c *StateConfigCmd) run(ctx context.Context, g *Globals) error {
	return g.with(ctx, c.JSON, func(cli *CLI) error {
		return cli.ConfigureState(ctx, c.Name, client.StateConfig{ExclusiveLocks: c.ExclusiveLocks, AllowLineageChange: c.AllowLineageChange,
			SharedPlanLocks: c.SharedPlanLocks, RequireClientEncryption: c.RequireClientEncryption})
	})
}

// StateConfigJSON is the JSON output of ConfigureState: the settings it
// changed (the others are absent).
type StateConfigJSON struct {
	OK                 bool              `json:"ok"`
	State              string            `json:"state"`
	LockMode           kilolock.LockMode `json:"lock_mode,omitempty"`
	AllowLineageChange *bool             `json:"allow_lineage_change,omitempty"`
	SharedPlanLocks    *bool             `json:"shared_plan_locks,omitempty"`
	// RequireClientEncryption is named as the state's setting is.
	RequireClientEncryption *bool `json:"require_client_encryption,omitempty"`
}

// ConfigureState changes a state's settings: its lock mode (exclusive or
// optimistic; refused while anyone holds a lock), how plans lock, whether
// the next writes may carry another lineage, for a deliberate `state push
// -force` of a state from another lineage, and whether it takes only
// OpenTofu client-side encrypted writes. With no setting given it shows
// them (StateSettings).
func (c *CLI) ConfigureState(ctx context.Context, name string, s client.StateConfig) error {
	if s.ExclusiveLocks == nil && s.AllowLineageChange == nil && s.SharedPlanLocks == nil && s.RequireClientEncryption == nil {
		return c.StateSettings(ctx, name)
	}
	if out, err := c.api().Configure(ctx, name, s); err != nil {
		return err
	} else if !out.OK {
		return fmt.Errorf("server did not confirm the configuration of state %q", name)
	}
	out := StateConfigJSON{OK: true, State: name, AllowLineageChange: s.AllowLineageChange, SharedPlanLocks: s.SharedPlanLocks, RequireClientEncryption: s.RequireClientEncryption}
	if s.ExclusiveLocks != nil {
		out.LockMode = kilolock.LockOptimistic
		if *s.ExclusiveLocks {
			out.LockMode = kilolock.LockExclusive
		}
	}
	return c.show(out, func() error {
		switch out.LockMode {
		case kilolock.LockExclusive:
			fmt.Fprintf(c.Out, "state %s: exclusive locks; one holder at a time, as Terraform locks by default\n", name)
		case kilolock.LockOptimistic:
			fmt.Fprintf(c.Out, "state %s: optimistic locks; many holders at once, each write merged at commit or refused with 409 (see `kl conflicts %s`)\n", name, name)
		}
		switch {
		case s.SharedPlanLocks == nil:
		case *s.SharedPlanLocks:
			fmt.Fprintf(c.Out, "state %s: plans take shared read locks; a plan runs beside an apply and other plans, never waits\n", name)
		default:
			fmt.Fprintf(c.Out, "state %s: plans lock like applies; a plan waits for an apply (classic Terraform)\n", name)
		}
		switch {
		case s.RequireClientEncryption == nil:
		case *s.RequireClientEncryption:
			fmt.Fprintf(c.Out, "state %s: client-side encryption required; plaintext writes are refused (409 client_encryption_required), OpenTofu's encrypted ones go in\n", name)
		default:
			fmt.Fprintf(c.Out, "state %s: client-side encryption not required by the state (its environment may still require it)\n", name)
		}
		var err error
		switch {
		case s.AllowLineageChange == nil:
		case *s.AllowLineageChange:
			_, err = fmt.Fprintf(c.Out, "state %s: lineage change allowed; the next write may carry another lineage\n", name)
		default:
			_, err = fmt.Fprintf(c.Out, "state %s: lineage change refused; writes must keep the stored lineage\n", name)
		}
		return err
	})
}

// StateSettingsJSON is the JSON output of StateSettings: a state's
// settings as they stand.
type StateSettingsJSON struct {
	State    string            `json:"state"`
	LockMode kilolock.LockMode `json:"lock_mode"`
	// SharedPlanLocks is nil when the state follows the server's default.
	SharedPlanLocks                     *bool `json:"shared_plan_locks"`
	AllowLineageChange                  bool  `json:"allow_lineage_change"`
	RequireClientEncryption             bool  `json:"require_client_encryption"`
	EnvironmentRequiresClientEncryption bool  `json:"environment_requires_client_encryption"`
}

// StateSettings shows a state's settings, each with the flag of kl state
// config that changes it. ErrNotFound when the state does not exist.
func (c *CLI) StateSettings(ctx context.Context, name string) error {
	st, err := c.api().Status(ctx, name)
	if err != nil {
		return err
	}
	out := StateSettingsJSON{State: name, LockMode: st.LockMode, SharedPlanLocks: st.SharedPlanLocks, AllowLineageChange: st.AllowLineageChange,
		RequireClientEncryption: st.RequireClientEncryption, EnvironmentRequiresClientEncryption: st.EnvironmentRequiresClientEncryption}
	return c.show(out, func() error {
		plans := "the server's default"
		if st.SharedPlanLocks != nil {
			plans = fmt.Sprint(*st.SharedPlanLocks)
		}
		encryption := fmt.Sprint(st.RequireClientEncryption)
		if st.EnvironmentRequiresClientEncryption {
			encryption += " (its environment requires it)"
		}
		w := c.table()
		row(w, "SETTING", "VALUE", "CHANGE WITH")
		row(w, "lock mode", string(st.LockMode), "--exclusive-locks=true|false")
		row(w, "shared plan locks", plans, "--shared-plan-locks=true|false")
		row(w, "allow lineage change", fmt.Sprint(st.AllowLineageChange), "--allow-lineage-change=true|false")
		row(w, "require client encryption", encryption, "--require-client-encryption=true|false")
		return w.Flush()
	})
}

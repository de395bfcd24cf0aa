package klcli

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/alecthomas/kong"
	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/client"
	"github.com/kilolock/kilolock/history"
	"github.com/kilolock/kilolock/httpbackend"
)

// StateCmds are kl state list|show|rm|mv|split|merge|config|pull|archive|restore.
type StateCmds struct {
	List struct {
		stateArg
		Pattern string `arg:"" optional:"" help:"Only addresses matching this: a prefix (module.demo, aws_instance.web) or a pattern with *."`
	} `cmd:"" help:"List the addresses in a state's current version, optionally matching a pattern." example:"kl state list prod module.network"`
	Show struct {
		stateArg
		Address string `arg:"" help:"Instance address."`
	} `cmd:"" help:"Show one instance of a state's current version." example:"kl state show prod 'aws_instance.web[0]'"`
	Rm    StateRmCmd `cmd:"" help:"Remove instances, resources or modules from a state (a new version)." example:"kl state rm prod aws_instance.old --dry-run"`
	Mv    StateMvCmd `cmd:"" help:"Move an instance, resource or module to another address (a new version); with --to-state, into another state (one transaction, a new version of each)." example:"kl state mv prod aws_instance.web module.app.aws_instance.web --dry-run"`
	Split struct {
		JSONFlag
		Name    string   `arg:"" help:"State to split." predictor:"state"`
		ToState string   `required:"" name:"to-state" help:"The new state, in the same environment: its own lineage, the source's lock mode and quota." placeholder:"NEW"`
		Address []string `required:"" sep:"none" help:"Address to move into the new state (repeat the flag for more): an instance, a resource or a module." placeholder:"ADDR"`
		DryRun  bool     `help:"Show what would move and the dependencies that would cross the states; write nothing."`
	} `cmd:"" help:"Move addresses into a new state of the same environment (one transaction)." example:"kl state split prod --to-state prod-net --address module.net --dry-run"`
	Merge struct {
		JSONFlag
		Name   string `arg:"" help:"State whose instances all move; it is then archived." predictor:"state"`
		Into   string `required:"" help:"State that receives them." placeholder:"TO"`
		DryRun bool   `help:"Show what would move; write nothing."`
	} `cmd:"" help:"Move everything of a state into another, then archive it (one transaction)." example:"kl state merge prod-net --into prod --dry-run"`
	Config  StateConfigCmd      `cmd:"" help:"Show a state's settings, or change them: its lock mode, how plans lock, whether it may change lineage, whether it requires client-side encryption. Example: kl state config prod --exclusive-locks=false."`
	Pull    StatePullCmd        `cmd:"" help:"Write a version of a state to stdout; with --address, a slice of it." example:"kl state pull prod @3 > prod-3.tfstate"`
	Archive stateLifecycleFlags `cmd:"" help:"Archive a tenant's state: it refuses writes until restored (control plane)." example:"kl state archive --workspace ws_0123456789abcdef --env env_0123456789abcdef old-app"`
	Restore stateLifecycleFlags `cmd:"" help:"Restore an archived tenant state (control plane)." example:"kl state restore --workspace ws_0123456789abcdef --env env_0123456789abcdef old-app"`
}

// Run runs the subcommand.
func (c *StateCmds) Run(ctx context.Context, g *Globals, k *kong.Context) error {
	switch k.Selected().Name {
	case "list":
		return g.with(ctx, c.List.JSON, func(cli *CLI) error { return cli.StateList(ctx, c.List.Name, c.List.Pattern) })
	case "show":
		return g.with(ctx, c.Show.JSON, func(cli *CLI) error { return cli.StateShow(ctx, c.Show.Name, c.Show.Address) })
	case "rm":
		return c.Rm.run(ctx, g)
	case "mv":
		return c.Mv.run(ctx, g)
	case "split":
		a := &c.Split
		req := httpbackend.MoveRequest{Operation: history.OperationSplit, From: a.Name, To: a.ToState, DryRun: a.DryRun}
		for _, addr := range a.Address {
			req.Addresses = append(req.Addresses, history.MovePair{From: addr})
		}
		return g.with(ctx, a.JSON, func(cli *CLI) error { return cli.MoveStates(ctx, req) })
	case "merge":
		a := &c.Merge
		req := httpbackend.MoveRequest{Operation: history.OperationMerge, From: a.Name, To: a.Into, DryRun: a.DryRun}
		return g.with(ctx, a.JSON, func(cli *CLI) error { return cli.MoveStates(ctx, req) })
	case "config":
		return c.Config.run(ctx, g)
	case "pull":
		return c.Pull.run(ctx, g)
	case "archive":
		return c.Archive.set(ctx, g, true)
	case "restore":
		return c.Restore.set(ctx, g, false)
	}
	return unknownCommand(k)
}

// StateRmCmd is kl state rm NAME ADDR…, as tofu state rm takes them;
// --address is the older spelling, kept.
type StateRmCmd struct {
	stateArg
	Addresses []string `arg:"" optional:"" name:"address" help:"Addresses to remove: instances, resources or modules."`
	Address   []string `name:"address" sep:"none" help:"An address to remove (repeat the flag for more); the same as the arguments." placeholder:"ADDR"`
	DryRun    bool     `help:"Show what would be removed; write nothing."`
}

// run runs kl state rm.
func (c *StateRmCmd) run(ctx context.Context, g *Globals) error {
	addrs := append(append([]string(nil), c.Addresses...), c.Address...)
	if len(addrs) == 0 {
		return &UsageError{Message: "no address to remove", Hint: "kl state rm NAME ADDR… (kl state rm prod aws_instance.old --dry-run)"}
	}
	return g.with(ctx, c.JSON, func(cli *CLI) error { return cli.StateRm(ctx, c.Name, addrs, c.DryRun) })
}

// StateMvCmd is kl state mv NAME SRC DST, as tofu state mv takes them;
// --from and --to are the older spelling, kept as deprecated aliases.
type StateMvCmd struct {
	stateArg
	Src     string `arg:"" optional:"" help:"Address to move: an instance or a resource (with --to-state, a module too)."`
	Dst     string `arg:"" optional:"" help:"Its new address, e.g. module.demo.aws_instance.web (with --to-state it defaults to SRC)."`
	From    string `hidden:"" help:"Deprecated: the address to move, now the second argument." placeholder:"ADDR"`
	To      string `hidden:"" help:"Deprecated: the new address, now the third argument." placeholder:"ADDR"`
	ToState string `name:"to-state" help:"Move into this other state, in one transaction with the source." placeholder:"OTHER"`
	DryRun  bool   `help:"Show the move; write nothing."`
}

// run runs kl state mv.
func (c *StateMvCmd) run(ctx context.Context, g *Globals) error {
	usage := "kl state mv NAME SRC DST, or kl state mv NAME SRC [DST] --to-state OTHER"
	src, err := oneOf("the address to move", c.Src, c.From, "--from", usage)
	if err != nil {
		return err
	}
	if c.From != "" || c.To != "" {
		fmt.Fprintf(g.stderr(), "kl: warning: --from and --to of kl state mv are deprecated; give the addresses as arguments: %s\n", usage)
	}
	if c.ToState != "" {
		dst := c.Dst
		if dst == "" {
			dst = c.To
		}
		return c.moveToState(ctx, g, src, dst)
	}
	dst, err := oneOf("the new address", c.Dst, c.To, "--to", usage)
	if err != nil {
		return err
	}
	return g.with(ctx, c.JSON, func(cli *CLI) error { return cli.StateMv(ctx, c.Name, src, dst, c.DryRun) })
}

// StateList prints the addresses of the current version's instances that
// match pattern, one a line, as `tofu state list` does.
func (c *CLI) StateList(ctx context.Context, name, pattern string) error {
	l, err := c.api().StateList(ctx, name, pattern)
	if err != nil {
		return err
	}
	list := nonNil(l.Instances)
	return c.show(map[string]any{"state": name, "instances": list}, func() error {
		var b strings.Builder
		for _, in := range list {
			b.WriteString(cell(in.ID))
			b.WriteByte('\n')
		}
		return c.printf("%s", b.String())
	})
}

// StateShow prints one instance of the current version.
func (c *CLI) StateShow(ctx context.Context, name, address string) error {
	return c.showInstance(ctx, name, kilolock.Latest, address)
}

// StateRm removes instances, resources or modules from a state as a new
// version (source state-op); dryRun only shows what would go.
func (c *CLI) StateRm(ctx context.Context, name string, addresses []string, dryRun bool) error {
	if len(addresses) == 0 {
		return &UsageError{Message: "kl state rm needs at least one address", Hint: "e.g. kl state rm NAME aws_instance.web"}
	}
	res, err := c.api().StateRm(ctx, name, client.StateRmRequest{Addresses: addresses, DryRun: dryRun})
	if err != nil {
		return err
	}
	return c.writeStateOp(res)
}

// StateMv moves an instance or resource to another address as a new
// version (source state-op); dryRun only shows the move.
func (c *CLI) StateMv(ctx context.Context, name, from, to string, dryRun bool) error {
	res, err := c.api().StateMv(ctx, name, client.StateMvRequest{From: from, To: to, DryRun: dryRun})
	if err != nil {
		return err
	}
	return c.writeStateOp(res)
}

func (c *CLI) writeStateOp(res *history.StateOpResult) error {
	return c.show(res, func() error {
		p := &res.Plan
		verbs := history.DiffVerbs
		if res.DryRun {
			verbs = history.PlanVerbs
		}
		fmt.Fprintf(c.Out, "%s on state %s, from %s:\n", p.Operation, p.State, versionText(&p.Base))
		p.ChangeSet.WriteText(c.Out, verbs)
		switch {
		case res.DryRun:
			writeDryRunEnd(c.Out, withoutDryRun)
		case res.Version == nil:
			fmt.Fprintln(c.Out, "Nothing changed: no version was written.")
		default:
			fmt.Fprintf(c.Out, "Written as version %s (source state-op).\n", versionText(res.Version))
		}
		return nil
	})
}

// moveNotes are what kl history says of name's versions a move made, by
// version number: "3 instance(s) to b @7", "3 instance(s) from a @9".
func (c *CLI) moveNotes(ctx context.Context, name string, vs []kilolock.Version) (map[int64]string, []history.MoveRecord, error) {
	if !slices.ContainsFunc(vs, func(v kilolock.Version) bool { return v.Source == kilolock.SourceMove }) {
		return nil, nil, nil
	}
	l, err := c.api().Moves(ctx, name)
	if err != nil {
		return nil, nil, err
	}
	recs := l.Moves
	notes := map[int64]string{}
	for _, m := range recs {
		if m.From == name {
			notes[m.FromVersion] = fmt.Sprintf("%d instance(s) to %s @%d", m.Instances, m.To, m.ToVersion)
		}
		if m.To == name {
			notes[m.ToVersion] = fmt.Sprintf("%d instance(s) from %s @%d", m.Instances, m.From, m.FromVersion)
		}
	}
	return notes, recs, nil
}

// MoveStates runs a move between states and prints what moved, the edges
// it makes cross the states, and what each configuration must do.
func (c *CLI) MoveStates(ctx context.Context, req httpbackend.MoveRequest) error {
	res, err := c.api().Move(ctx, req)
	if err != nil {
		return err
	}
	return c.show(res, func() error {
		var b strings.Builder
		verb := map[string]string{history.OperationMove: "Moved", history.OperationSplit: "Split", history.OperationMerge: "Merged"}[res.Operation]
		if res.DryRun {
			verb = "Would move"
		}
		fmt.Fprintf(&b, "%s %d instance(s) from %s to %s:\n", verb, len(res.Moved), res.From, res.To)
		for _, mv := range res.Moved {
			if mv.From == mv.To {
				fmt.Fprintf(&b, "  %s\n", cell(mv.From))
			} else {
				fmt.Fprintf(&b, "  %s -> %s\n", cell(mv.From), cell(mv.To))
			}
		}
		if len(res.Edges) > 0 {
			b.WriteString("Dependencies that will cross the two states:\n")
			for _, e := range res.Edges {
				switch e.Kind {
				case history.EdgeLeftOnMoved:
					fmt.Fprintf(&b, "  %s (stays in %s) depends on %s (moves)\n", cell(e.From), res.From, cell(e.To))
				case history.EdgeMovedOnLeft:
					fmt.Fprintf(&b, "  %s (moves) depends on %s (stays in %s)\n", cell(e.From), cell(e.To), res.From)
				default:
					fmt.Fprintf(&b, "  %s of %s holds a value of %s (moves): it likely reads it\n", cell(e.From), res.From, cell(e.To))
				}
			}
		}
		if v := res.Versions; !res.DryRun && v != nil {
			fmt.Fprintf(&b, "Written in one transaction: %s @%d (source move: %d instance(s) to %s @%d) and %s @%d (%d instance(s) from %s @%d).\n",
				res.From, v.From.Number, len(res.Moved), res.To, v.To.Number, res.To, v.To.Number, len(res.Moved), res.From, v.From.Number)
			if res.Archived {
				fmt.Fprintf(&b, "State %s is archived (not deleted): its history stays readable.\n", res.From)
			}
		}
		b.WriteString("What the configurations must do:\n")
		for i, s := range res.Config {
			fmt.Fprintf(&b, "  %d. %s\n", i+1, s)
		}
		if res.DryRun {
			writeDryRunEnd(&b, withoutDryRun)
		}
		return c.printf("%s", b.String())
	})
}

// moveToState runs kl state mv --to-state: --to renames on the way.
func (c *StateMvCmd) moveToState(ctx context.Context, g *Globals, src, dst string) error {
	req := httpbackend.MoveRequest{Operation: history.OperationMove, From: c.Name, To: c.ToState, DryRun: c.DryRun,
		Addresses: []history.MovePair{{From: src, To: dst}}}
	return g.with(ctx, c.JSON, func(cli *CLI) error { return cli.MoveStates(ctx, req) })
}

// StateConfigCmd is kl state config.
type StateConfigCmd struct {
	stateArg
	ExclusiveLocks     *bool `negatable:"" help:"=true: one lock holder at a time (classic); =false: optimistic, many holders, each write merged or refused with 409. Only while nobody holds a lock."`
	AllowLineageChange *bool `negatable:"" help:"Let the next writes carry another lineage (=false to refuse again)."`
	SharedPlanLocks    *bool `negatable:"" help:"=true (the default): a plan takes a shared read lock, granted beside an apply and other plans; =false: plans wait like applies."`
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
		// Each setting changed, in this order: what it now is.
		for _, set := range []struct {
			v       *bool
			yes, no string
		}{
			{s.ExclusiveLocks, "exclusive locks; one holder at a time, as Terraform locks by default",
				"optimistic locks; many holders at once, each write merged at commit or refused with 409 (see `kl conflicts %[1]s`)"},
			{s.SharedPlanLocks, "plans take shared read locks; a plan runs beside an apply and other plans, never waits",
				"plans lock like applies; a plan waits for an apply (classic Terraform)"},
			{s.RequireClientEncryption, "client-side encryption required; plaintext writes are refused (409 client_encryption_required), OpenTofu's encrypted ones go in",
				"client-side encryption not required by the state (its environment may still require it)"},
			{s.AllowLineageChange, "lineage change allowed; the next write may carry another lineage",
				"lineage change refused; writes must keep the stored lineage"},
		} {
			if set.v == nil {
				continue
			}
			text := set.no
			if *set.v {
				text = set.yes
			}
			if _, err := fmt.Fprintf(c.Out, "state %[1]s: "+text+"\n", name); err != nil {
				return err
			}
		}
		return nil
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

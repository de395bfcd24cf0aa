package klcli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/alecthomas/kong"
	tfjson "github.com/hashicorp/terraform-json"
	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/client"
	"github.com/kilolock/kilolock/orchestrate"
	"github.com/kilolock/kilolock/quota"
	"github.com/kilolock/kilolock/tenancy"
)

// QuotaCmds are kl quota remaining|status|check|set|list.
type QuotaCmds struct {
	Remaining struct {
		JSONFlag
		quotaTargetFlags
	} `cmd:"" help:"Show the headroom of a state and of its environment: managed instances, soft and hard limits, what remains." example:"kl quota remaining --state prod"`
	Status QuotaStatusCmd `cmd:"" help:"Show a state's standing with its latest quota refusal and warning (tofu prints only the status of a refused write)." example:"kl quota status prod"`
	Check  QuotaCheckCmd  `cmd:"" help:"Admit a saved plan: exit 0 within the limits, 0 with a WARN line past a soft limit, 1 past a hard limit." example:"tofu plan -out plan.tfplan && kl quota check --tf-plan plan.tfplan"`
	Set    QuotaSetCmd    `cmd:"" help:"Set or clear the limit of a state, an environment, or a workspace's default (control plane)." example:"kl quota set --state prod --soft 80 --hard 100"`
	List   JSONFlag       `cmd:"" help:"List the limits set (control plane)." example:"kl quota list"`
}

// Run runs the subcommand.
func (c *QuotaCmds) Run(ctx context.Context, g *Globals, k *kong.Context) error {
	switch k.Selected().Name {
	case "remaining":
		return g.showQuota(ctx, c.Remaining.JSON, c.Remaining.State, c.Remaining.Dir, false)
	case "status":
		return c.Status.run(ctx, g)
	case "check":
		return c.Check.run(ctx, g)
	case "set":
		return c.Set.run(ctx, g)
	case "list":
		return listed(ctx, g, c.List.JSON, func(api *client.Client) ([]kilolock.QuotaSetting, error) { return api.Quotas(ctx) },
			[]string{"SCOPE", "TARGET", "LIMIT", "UPDATED"}, func(q kilolock.QuotaSetting) []string {
				return []string{string(q.Scope), cell(q.Target), q.Limit.String(), formatTime(q.Updated)}
			})
	}
	return unknownCommand(k)
}

// Help is kl quota --help's long text: the model.
func (c *QuotaCmds) Help() string {
	return `Quotas limit the managed resource instances of a state and of an environment (the
sum of its active states). Data sources and deposed objects do not count, so a
create_before_destroy replacement never spikes past a limit it fits at rest;
archived states do not count toward their environment. Exactly the hard limit is
allowed, one more is refused (403 quota_exceeded, nothing written); above the
soft limit is allowed with a warning. A state's limit is its own, else its
workspace's default for states, else kld --default-state-quota; an
environment's is its own, else its workspace's default for environments;
--unlimited stops the search.

Without --state (or NAME), kl quota remaining, status and check ask the state of
the directory's initialized http backend, at its own address with its
credentials (--dir, default the current directory).`
}

// quotaTargetFlags name the state kl quota asks.
type quotaTargetFlags struct {
	State string `help:"State name in the API (WS.ENV.NAME for a tenant's); default: the directory's initialized http backend." placeholder:"NAME" predictor:"state"`
	Dir   string `default:"." help:"The configuration directory whose initialized backend names the state." type:"path"`
}

// QuotaStatusCmd is kl quota status [NAME].
type QuotaStatusCmd struct {
	JSONFlag
	quotaTargetFlags
	Name string `arg:"" optional:"" help:"State name (as --state)." predictor:"state"`
}

// run runs kl quota status.
func (c *QuotaStatusCmd) run(ctx context.Context, g *Globals) error {
	if c.Name != "" && c.State != "" && c.Name != c.State {
		return &UsageError{Message: "NAME and --state name two states", Hint: "name the state once: kl quota status NAME"}
	}
	state := c.State
	if state == "" {
		state = c.Name
	}
	return g.showQuota(ctx, c.JSON, state, c.Dir, true)
}

// showQuota prints the standing of the state state and dir name, with its
// latest refusal and warning when events.
func (g *Globals) showQuota(ctx context.Context, asJSON bool, state, dir string, events bool) error {
	return g.withQuota(ctx, state, dir, func(qb *Conn, name string) error {
		if state != "" { // qb is then g's Conn, not a configuration's lane
			g.warnMissingState(ctx, qb, state)
		}
		st, err := qb.QuotaStatus(ctx, name, 0)
		if err != nil {
			return err
		}
		cli := &CLI{Out: g.out(), JSON: asJSON}
		if asJSON {
			return cli.writeJSON(st)
		}
		return cli.writeQuota(st, events)
	})
}

// withQuota runs f on the Conn and the state kl quota asks: with
// --database, the database; with a state named (--state or NAME), the
// server's JSON API (--server, --token); otherwise the initialized http
// backend of dir, asked at the state's own address with the
// configuration's credentials (--server and --token override them).
func (g *Globals) withQuota(ctx context.Context, state, dir string, f func(*Conn, string) error) error {
	var b *orchestrate.TFBackend
	if state == "" {
		var err error
		if b, err = orchestrate.ReadTFBackend(dir); err != nil {
			return err
		}
		state = b.State
	}
	open := g.open
	if g.Database == "" && b != nil {
		open = func(context.Context) (*Conn, error) { return g.laneQuota(b) }
	}
	qb, err := open(ctx)
	if err != nil {
		return err
	}
	defer qb.Close()
	return f(qb, state)
}

// quotaEventText says a quota event in one line, "none" for nil.
func quotaEventText(e *kilolock.QuotaEvent) string {
	if e == nil {
		return "none"
	}
	return formatTime(e.Created) + "  " + cell(e.Describe())
}

// writeQuota prints a state's standing: a row per scope counted and, with
// events, its latest refusal and warning.
func (c *CLI) writeQuota(st *kilolock.QuotaStatus, events bool) error {
	w := c.table()
	row(w, "SCOPE", "TARGET", "MANAGED", "SOFT", "HARD", "REMAINING", "LIMIT FROM")
	for _, q := range st.Counts {
		soft, hard, left := "-", "unlimited", "-"
		if !q.Limit.Unlimited {
			hard, left = strconv.FormatInt(q.Limit.Hard, 10), strconv.FormatInt(q.Remaining, 10)
			if q.Limit.Soft > 0 {
				soft = strconv.FormatInt(q.Limit.Soft, 10)
			}
		}
		row(w, q.Scope, cell(q.Target), strconv.FormatInt(q.Result, 10), soft, hard, left, q.From)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if st.Archived {
		fmt.Fprintln(c.Out, "The state is archived: it does not count toward its environment.")
	}
	if !events {
		return nil
	}
	fmt.Fprintln(c.Out)
	w = c.table()
	for _, e := range []struct {
		label string
		ev    *kilolock.QuotaEvent
	}{{"latest refusal:", st.LatestRefusal}, {"latest warning:", st.LatestWarning}} {
		row(w, e.label, quotaEventText(e.ev))
	}
	return w.Flush()
}

// QuotaCheckCmd is kl quota check.
type QuotaCheckCmd struct {
	JSONFlag
	quotaTargetFlags
	TFPlan     string `name:"tf-plan" help:"A saved plan (tofu plan -out FILE), read with the CLI's show -json in --dir." placeholder:"FILE"`
	TFPlanJSON string `name:"tf-plan-json" help:"A plan as show -json writes it; - reads stdin." placeholder:"FILE"`
	TFBinFlag
}

// maxPlanJSON bounds a plan read with --tf-plan-json.
const maxPlanJSON = 1 << 30

// run runs kl quota check.
func (c *QuotaCheckCmd) run(ctx context.Context, g *Globals) error {
	if (c.TFPlan == "") == (c.TFPlanJSON == "") {
		return &UsageError{Message: "kl quota check reads one plan: --tf-plan FILE or --tf-plan-json FILE|-", Hint: "save a plan with `tofu plan -out plan.tfplan`, then kl quota check --tf-plan plan.tfplan"}
	}
	plan, err := c.readPlan(ctx, g.cliOutput())
	if err != nil {
		return err
	}
	return g.withQuota(ctx, c.State, c.Dir, func(qb *Conn, name string) error {
		out := g.out()
		if c.JSON {
			out = io.Discard
		}
		st, err := qb.admission(name, out, "").Admit(ctx, quota.CountPlan(plan))
		if c.JSON && st != nil {
			if jerr := (&CLI{Out: g.out()}).writeJSON(st); jerr != nil {
				return jerr
			}
		}
		return err
	})
}

// readPlan reads the plan --tf-plan or --tf-plan-json names; the CLI's
// stderr goes to log.
func (c *QuotaCheckCmd) readPlan(ctx context.Context, log io.Writer) (*tfjson.Plan, error) {
	if c.TFPlan != "" {
		return orchestrate.ShowPlan(ctx, c.Dir, c.TFBin, c.TFPlan, log)
	}
	var r io.Reader = os.Stdin
	if c.TFPlanJSON != "-" {
		f, err := os.Open(c.TFPlanJSON)
		if err != nil {
			return nil, &UsageError{Message: err.Error(), Hint: "write the plan with `tofu show -json plan.tfplan > plan.json`"}
		}
		defer f.Close()
		r = f
	}
	var p tfjson.Plan
	if err := json.NewDecoder(io.LimitReader(r, maxPlanJSON)).Decode(&p); err != nil {
		return nil, &UsageError{Message: fmt.Sprintf("%s is not a plan as show -json writes it: %v", c.TFPlanJSON, err), Hint: "write it with `tofu show -json plan.tfplan`"}
	}
	return &p, nil
}

// QuotaSetCmd is kl quota set.
type QuotaSetCmd struct {
	JSONFlag
	State      string `help:"The state: its name (WS.ENV.NAME for a tenant's), or its name in --env of --workspace." placeholder:"NAME" predictor:"state"`
	Env        string `help:"The environment (env_…): its limit, on the sum of its active states." placeholder:"ENV"`
	Workspace  string `help:"The workspace (ws_…) of --env, or the one whose default --default-for sets." placeholder:"WS"`
	DefaultFor string `name:"default-for" help:"With --workspace alone: set the default of each of its states (states) or of each of its environments (environments)." placeholder:"WHAT"`
	Soft       int64  `help:"Above this many managed instances a write warns (0: no soft limit)." placeholder:"N"`
	Hard       int64  `help:"Exactly this many is allowed, one more refused." placeholder:"M"`
	Unlimited  bool   `help:"No limit: stops a default above from applying."`
	Clear      bool   `help:"Remove the target's own limit: it inherits the default again."`
}

// run runs kl quota set.
func (c *QuotaSetCmd) run(ctx context.Context, g *Globals) error {
	ch, err := c.change()
	if err != nil {
		return err
	}
	return g.with(ctx, c.JSON, func(cli *CLI) error {
		if ch.Scope == kilolock.QuotaState {
			g.warnMissingState(ctx, cli.Conn, ch.Target)
		}
		return cli.SetQuota(ctx, ch)
	})
}

// change is the change the flags ask for.
func (c *QuotaSetCmd) change() (tenancy.QuotaChange, error) {
	var ch tenancy.QuotaChange
	usage := func(msg string) error {
		return &UsageError{Message: msg, Hint: "kl quota set --state NAME | --env ENV [--workspace WS] | --workspace WS --default-for states|environments, with --soft N --hard M, --unlimited or --clear"}
	}
	switch {
	case c.State != "" && c.DefaultFor != "":
		return ch, usage("--default-for sets a workspace's default, not a state's limit")
	case c.State != "" && (c.Env != "") != (c.Workspace != ""):
		return ch, usage("a state in an environment takes both --env and --workspace")
	case c.State != "" && c.Env != "":
		name, err := tenancy.TenantStateName(c.Workspace, c.Env, c.State)
		if err != nil {
			return ch, err
		}
		ch.QuotaTarget = kilolock.QuotaTarget{Scope: kilolock.QuotaState, Target: name}
	case c.State != "":
		ch.QuotaTarget = kilolock.QuotaTarget{Scope: kilolock.QuotaState, Target: c.State}
	case c.Env != "" && c.DefaultFor != "":
		return ch, usage("--default-for sets a workspace's default; an environment's own limit takes no --default-for")
	case c.Env != "":
		ch.QuotaTarget, ch.Workspace = kilolock.QuotaTarget{Scope: kilolock.QuotaEnvironment, Target: c.Env}, c.Workspace
	case c.Workspace != "" && c.DefaultFor == "states":
		ch.QuotaTarget = kilolock.QuotaTarget{Scope: kilolock.QuotaWorkspaceStates, Target: c.Workspace}
	case c.Workspace != "" && c.DefaultFor == "environments":
		ch.QuotaTarget = kilolock.QuotaTarget{Scope: kilolock.QuotaWorkspaceEnvironments, Target: c.Workspace}
	case c.Workspace != "" && c.DefaultFor != "":
		return ch, usage(fmt.Sprintf("--default-for %s: say states or environments", c.DefaultFor))
	case c.Workspace != "":
		return ch, usage("--workspace alone sets a default: say of what with --default-for states or --default-for environments")
	default:
		return ch, usage("name what to limit")
	}
	given := 0
	for _, b := range []bool{c.Unlimited, c.Clear, c.Hard != 0 || c.Soft != 0} {
		if b {
			given++
		}
	}
	switch {
	case given != 1:
		return ch, usage("give one of --soft/--hard, --unlimited or --clear")
	case c.Unlimited:
		ch.Limit = &quota.Limit{Unlimited: true}
	case !c.Clear:
		ch.Limit = &quota.Limit{Soft: c.Soft, Hard: c.Hard}
	}
	return ch, nil
}

// SetQuota sets or clears a limit.
func (c *CLI) SetQuota(ctx context.Context, ch tenancy.QuotaChange) error {
	if _, err := c.api().SetQuota(ctx, client.QuotaRequest{QuotaChange: ch, Clear: ch.Limit == nil}); err != nil {
		return err
	}
	return c.show(ch, func() error {
		if ch.Limit == nil {
			fmt.Fprintf(c.Out, "Cleared the limit of %s %s: it inherits its default again.\n", ch.Scope, cell(ch.Target))
			return nil
		}
		fmt.Fprintf(c.Out, "The limit of %s %s is %s.\n", ch.Scope, cell(ch.Target), ch.Limit)
		return nil
	})
}

// QuotaStatus is orchestrate.QuotaStatus over b: on the JSON API, or,
// for a configuration's lane (laneQuota), at the state's own address.
func (b *Conn) QuotaStatus(ctx context.Context, name string, delta int64) (*kilolock.QuotaStatus, error) {
	return orchestrate.QuotaStatus(ctx, b.api, b.lane, name, delta)
}

// admission is the admission of state's plans over b, printed to out
// after prefix.
func (b *Conn) admission(state string, out io.Writer, prefix string) *orchestrate.Admission {
	return &orchestrate.Admission{Client: b.api, Lane: b.lane, State: state, Out: out, Prefix: prefix}
}

// laneQuota is the backend of an initialized backend b that asks quotas
// at its state's address on its server (--server overrides), with its
// credentials (--token overrides them), so that the configuration's token
// is enough.
func (g *Globals) laneQuota(b *orchestrate.TFBackend) (*Conn, error) {
	server := b.Server
	if g.Server != "" {
		server = g.Server
	}
	user, password, headers := orchestrate.BackendCredentials(b.Config)
	hb, err := NewConn(server, HTTPOptions{Token: g.Token, Timeout: g.Timeout, Actor: g.Actor, Username: user, Password: password, Headers: headers})
	if err != nil {
		return nil, err
	}
	hb.lane = true
	return hb, nil
}

// admissionConn is what answers the admission of the initialized
// backend b's plans: the database with --database, else the state's own
// address. Close it.
func (g *Globals) admissionConn(ctx context.Context, b *orchestrate.TFBackend) (*Conn, error) {
	if g.Database != "" {
		return Open(ctx, Target{Database: g.Database, KeyFile: g.KeyFile, Actor: g.Actor})
	}
	return g.laneQuota(b)
}

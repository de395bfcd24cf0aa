package orchestrate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/terraform-exec/tfexec"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/client"
	"github.com/kilolock/kilolock/reserve"
)

// ApplyRequest is what kl apply runs.
type ApplyRequest struct {
	// Dir is the configuration directory ("" is the spec's, else ".").
	Dir   string
	Scope Scope
	// SpecPath is a plan spec written by kl plan (--plan-spec); it sets
	// the scope, directory and variables unless they are given.
	SpecPath string
	Vars     []string
	VarFiles []string
	TFBin    string
	// Actor is who the run is recorded as run by (user@host when empty).
	Actor string
	// Orchestrated reserves before applying; otherwise the scoped CLI
	// apply runs as plain Terraform would.
	Orchestrated bool
	// WaitTimeout is how long to wait for reservations (0 fails at once);
	// Lease the run's lease (kilolock.DefaultLease when 0).
	WaitTimeout time.Duration
	Lease       time.Duration
	// Backend is the server and state (with the init's configuration);
	// Runs reaches that server.
	Backend *TFBackend
	Runs    *client.Client
	// Out receives kl's summary (stdout), Stderr kl's progress and the
	// wait feedback, CLIOutput the CLI's own output (nil: none; kl
	// --verbose gives stderr).
	Out, Stderr, CLIOutput io.Writer
	// Retry and Refresh tune the wait (2 s and 5 s when 0).
	Retry, Refresh time.Duration
	// Quiet drops kl's informational lines (plan, reserved, applying,
	// released) from Stderr, keeping warnings and the wait feedback
	// (KL_LOG_LEVEL=warn).
	Quiet bool
	// Admission, when set, admits the plan's changes against the state's
	// quotas before anything is applied (or reserved).
	Admission *Admission
}

// StaleSpecError is a saved plan spec whose reads or writes changed since
// the state it was made against.
type StaleSpecError struct {
	State     string
	Serial    uint64
	Addresses []string
}

func (e *StaleSpecError) Error() string {
	return fmt.Sprintf("state %q changed since the plan (serial %d) at %d address(es) the plan reads or writes: %s; nothing was applied",
		e.State, e.Serial, len(e.Addresses), strings.Join(e.Addresses, ", "))
}

// Hint says how to get a current plan.
func (e *StaleSpecError) Hint() string {
	return "plan again (kl plan) against the current state, then apply that spec"
}

// Is makes errors.Is(err, kilolock.ErrConflict) true.
func (e *StaleSpecError) Is(target error) bool { return target == kilolock.ErrConflict }

// UncoveredError is a plan made again under the reservations that writes
// what the run did not reserve: the state moved in a way the first plan
// did not foresee.
type UncoveredError struct {
	Run       string
	Addresses []string
}

func (e *UncoveredError) Error() string {
	return fmt.Sprintf("the state moved while apply run %s waited, and the new plan writes %d address(es) it did not reserve: %s; nothing was applied",
		e.Run, len(e.Addresses), strings.Join(e.Addresses, ", "))
}

// Hint says what to do.
func (e *UncoveredError) Hint() string {
	return "run kl apply --orchestrated again: it plans and reserves anew on the current state"
}

// Is makes errors.Is(err, kilolock.ErrConflict) true.
func (e *UncoveredError) Is(target error) bool { return target == kilolock.ErrConflict }

// Apply runs kl apply: plain (the scoped CLI apply) or orchestrated
// (plan, reserve, re-plan if the state moved, apply within the
// reservations, release).
func Apply(ctx context.Context, req ApplyRequest) error {
	if req.Out == nil {
		req.Out = os.Stdout
	}
	if req.Stderr == nil {
		req.Stderr = os.Stderr
	}
	var spec *reserve.Spec
	if req.SpecPath != "" {
		var err error
		if spec, err = ReadSpec(req.SpecPath); err != nil {
			return err
		}
		if req.Dir == "" {
			req.Dir = spec.Dir
		}
		if len(req.Vars) == 0 {
			for _, v := range spec.Variables {
				req.Vars = append(req.Vars, v.Name+"="+v.Value)
			}
		}
		if len(req.VarFiles) == 0 {
			req.VarFiles = spec.VarFiles
		}
		if req.Scope.IsZero() {
			req.Scope = Scope{Files: spec.Files, Targets: spec.Targets}
			for i, f := range req.Scope.Files {
				if !filepath.IsAbs(f) {
					req.Scope.Files[i] = filepath.Join(req.Dir, f)
				}
			}
		}
	}
	if req.Dir == "" {
		req.Dir = "."
	}
	if !req.Orchestrated {
		return plainApply(ctx, req, spec)
	}
	o := &orchestration{req: req, actor: WhoAmI(req.Actor)}
	return o.do(ctx, spec)
}

// readSpec reads a plan spec, an unreadable one being a usage error.
func ReadSpec(path string) (*reserve.Spec, error) {
	spec, err := reserve.ReadSpec(path)
	if err != nil {
		return nil, invalid(err.Error(), "make a plan spec with `kl plan -o FILE`")
	}
	return spec, nil
}

// plainApply runs the CLI's apply within the scope, as Terraform would:
// no reservations.
func plainApply(ctx context.Context, req ApplyRequest, spec *reserve.Spec) error {
	if spec == nil {
		return admittedApply(ctx, req)
	}
	targets := applyTargets(spec)
	if len(targets) == 0 {
		fmt.Fprintln(req.Stderr, "kl: nothing to apply: the plan spec changes nothing")
		return nil
	}
	if err := req.Admission.Check(ctx, spec.Quota); err != nil {
		return err
	}
	if err := runCLI(ctx, cliCommand{Dir: req.Dir, Bin: req.TFBin, Args: applyArgs(targets, req.Vars, req.VarFiles, ""), Output: req.CLIOutput}); err != nil {
		return err
	}
	return applied(req.Out, spec, "")
}

// admittedApply plans within the request's scope, admits the plan
// against the state's quotas (when the request has an admission) and
// applies that saved plan: what is admitted is what is applied.
func admittedApply(ctx context.Context, req ApplyRequest) error {
	tmp, err := os.MkdirTemp("", "kl-apply-")
	if err != nil {
		return fmt.Errorf("scratch directory: %w", err)
	}
	defer os.RemoveAll(tmp)
	planPath := filepath.Join(tmp, "apply.tfplan")
	var state string
	if req.Admission != nil {
		state = req.Admission.State
	}
	spec, err := Plan(ctx, PlanRequest{
		Dir: req.Dir, Scope: req.Scope, Vars: req.Vars, VarFiles: req.VarFiles, PlanPath: planPath, TFBin: req.TFBin,
		State: state, Actor: WhoAmI(req.Actor), Stdout: req.CLIOutput, Stderr: req.CLIOutput,
	})
	if err != nil {
		return err
	}
	if len(spec.Writes) == 0 {
		fmt.Fprintln(req.Stderr, "kl: nothing to apply: the plan changes nothing")
		return nil
	}
	if err := req.Admission.Check(ctx, spec.Quota); err != nil {
		return err
	}
	if !req.Quiet {
		fmt.Fprintf(req.Stderr, "kl: applying the plan: %s\n", actionsText(spec.Actions, "to add", "to change", "to destroy", "to replace"))
	}
	if err := runCLI(ctx, cliCommand{Dir: req.Dir, Bin: req.TFBin, Args: applyArgs(nil, nil, nil, planPath), Output: req.CLIOutput}); err != nil {
		return err
	}
	return applied(req.Out, spec, "")
}

// applied prints kl apply's summary: what the applied plan changed, and
// in which apply run ("" for none).
func applied(w io.Writer, spec *reserve.Spec, run string) error {
	where := ""
	switch {
	case spec.State != "" && run != "":
		where = fmt.Sprintf(" in state %q (apply run %s)", spec.State, run)
	case spec.State != "":
		where = fmt.Sprintf(" in state %q", spec.State)
	}
	_, err := fmt.Fprintf(w, "applied%s: %s\n", where, actionsText(spec.Actions, "added", "changed", "destroyed", "replaced"))
	return err
}

// actionsText counts a plan's actions in words: "1 added, 0 changed, …".
func actionsText(a reserve.Actions, create, update, del, replace string) string {
	return fmt.Sprintf("%d %s, %d %s, %d %s, %d %s", a.Create, create, a.Update, update, a.Delete, del, a.Replace, replace)
}

// applyTargets are the -target arguments of an apply within a spec: every
// instance it writes (outputs follow from them).
func applyTargets(spec *reserve.Spec) []string {
	var out []string
	for _, w := range spec.Writes {
		if !strings.HasPrefix(w.Address, "output.") {
			out = append(out, w.Address)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// orchestration is one orchestrated apply in progress.
type orchestration struct {
	req   ApplyRequest
	actor string
	run   *kilolock.ApplyRun
	tmp   string // scratch directory: plans and the CLI's data dir

	mu    sync.Mutex
	ended *kilolock.ApplyRun // set when kl learns the run is over
	// applying is when the CLI's apply started (zero before): a newer
	// errored.tfstate is the apply's.
	applying time.Time
}

// printf writes an informational line, unless the request is quiet.
func (o *orchestration) printf(format string, args ...any) {
	if !o.req.Quiet {
		o.warnf(format, args...)
	}
}

// warnf writes a line that is shown whatever the log level.
func (o *orchestration) warnf(format string, args ...any) {
	fmt.Fprintf(o.req.Stderr, "kl: "+format+"\n", args...)
}

func (o *orchestration) state() string { return o.req.Backend.State }

// do is the whole orchestrated apply.
func (o *orchestration) do(ctx context.Context, spec *reserve.Spec) (err error) {
	tmp, err := os.MkdirTemp("", "kl-apply-")
	if err != nil {
		return fmt.Errorf("scratch directory: %w", err)
	}
	o.tmp = tmp
	defer os.RemoveAll(tmp)

	if spec != nil {
		if spec.State != "" && spec.State != o.state() {
			return invalid(fmt.Sprintf("the plan spec was made against state %q, not %q", spec.State, o.state()), "apply it where it was planned, or plan again here")
		}
		if err := o.checkSpec(ctx, spec); err != nil {
			return err
		}
	} else if spec, err = o.plan(ctx, "plan"); err != nil {
		return err
	}
	if len(spec.Writes) == 0 {
		o.printf("nothing to apply: the plan changes nothing in state %q", o.state())
		return nil
	}
	o.printf("plan: %s", spec.Summary())
	if err := o.req.Admission.Check(ctx, spec.Quota); err != nil {
		return err
	}

	lease := ""
	if o.req.Lease != 0 {
		lease = o.req.Lease.String()
	}
	run, err := o.req.Runs.StartRun(ctx, o.state(), client.RunRequest{
		Actor: o.actor, Info: o.info(), Reservations: spec.Reservations,
		SourceSerial: spec.Source.Serial, Lease: lease,
	})
	if err != nil {
		return err
	}
	o.run = run
	o.printf("apply run %s on %q: reserving %s", run.ID, run.State, plural(len(run.Reservations), "address or pattern", "addresses and patterns"))
	defer func() {
		if err != nil {
			o.end(kilolock.RunFailed, failReason(ctx, err))
		}
	}()

	err = reserve.Wait(ctx, func(ctx context.Context) ([]reserve.Blocker, error) {
		r, err := o.req.Runs.AcquireRun(ctx, run.ID)
		var reserved *kilolock.ReservedError
		if errors.As(err, &reserved) && len(reserved.Blockers) > 0 {
			return reserved.Blockers, nil // not yet: who holds what it asked
		}
		if err == nil {
			o.run = r
		}
		return nil, err
	}, reserve.WaitOptions{State: o.state(), Timeout: o.req.WaitTimeout, Retry: o.req.Retry, Refresh: o.req.Refresh, Out: o.req.Stderr})
	if err != nil {
		return err
	}
	o.printf("reserved: %s write, %s read (lease %s, renewed every %s)", countMode(o.run, reserve.Write), countMode(o.run, reserve.Read), o.run.Lease, o.heartbeat())

	applyCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	watch := o.watchRun(applyCtx, func() { stop(errRunEnded) })
	defer watch()

	if spec, err = o.replanIfMoved(applyCtx, spec); err != nil {
		return o.abortedOr(ctx, err)
	}
	if err := o.apply(applyCtx, spec); err != nil {
		return o.abortedOr(ctx, err)
	}
	watch()
	if ended := o.endedRun(); ended != nil {
		return o.aborted(ended)
	}
	if _, err := o.req.Runs.EndRun(context.WithoutCancel(ctx), run.ID, client.RunEndRequest{Status: kilolock.RunSucceeded, Reason: "applied"}); err != nil {
		var ended *kilolock.RunEndedError
		if errors.As(err, &ended) {
			return o.aborted(o.setEnded(ended.Run))
		}
		return err
	}
	o.printf("apply run %s succeeded; its reservations are released", run.ID)
	return applied(o.req.Out, spec, run.ID)
}

// info describes the run for others: the command and its scope.
func (o *orchestration) info() string {
	parts := []string{"kl apply --orchestrated"}
	if o.req.SpecPath != "" {
		parts = append(parts, "--plan-spec", filepath.Base(o.req.SpecPath))
	}
	for _, f := range o.req.Scope.Files {
		parts = append(parts, "-f", filepath.Base(f))
	}
	for _, t := range o.req.Scope.Targets {
		parts = append(parts, "--target", t)
	}
	s := strings.Join(parts, " ")
	if len(s) > 1000 {
		s = s[:1000] + "…"
	}
	return s
}

func countMode(r *kilolock.ApplyRun, m reserve.Mode) string {
	n := 0
	for _, res := range r.Reservations {
		if res.Mode == m {
			n++
		}
	}
	return fmt.Sprint(n)
}

func failReason(ctx context.Context, err error) string {
	if ctx.Err() != nil {
		return "interrupted"
	}
	var be *reserve.BlockedError
	if errors.As(err, &be) {
		return "gave up waiting for reservations"
	}
	msg := err.Error()
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	if len(msg) > 500 {
		msg = msg[:500] + "…"
	}
	return msg
}

// end ends the run, unless it is over already.
func (o *orchestration) end(status kilolock.RunStatus, reason string) {
	if o.run == nil || o.endedRun() != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := o.req.Runs.EndRun(ctx, o.run.ID, client.RunEndRequest{Status: status, Reason: reason}); err != nil && !errors.As(err, new(*kilolock.RunEndedError)) {
		o.warnf("could not end apply run %s (its lease frees its reservations within %s): %v", o.run.ID, o.run.Lease, err)
		return
	}
	o.printf("apply run %s ended %s; its reservations are released", o.run.ID, status)
}

// checkSpec refuses a saved spec whose reads or writes changed since its
// source serial.
func (o *orchestration) checkSpec(ctx context.Context, spec *reserve.Spec) error {
	var patterns []reserve.Pattern
	for _, r := range spec.Reservations {
		patterns = append(patterns, r.Pattern)
	}
	if spec.Source.Serial == 0 {
		// Planned against a state that had no version: anything written
		// since may matter.
		st, err := o.req.Runs.Status(ctx, o.state())
		if err != nil && !errors.Is(err, kilolock.ErrNotFound) {
			return err
		}
		if err == nil && st.Version != nil {
			return &StaleSpecError{State: o.state(), Addresses: []string{"(the whole state: it was created after the plan)"}}
		}
		return nil
	}
	l, err := o.req.Runs.ChangedSince(ctx, o.state(), client.ChangedSinceRequest{Serial: spec.Source.Serial, Patterns: patterns})
	if err != nil {
		return err
	}
	changed := l.Addresses
	if len(changed) > 0 {
		return &StaleSpecError{State: o.state(), Serial: spec.Source.Serial, Addresses: changed}
	}
	return nil
}

// plan plans within the request's scope into the scratch directory.
func (o *orchestration) plan(ctx context.Context, name string) (*reserve.Spec, error) {
	return Plan(ctx, PlanRequest{
		Dir: o.req.Dir, Scope: o.req.Scope, Vars: o.req.Vars, VarFiles: o.req.VarFiles,
		PlanPath: filepath.Join(o.tmp, name+".tfplan"), TFBin: o.req.TFBin,
		State: o.state(), Server: o.req.Backend.Server, Actor: o.actor,
		Stdout: o.req.CLIOutput, Stderr: o.req.CLIOutput,
	})
}

// replanIfMoved plans again when the state's serial is no longer the one
// the plan read, and goes on only if the new plan writes nothing the run
// did not reserve.
func (o *orchestration) replanIfMoved(ctx context.Context, spec *reserve.Spec) (*reserve.Spec, error) {
	st, err := o.req.Runs.Status(ctx, o.state())
	if err != nil && !errors.Is(err, kilolock.ErrNotFound) {
		return nil, err
	}
	var serial uint64
	if err == nil && st.Version != nil {
		serial = st.Version.Serial
	}
	if serial == spec.Source.Serial {
		return spec, nil
	}
	o.printf("state %q moved from serial %d to %d since the plan: planning again under the reservations", o.state(), spec.Source.Serial, serial)
	next, err := o.plan(ctx, "replan")
	if err != nil {
		return nil, err
	}
	writes := reserve.NewIndex(nil)
	for _, r := range o.run.Reservations {
		if r.Mode == reserve.Write {
			writes.Add(reserve.Hold{Reservation: r})
		}
	}
	var uncovered []string
	for _, w := range next.Writes {
		p, err := reserve.Parse(w.Address)
		covered := false
		if err == nil {
			writes.Meeting(p, func(h reserve.Hold) bool {
				covered = h.Pattern.Covers(p)
				return !covered
			})
		}
		if !covered {
			uncovered = append(uncovered, w.Address)
		}
	}
	if len(uncovered) > 0 {
		return nil, &UncoveredError{Run: o.run.ID, Addresses: uncovered}
	}
	if len(next.Writes) == 0 {
		o.printf("the new plan changes nothing: another apply already made these changes")
	} else {
		o.printf("new plan: %s; within the reservations", next.Summary())
	}
	return next, nil
}

// apply runs the CLI's apply within the spec's writes, with its backend
// pointed at the run: a scratch data directory (sharing the providers and
// modules init installed) initialized on the run's address.
func (o *orchestration) apply(ctx context.Context, spec *reserve.Spec) error {
	targets := applyTargets(spec)
	if len(targets) == 0 {
		return nil
	}
	data := filepath.Join(o.tmp, "data")
	if err := os.Mkdir(data, 0o700); err != nil {
		return fmt.Errorf("scratch data directory: %w", err)
	}
	orig := DataDir(o.req.Dir)
	for _, sub := range []string{"providers", "modules", "plugins"} {
		if _, err := os.Stat(filepath.Join(orig, sub)); err == nil {
			if err := os.Symlink(absPath(filepath.Join(orig, sub)), filepath.Join(data, sub)); err != nil {
				return fmt.Errorf("scratch data directory: %w", err)
			}
		}
	}
	cfg := o.req.Backend.Config
	if cfg == nil {
		cfg = map[string]any{"address": o.req.Backend.Address}
	}
	args, err := backendConfigArgs(cfg, o.run.ID)
	if err != nil {
		return err
	}
	env := map[string]string{"TF_DATA_DIR": data}
	tf, err := newTF(ctx, o.req.Dir, o.req.TFBin, o.req.CLIOutput, o.req.CLIOutput, env)
	if err != nil {
		return err
	}
	initOpts := []tfexec.InitOption{tfexec.Reconfigure(true)}
	for _, a := range args {
		initOpts = append(initOpts, tfexec.BackendConfig(a))
	}
	if err := tf.Init(ctx, initOpts...); err != nil {
		return cliError("init (on the run's backend address)", err)
	}
	o.printf("applying %s within apply run %s", plural(len(targets), "target", "targets"), o.run.ID)
	o.mu.Lock()
	o.applying = time.Now()
	o.mu.Unlock()
	return runCLI(ctx, cliCommand{Dir: o.req.Dir, Bin: o.req.TFBin, Args: applyArgs(targets, o.req.Vars, o.req.VarFiles, ""), Env: env, Output: o.req.CLIOutput})
}

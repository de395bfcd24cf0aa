package orchestrate

import (
	"archive/zip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/terraform-exec/tfexec"
	tfjson "github.com/hashicorp/terraform-json"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/reserve"
)

// DefaultSpecPath is where kl plan writes its plan spec unless -o says
// otherwise; the saved plan goes beside it, with the extension .tfplan.
const DefaultSpecPath = "kl-plan.json"

// lookTFBin finds the IaC CLI: bin, a name in PATH or a path; when bin is
// empty, tofu, else terraform, in PATH.
func lookTFBin(bin string) (string, error) {
	names := []string{bin}
	if bin == "" {
		names = []string{"tofu", "terraform"}
	}
	var err error
	for _, name := range names {
		var path string
		if path, err = exec.LookPath(name); err == nil {
			return path, nil
		}
	}
	if bin == "" {
		return "", invalid("neither tofu nor terraform is in PATH", "install OpenTofu or Terraform, or name the binary with --tf-bin BIN (KL_TF_BIN)")
	}
	return "", invalid(fmt.Sprintf("cannot find the IaC CLI %q: %v", bin, err), "install OpenTofu (tofu) or Terraform, or name the binary with --tf-bin BIN (KL_TF_BIN)")
}

// Scope limits a plan to the blocks some configuration files declare
// (Files) and to addresses (Targets); neither is the whole configuration.
type Scope struct {
	Files   []string
	Targets []string
}

// IsZero reports whether the scope is the whole configuration.
func (s Scope) IsZero() bool { return len(s.Files) == 0 && len(s.Targets) == 0 }

// resolvedScope is a scope as the CLI and the reservations see it.
type resolvedScope struct {
	files    []string          // as given, relative to the configuration directory
	targets  []string          // -target= arguments
	patterns []reserve.Pattern // what the scope owns
	given    []string          // the scope as given: "-f a.tf", "--target x"
}

// resolve turns s into -target arguments and the patterns the scope owns,
// for the configuration in dir. A file must be one of dir's root module
// files; a target must be an address or pattern.
func (s Scope) resolve(dir string) (*resolvedScope, error) {
	rs := &resolvedScope{}
	var paths []string
	for _, f := range s.Files {
		p := f
		if !filepath.IsAbs(p) {
			if _, err := os.Stat(p); err != nil || filepath.Dir(absPath(p)) != absPath(dir) {
				p = filepath.Join(dir, f)
			}
		}
		if _, err := os.Stat(p); err != nil {
			return nil, invalid(fmt.Sprintf("-f %s: no such configuration file in %s", f, dir), "name a .tf file of the configuration directory, e.g. -f main.tf")
		}
		if filepath.Dir(absPath(p)) != absPath(dir) {
			return nil, invalid(fmt.Sprintf("-f %s is not a file of the configuration directory %s", f, dir), "name a root module file; to scope to a module, use --target module.NAME")
		}
		paths = append(paths, p)
		rel, _ := filepath.Rel(absPath(dir), absPath(p))
		rs.files = append(rs.files, rel)
		rs.given = append(rs.given, "-f "+rel)
	}
	if len(paths) > 0 {
		decls, err := reserve.Declared(paths)
		if err != nil {
			return nil, invalid(err.Error(), "fix the configuration file (tofu validate shows the problem)")
		}
		if len(decls) == 0 {
			return nil, invalid(fmt.Sprintf("%s declare(s) no resource, data or module block", strings.Join(s.Files, ", ")), "name the files that declare what you want to apply")
		}
		for _, d := range decls {
			rs.patterns = append(rs.patterns, d.Pattern)
			rs.targets = append(rs.targets, targetOf(d.Pattern))
		}
	}
	for _, t := range s.Targets {
		p, err := reserve.Parse(t)
		if err != nil || p.String() == "*" || strings.HasPrefix(t, "output.") {
			return nil, invalid(fmt.Sprintf("--target %s: not a resource, instance or module address", t), "target an address as tofu does: aws_instance.web, aws_instance.web[0], module.net")
		}
		rs.patterns = append(rs.patterns, p)
		rs.targets = append(rs.targets, t)
		rs.given = append(rs.given, "--target "+t)
	}
	slices.Sort(rs.targets)
	rs.targets = slices.Compact(rs.targets)
	return rs, nil
}

// targetOf is the -target argument of a pattern: module.x for module.x.*.
func targetOf(p reserve.Pattern) string {
	return strings.TrimSuffix(p.String(), ".*")
}

func absPath(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	return a
}

// PlanRequest is what kl plan (and an orchestrated apply) plans.
type PlanRequest struct {
	// Dir is the configuration directory.
	Dir   string
	Scope Scope
	// Vars are NAME=VALUE assignments; VarFiles variable files.
	Vars     []string
	VarFiles []string
	// SpecPath is where the spec is written ("" writes none); the plan
	// file goes beside it (PlanPath overrides).
	SpecPath string
	PlanPath string
	// TFBin is the CLI to run ("" finds tofu, else terraform).
	TFBin string
	// State and Server name the backend, for the spec.
	State, Server string
	// Actor is recorded as the spec's author.
	Actor string
	// Stdout and Stderr receive the CLI's output.
	Stdout, Stderr io.Writer
}

// ScopeError is a plan that writes what its scope does not own: kl never
// widens a scope silently.
type ScopeError struct {
	Scope   []string
	Outside []OutsideWrite
}

// OutsideWrite is one write outside a plan's scope and the configuration
// file that declares it ("" when none does: a nested module's resource
// reached through a module call, or an orphan).
type OutsideWrite struct {
	Change reserve.Change
	File   string
	Line   int
}

func (e *ScopeError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "the plan writes %d address(es) outside its scope (%s):", len(e.Outside), strings.Join(e.Scope, ", "))
	for _, o := range e.Outside {
		where := "declared in no root module file (a removed resource, or one inside a module)"
		if o.File != "" {
			where = fmt.Sprintf("declared in %s:%d", o.File, o.Line)
		}
		fmt.Fprintf(&b, "\n  %s  %s  (%s)", o.Change.Address, strings.Join(o.Change.Actions, ","), where)
	}
	return b.String()
}

// Hint says how to plan within the scope.
func (e *ScopeError) Hint() string {
	var files []string
	for _, o := range e.Outside {
		if o.File != "" && !slices.Contains(files, "-f "+filepath.Base(o.File)) {
			files = append(files, "-f "+filepath.Base(o.File))
		}
	}
	h := "what the scope targets depends on these changes; widen the scope deliberately"
	if len(files) > 0 {
		h += " (add " + strings.Join(files, " ") + ")"
	} else {
		h += " (add --target for each address)"
	}
	return h + ", or apply those changes first"
}

// Plan runs the CLI's plan -out in req.Dir within the scope, reads the
// plan with show -json and returns its spec (written to req.SpecPath
// unless that is empty). A write the scope does not own is a *ScopeError.
func Plan(ctx context.Context, req PlanRequest) (*reserve.Spec, error) {
	dir := req.Dir
	if dir == "" {
		dir = "."
	}
	scope, err := req.Scope.resolve(dir)
	if err != nil {
		return nil, err
	}
	planPath := req.PlanPath
	if planPath == "" {
		spec := req.SpecPath
		if spec == "" {
			spec = DefaultSpecPath
		}
		planPath = strings.TrimSuffix(spec, filepath.Ext(spec)) + ".tfplan"
	}
	planPath = absPath(planPath)
	tf, err := newTF(ctx, dir, req.TFBin, req.Stdout, req.Stderr, nil)
	if err != nil {
		return nil, err
	}
	opts := []tfexec.PlanOption{tfexec.Out(planPath)}
	for _, t := range scope.targets {
		opts = append(opts, tfexec.Target(t))
	}
	for _, v := range req.Vars {
		opts = append(opts, tfexec.Var(v))
	}
	for _, f := range req.VarFiles {
		opts = append(opts, tfexec.VarFile(f))
	}
	if _, err := tf.Plan(ctx, opts...); err != nil {
		return nil, cliError("plan", err)
	}
	tf.SetStdout(io.Discard) // show -json is read, not shown
	plan, err := tf.ShowPlanFile(ctx, planPath)
	if err != nil {
		return nil, cliError("show -json", err)
	}
	spec, err := specOf(plan, planPath, dir, scope, req)
	if err != nil {
		return nil, err
	}
	if req.SpecPath != "" {
		if err := spec.WriteFile(req.SpecPath); err != nil {
			return nil, fmt.Errorf("write plan spec: %w", err)
		}
	}
	return spec, nil
}

// specOf builds the spec of a plan, refusing writes outside the scope.
func specOf(plan *tfjson.Plan, planPath, dir string, scope *resolvedScope, req PlanRequest) (*reserve.Spec, error) {
	a, err := reserve.Analyze(plan)
	if err != nil {
		return nil, fmt.Errorf("read plan: %w", err)
	}
	if len(scope.patterns) > 0 {
		if out := a.OutOfScope(scope.patterns); len(out) > 0 {
			return nil, scopeError(dir, scope, out)
		}
	}
	src, err := planSource(planPath)
	if err != nil {
		return nil, err
	}
	spec := &reserve.Spec{
		Format: reserve.SpecFormat, FormatVersion: reserve.SpecVersion,
		State: req.State, Server: req.Server, Source: src,
		Dir: absPath(dir), Files: scope.files, Targets: req.Scope.Targets,
		VarFiles: req.VarFiles,
		Writes:   a.Writes, Reads: a.Reads, Reservations: a.Reservations, Actions: a.Actions, Quota: a.Quota,
		Created: time.Now().UTC(), CreatedBy: req.Actor, TFVersion: plan.TerraformVersion,
	}
	if rel, err := filepath.Rel(spec.Dir, planPath); err == nil {
		spec.PlanFile = rel
	} else {
		spec.PlanFile = planPath
	}
	for _, v := range req.Vars {
		name, value, _ := strings.Cut(v, "=")
		spec.Variables = append(spec.Variables, reserve.Variable{Name: name, Value: value})
	}
	if spec.Writes == nil {
		spec.Writes = []reserve.Change{}
	}
	if spec.Reads == nil {
		spec.Reads = []reserve.Pattern{}
	}
	if spec.Reservations == nil {
		spec.Reservations = []reserve.Reservation{}
	}
	return spec, nil
}

// scopeError names each write outside the scope with the root module file
// that declares it.
func scopeError(dir string, scope *resolvedScope, out []reserve.Change) error {
	var decls []reserve.Declaration
	if files, err := reserve.ConfigFiles(dir); err == nil {
		decls, _ = reserve.Declared(files)
	}
	e := &ScopeError{Scope: scope.given}
	for _, c := range out {
		o := OutsideWrite{Change: c}
		if d, ok := reserve.Owner(decls, c.Address); ok {
			rel, err := filepath.Rel(absPath(dir), absPath(d.File))
			if err != nil {
				rel = d.File
			}
			o.File, o.Line = rel, d.Line
		}
		e.Outside = append(e.Outside, o)
	}
	return e
}

// planSource reads the serial and lineage of the state a saved plan was
// made against (planStateEntry); a plan against a state that does not
// exist yet holds none, the zero Source.
func planSource(planPath string) (reserve.Source, error) {
	data, ok, err := planStateEntry(planPath)
	if err != nil || !ok {
		return reserve.Source{}, err
	}
	var st struct {
		Serial  uint64 `json:"serial"`
		Lineage string `json:"lineage"`
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return reserve.Source{}, fmt.Errorf("read the state in plan file %s: %w", planPath, err)
	}
	return reserve.Source{Serial: st.Serial, Lineage: st.Lineage}, nil
}

// planStateEntry reads the state a saved plan holds: the tfstate entry of
// the plan file (a zip archive), and false when it has none.
func planStateEntry(planPath string) ([]byte, bool, error) {
	zr, err := zip.OpenReader(planPath)
	if err != nil {
		return nil, false, fmt.Errorf("read plan file %s: %w", planPath, err)
	}
	defer zr.Close()
	for _, f := range zr.File {
		if f.Name != "tfstate" {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			return nil, false, fmt.Errorf("read plan file %s: %w", planPath, err)
		}
		defer rc.Close()
		data, err := io.ReadAll(io.LimitReader(rc, 1<<30))
		if err != nil {
			return nil, false, fmt.Errorf("read the state in plan file %s: %w", planPath, err)
		}
		return data, true, nil
	}
	return nil, false, nil
}

// ShowPlan reads the saved plan planFile (relative to the working
// directory) with the CLI's show -json in the configuration directory
// dir; the CLI's stderr goes to log.
func ShowPlan(ctx context.Context, dir, bin, planFile string, log io.Writer) (*tfjson.Plan, error) {
	tf, err := newTF(ctx, dir, bin, io.Discard, log, nil)
	if err != nil {
		return nil, err
	}
	p, err := tf.ShowPlanFile(ctx, absPath(planFile))
	return p, cliError("show -json "+planFile, err)
}

// newTF returns a terraform-exec handle on the CLI bin (see lookTFBin) in
// dir, with env added to kl's environment.
func newTF(ctx context.Context, dir, bin string, stdout, stderr io.Writer, env map[string]string) (*tfexec.Terraform, error) {
	path, err := lookTFBin(bin)
	if err != nil {
		return nil, err
	}
	tf, err := tfexec.NewTerraform(absPath(dir), path)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", path, err)
	}
	if err := tf.SetWaitDelay(interruptGrace); err != nil {
		return nil, err
	}
	if env != nil {
		full := tfexec.CleanEnv(envMap(os.Environ()))
		maps.Copy(full, env)
		if err := tf.SetEnv(full); err != nil {
			return nil, err
		}
	}
	// terraform-exec copies stdout of every command to the writer, its
	// own `version -json` included: ask for the version before setting
	// it, so that only the commands' human output reaches the user.
	if _, _, err := tf.Version(ctx, false); err != nil {
		return nil, cliError("version", err)
	}
	if stdout != nil {
		tf.SetStdout(stdout)
	}
	if stderr != nil {
		tf.SetStderr(stderr)
	}
	return tf, nil
}

func envMap(environ []string) map[string]string {
	m := make(map[string]string, len(environ))
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}

// CLIError is the IaC CLI failing: its plan, init or apply exited non-zero.
type CLIError struct {
	Command string
	Err     error
	// Advice is what to do next, when the step knows ("" when not).
	Advice string
}

// Hint is the error's advice.
func (e *CLIError) Hint() string { return e.Advice }

func (e *CLIError) Error() string {
	msg := strings.TrimSpace(e.Err.Error())
	return fmt.Sprintf("%s failed: %s", e.Command, msg)
}

func (e *CLIError) Unwrap() error { return e.Err }

// cliError wraps a failure of the CLI command; nil (success) stays nil.
func cliError(command string, err error) error {
	if err == nil || errors.Is(err, context.Canceled) {
		return err
	}
	return &CLIError{Command: command, Err: err}
}

// WhoAmI is who runs kl, as user@host, unless actor names someone.
func WhoAmI(actor string) string {
	if actor != "" {
		return actor
	}
	name := "unknown"
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	return name + "@" + host
}

// Is makes errors.Is(err, kilolock.ErrConflict) true: the plan conflicts
// with the scope it was asked for.
func (e *ScopeError) Is(target error) bool { return target == kilolock.ErrConflict }

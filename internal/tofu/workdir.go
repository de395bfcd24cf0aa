package tofu

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// CommandTimeout bounds one CLI command, so a command stuck waiting (for a
// lock, for input) fails its test instead of hanging the test binary.
const CommandTimeout = 10 * time.Minute

// Workdir is a working directory of one CLI (tofu unless made with
// Terraform.NewWorkdir): a temporary directory holding main.tf and
// whatever the CLI writes (.terraform, a local state).
type Workdir struct {
	// Dir is the directory the CLI runs in.
	Dir string

	tb   testing.TB
	kind Kind
	bin  string
	env  []string
}

// NewWorkdir returns a new tofu working directory whose main.tf is hcl. It
// skips tb when tofu is not installed (fails it when CI=true).
// Terraform.NewWorkdir is the same for Terraform.
func NewWorkdir(tb testing.TB, hcl string) *Workdir {
	tb.Helper()
	return newWorkdir(tb, OpenTofu, hcl)
}

func newWorkdir(tb testing.TB, k Kind, hcl string) *Workdir {
	tb.Helper()
	bin := k.Binary(tb)
	dir := filepath.Join(tb.TempDir(), "work")
	if err := os.Mkdir(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	rc := k.CLIConfigFile(tb)
	// Nothing of the machine's tofu/terraform environment may leak in:
	// TF_HTTP_* would override the backend block, TF_CLI_ARGS* would add
	// flags, TF_CLI_CONFIG_FILE may name a missing file.
	env := append(CleanEnv("TF_", "TOFU_"),
		"TF_CLI_CONFIG_FILE="+rc,
		"TF_IN_AUTOMATION=1",
		"TF_INPUT=0",
		"CHECKPOINT_DISABLE=1",
	)
	w := &Workdir{Dir: dir, tb: tb, kind: k, bin: bin, env: env}
	w.WriteFile("main.tf", hcl)
	return w
}

// WriteFile writes a file (e.g. main.tf, a state to push) into the
// directory; name is relative to Dir.
func (w *Workdir) WriteFile(name, content string) {
	w.tb.Helper()
	if err := os.WriteFile(filepath.Join(w.Dir, name), []byte(content), 0o644); err != nil {
		w.tb.Fatal(err)
	}
}

// ReadFile returns a file of the directory; name is relative to Dir.
func (w *Workdir) ReadFile(name string) string {
	w.tb.Helper()
	b, err := os.ReadFile(filepath.Join(w.Dir, name))
	if err != nil {
		w.tb.Fatal(err)
	}
	return string(b)
}

// Setenv adds an environment variable to every later command.
func (w *Workdir) Setenv(key, value string) {
	w.env = append(w.env, key+"="+value)
}

// Kind is the CLI the directory runs.
func (w *Workdir) Kind() Kind { return w.kind }

// Env returns the environment the CLI runs with here (its CLI configuration,
// no TF_* of the machine's), for another program that runs tofu in the
// directory, such as kl drift check.
func (w *Workdir) Env() []string { return append([]string(nil), w.env...) }

// Run runs the CLI with args in the directory and returns what it printed and
// its exit code: -1 when it could not be started or was killed (the reason
// is then in stderr). It never fails the test itself, so it may be called
// from any goroutine.
func (w *Workdir) Run(args ...string) (stdout, stderr string, exitCode int) {
	ctx, cancel := context.WithTimeout(w.tb.Context(), CommandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, w.bin, args...)
	cmd.Dir = w.Dir
	cmd.Env = w.env
	cmd.WaitDelay = 10 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	exitCode = cmd.ProcessState.ExitCode()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		errb.WriteString("\n[harness] " + err.Error())
	}
	if ctx.Err() != nil {
		errb.WriteString("\n[harness] " + ctx.Err().Error())
	}
	w.tb.Logf("%s %s: exit %d in %s", w.kind, strings.Join(args, " "), exitCode, time.Since(start).Round(time.Millisecond))
	return out.String(), errb.String(), exitCode
}

// Must runs the CLI like Run and fails the test, showing both outputs, unless
// it exits 0. It returns stdout. Call it from the test goroutine only.
func (w *Workdir) Must(args ...string) string {
	w.tb.Helper()
	stdout, stderr, code := w.Run(args...)
	if code != 0 {
		w.tb.Fatalf("%s %s: exit %d\nstdout:\n%s\nstderr:\n%s", w.kind, strings.Join(args, " "), code, stdout, stderr)
	}
	return stdout
}

// Command returns a command running bin with args in the directory, with
// the environment every CLI command of the directory gets (its CLI
// configuration, no prompts) and KL_TF_BIN naming the CLI's binary: how a
// test runs kl plan or kl apply, which run the CLI themselves.
func (w *Workdir) Command(ctx context.Context, bin string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = w.Dir
	cmd.Env = append(withoutVars(w.env, "KL_"), "KL_TF_BIN="+w.bin, "NO_COLOR=1")
	cmd.WaitDelay = 10 * time.Second
	return cmd
}

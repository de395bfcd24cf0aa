package orchestrate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// interruptGrace is how long the CLI has to stop on its own after kl was
// interrupted (Ctrl-C, SIGTERM) before it is killed: time to finish what
// it has in flight and save its state.
const interruptGrace = 20 * time.Second

// abortGrace is the same after the apply run was aborted or its lease ran
// out: the server takes nothing more of the run, so waiting longer would
// only let tofu finish what no one wants.
const abortGrace = 5 * time.Second

// errRunEnded is the cause of a CLI interrupted because its apply run is
// over; runCLI gives it abortGrace.
var errRunEnded = errors.New("the apply run is over")

// cliCommand is one run of the IaC CLI that kl runs itself rather than
// through terraform-exec: the apply, which may run provisioners, whose
// processes must stop with it.
type cliCommand struct {
	Dir  string
	Bin  string // as --tf-bin: "" finds tofu, else terraform
	Args []string
	Env  map[string]string // added to kl's environment
	// Output receives the CLI's stdout and stderr; nil discards them.
	Output io.Writer
}

// maxCLIErrorTail bounds the CLI's stderr kept for a failure's message.
const maxCLIErrorTail = 64 << 10

// runCLI runs c as a process group of its own (the CLI, its providers and
// provisioners). When ctx ends it interrupts the group with SIGINT, as
// Ctrl-C in a terminal would (the CLI stops gracefully and saves its
// state, a provisioner's command gets the signal too), kills the group if
// the CLI has not exited within the grace period (abortGrace when ctx's
// cause is errRunEnded, else interruptGrace), and once the CLI has exited
// kills what is left of the group. When ctx ended it returns a
// *StoppedError (errors.Is ctx's error), else a *CLIError for a non-zero
// exit, carrying the end of the CLI's stderr.
func runCLI(ctx context.Context, c cliCommand) error {
	path, err := lookTFBin(c.Bin)
	if err != nil {
		return err
	}
	out := c.Output
	if out == nil {
		out = io.Discard
	}
	tail := &tailBuffer{max: maxCLIErrorTail}
	cmd := exec.Command(path, c.Args...)
	cmd.Dir = c.Dir
	env := envMap(os.Environ())
	env["TF_IN_AUTOMATION"] = "1"
	maps.Copy(env, c.Env)
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdout, cmd.Stderr = out, io.MultiWriter(out, tail)
	// A provisioner's child that outlives the CLI may hold its output
	// open; Wait gives up on it after this long.
	cmd.WaitDelay = 2 * time.Second
	ownProcessGroup(cmd)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("run %s: %w", path, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err = <-exited:
	case <-ctx.Done():
		grace := interruptGrace
		if errors.Is(context.Cause(ctx), errRunEnded) {
			grace = abortGrace
		}
		interruptGroup(cmd.Process)
		stopped := &StoppedError{Err: ctx.Err(), Grace: grace}
		timer := time.NewTimer(grace)
		select {
		case <-exited:
		case <-timer.C:
			killGroup(cmd.Process)
			stopped.Killed = true
			<-exited
		}
		timer.Stop()
		killGroup(cmd.Process) // what outlived the CLI
		return stopped
	}
	if err != nil {
		return &CLIError{Command: c.Args[0], Err: fmt.Errorf("%w\n%s", err, tail.String())}
	}
	return nil
}

// StoppedError is the CLI stopped by kl: interrupted, and Killed when it
// had not exited Grace after the interrupt. It wraps the context's error.
type StoppedError struct {
	Err    error
	Grace  time.Duration
	Killed bool
}

func (e *StoppedError) Error() string {
	if e.Killed {
		return fmt.Sprintf("the CLI was interrupted and, still running %s later, killed: %v", e.Grace, e.Err)
	}
	return fmt.Sprintf("the CLI was interrupted and stopped: %v", e.Err)
}

func (e *StoppedError) Unwrap() error { return e.Err }

// how says how the CLI stopped, for a person.
func (e *StoppedError) how() string {
	if e.Killed {
		return fmt.Sprintf("interrupted, then killed with its provisioners %s later", e.Grace)
	}
	return "interrupted: it stopped on its own"
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.buf))
}

// applyArgs are the arguments of the CLI's apply: without prompts or
// colour, within targets, with the variables given, of planFile when one
// is given.
func applyArgs(targets, vars, varFiles []string, planFile string) []string {
	args := []string{"apply", "-no-color", "-auto-approve", "-input=false"}
	for _, f := range varFiles {
		args = append(args, "-var-file="+f)
	}
	for _, t := range targets {
		args = append(args, "-target="+t)
	}
	for _, v := range vars {
		args = append(args, "-var", v)
	}
	if planFile != "" {
		args = append(args, planFile)
	}
	return args
}

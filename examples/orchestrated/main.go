// Command orchestrated drives two scoped applies on one state through the
// KiloLock library, as a platform would without kl: each takes a write
// reservation on what it changes (Engine.Reserve), renews its lease while
// the real CLI applies (Engine.RenewRun), and ends its run
// (Engine.EndRun). Their reservations are disjoint, so both applies run at
// once on the same, exclusive state.
//
//	go run ./examples/orchestrated -tofu .cache/tofu/bin/tofu
//
// It embeds the engine on a SQLite file and serves the backend protocol
// on 127.0.0.1 for the CLI; the CLI finds hashicorp/time as its
// configuration says (TF_CLI_CONFIG_FILE; `make tofu` fills a local
// mirror, .cache/tofu/tofurc).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/kilolock/kilolock/applyrun"

	"github.com/charmbracelet/log"
	"github.com/hashicorp/terraform-exec/tfexec"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/httpbackend"
	"github.com/kilolock/kilolock/reserve"
	"github.com/kilolock/kilolock/store"
)

// config is what the program is run with.
type config struct {
	Tofu  string        // the CLI binary
	Dir   string        // scratch directory: database, configuration, data dirs
	Sleep time.Duration // how long creating each resource takes
	Out   io.Writer
}

func main() {
	var cfg config
	flag.StringVar(&cfg.Tofu, "tofu", "tofu", "the OpenTofu (or Terraform) binary")
	flag.DurationVar(&cfg.Sleep, "sleep", 3*time.Second, "how long creating each resource takes")
	flag.Parse()
	dir, err := os.MkdirTemp("", "kl-orchestrated-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "orchestrated:", err)
		os.Exit(1)
	}
	defer os.RemoveAll(dir)
	cfg.Dir, cfg.Out = dir, os.Stdout
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "orchestrated:", err)
		os.Exit(1)
	}
}

// state is the one state both applies share.
const state = "example"

// configuration is the root module: two slow resources, each changed by
// its own variable.
const configuration = `
terraform {
  backend "http" {}
}
variable "a" {
  default = "v1"
}
variable "b" {
  default = "v1"
}
variable "sleep" {
  default = "0s"
}
resource "time_sleep" "slow_a" {
  create_duration = var.sleep
  triggers        = { v = var.a }
}
resource "time_sleep" "slow_b" {
  create_duration = var.sleep
  triggers        = { v = var.b }
}
`

// run serves an engine, creates the state with one plain apply, then runs
// the two orchestrated applies at once and reports how long they took.
func run(ctx context.Context, cfg config) error {
	s, err := store.Open(ctx, filepath.Join(cfg.Dir, "kilolock.db"))
	if err != nil {
		return fmt.Errorf("open store: %w", err)
	}
	defer s.Close()
	logger := log.New(io.Discard)
	engine := kilolock.NewEngine(s, kilolock.Options{Logger: logger})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	srv := &http.Server{Handler: httpbackend.New(engine, httpbackend.Options{Logger: logger})}
	go srv.Serve(ln)
	defer srv.Close()
	address := "http://" + ln.Addr().String() + "/v1/states/" + state

	work := filepath.Join(cfg.Dir, "config")
	if err := os.Mkdir(work, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(work, "main.tf"), []byte(configuration), 0o644); err != nil {
		return err
	}
	first, err := cli(ctx, cfg, work, "first", address, "")
	if err != nil {
		return err
	}
	if err := first.Apply(ctx); err != nil {
		return fmt.Errorf("first apply: %w", err)
	}

	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, change := range []struct{ address, variable string }{
		{"time_sleep.slow_a", "a=v2"},
		{"time_sleep.slow_b", "b=v2"},
	} {
		wg.Go(func() {
			errs[i] = scopedApply(ctx, cfg, engine, work, address, change.address, change.variable)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	took := time.Since(start)
	runs, err := applyrun.Runs(ctx, engine, kilolock.RunFilter{State: state})
	if err != nil {
		return err
	}
	fmt.Fprintf(cfg.Out, "two orchestrated applies of %s each took %s together\n", cfg.Sleep, took.Round(100*time.Millisecond))
	for _, r := range runs {
		fmt.Fprintf(cfg.Out, "  %s  %-9s  %s  held %s\n", r.ID, r.Status, r.Reservations[0].Pattern, r.Ended.Sub(r.Acquired).Round(100*time.Millisecond))
	}
	return nil
}

// scopedApply is one orchestrated apply: reserve the address for writing,
// apply it with the run's backend address while renewing the lease, end
// the run.
func scopedApply(ctx context.Context, cfg config, e *kilolock.Engine, work, address, target, variable string) (err error) {
	const lease = 30 * time.Second
	run, err := applyrun.Reserve(ctx, e, state, kilolock.RunRequest{
		Actor:        "example@" + target,
		Info:         "examples/orchestrated " + target,
		Reservations: []kilolock.Reservation{{Pattern: reserve.MustParse(target), Mode: reserve.Write}},
		Lease:        lease,
	}, reserve.WaitOptions{Timeout: time.Minute, Out: os.Stderr, Label: target})
	if err != nil {
		return fmt.Errorf("reserve %s: %w", target, err)
	}
	defer func() {
		end := kilolock.RunEnd{Status: kilolock.RunSucceeded, By: run.Actor, Reason: "applied"}
		if err != nil {
			end = kilolock.RunEnd{Status: kilolock.RunFailed, By: run.Actor, Reason: err.Error()}
		}
		if _, endErr := applyrun.EndRun(context.WithoutCancel(ctx), e, run.ID, end); endErr != nil && err == nil {
			err = endErr
		}
	}()

	// The heartbeat: a run that stops renewing loses its reservations
	// when its lease runs out, and an aborted one learns it here.
	applyCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		t := time.NewTicker(lease / 3)
		defer t.Stop()
		for {
			select {
			case <-applyCtx.Done():
				return
			case <-t.C:
				if _, err := applyrun.RenewRun(applyCtx, e, run.ID); err != nil && applyCtx.Err() == nil {
					cancel(fmt.Errorf("renew %s: %w", run.ID, err)) // stops the CLI
					return
				}
			}
		}
	}()

	runAddress := address + "?run=" + run.ID
	tf, err := cli(applyCtx, cfg, work, run.ID, runAddress, runAddress)
	if err != nil {
		return err
	}
	err = tf.Apply(applyCtx, tfexec.Target(target), tfexec.Var(variable), tfexec.Var("sleep="+cfg.Sleep.String()))
	if cause := context.Cause(applyCtx); cause != nil && cause != context.Canceled {
		return cause
	}
	if err != nil {
		return fmt.Errorf("apply %s: %w", target, err)
	}
	return nil
}

// cli returns the CLI initialized in work with a data directory of its
// own (name) on the backend address; lockAddress "" locks on address.
func cli(ctx context.Context, cfg config, work, name, address, lockAddress string) (*tfexec.Terraform, error) {
	tf, err := tfexec.NewTerraform(work, cfg.Tofu)
	if err != nil {
		return nil, err
	}
	env := tfexec.CleanEnv(environ())
	env["TF_DATA_DIR"] = filepath.Join(cfg.Dir, "data-"+name)
	if err := tf.SetEnv(env); err != nil {
		return nil, err
	}
	if lockAddress == "" {
		lockAddress = address
	}
	err = tf.Init(ctx,
		tfexec.BackendConfig("address="+address),
		tfexec.BackendConfig("lock_address="+lockAddress),
		tfexec.BackendConfig("unlock_address="+lockAddress),
		tfexec.BackendConfig("lock_method=LOCK"),
		tfexec.BackendConfig("unlock_method=UNLOCK"),
	)
	if err != nil {
		return nil, fmt.Errorf("init %s: %w", name, err)
	}
	return tf, nil
}

func environ() map[string]string {
	env := map[string]string{}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	return env
}

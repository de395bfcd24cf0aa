// Package orchestrate runs OpenTofu or Terraform against KiloLock the way
// kl does, for a Go program that would otherwise shell out to kl: a CI
// runner, a controller, an internal portal. It plans within a scope,
// reserves what the plan reads and writes, applies within the
// reservations, and releases them (an orchestrated apply); it admits a
// plan against the state's quotas; and it checks a state for drift with a
// refresh-only plan. It talks to kld through a *client.Client, so it works
// the same over a socket and in-process over a database.
//
// # Basics
//
// An orchestrated apply of the configuration in ./infra, initialized with
// its http backend on kld:
//
//	ctx, stop := orchestrate.SignalContext(context.Background())
//	defer stop()
//	b, err := orchestrate.ReadTFBackend("infra") // server and state from tofu init
//	if err != nil {
//		return err
//	}
//	c, err := client.New(b.Server, client.WithCredentials(client.Token(os.Getenv("KL_TOKEN"))))
//	if err != nil {
//		return err
//	}
//	err = orchestrate.Apply(ctx, orchestrate.ApplyRequest{
//		Dir:          "infra",
//		Scope:        orchestrate.Scope{Files: []string{"infra/network.tf"}},
//		Orchestrated: true,
//		WaitTimeout:  5 * time.Minute,
//		Backend:      b,
//		Runs:         c,
//		Admission:    &orchestrate.Admission{Client: c, State: b.State, Out: os.Stderr},
//	})
//	var blocked *reserve.BlockedError
//	var aborted *orchestrate.AbortedError
//	switch {
//	case errors.As(err, &blocked):
//		// others held what the plan touches for longer than WaitTimeout
//	case errors.As(err, &aborted):
//		// someone ran kl apply abort: aborted.Hint() says what is left
//	case errors.Is(err, kilolock.ErrQuotaExceeded):
//		// the plan is past a hard limit: nothing was applied
//	}
//
// A drift check of the same state, recording what drifted:
//
//	res, err := orchestrate.DriftCheck(ctx, c, orchestrate.DriftCheckRequest{Dir: "infra", State: b.State})
//	if err != nil {
//		return err
//	}
//	fmt.Println(len(res.Check.Drifted), "instances drifted")
//
// Plan alone writes a plan spec (what kl plan -o writes) that a later Apply
// takes as its SpecPath; Apply refuses it with a *StaleSpecError when what
// it reads or writes changed since.
//
// # Caveats
//
// The IaC CLI runs as a process group of its own: when ctx ends it is
// interrupted (SIGINT), then killed after a grace period, and the error is
// a *StoppedError. Use SignalContext, or a context of your own, so that
// Ctrl-C or SIGTERM stops the CLI gracefully and releases the run's
// reservations instead of leaving them to the lease. Bad input (a scope,
// a plan spec, a backend that is not kld's) is a *kilolock.InvalidError
// whose Hint says what to do; the CLI failing is a *CLIError.
package orchestrate

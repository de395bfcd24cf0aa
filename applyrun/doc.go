// Package applyrun runs the life of an orchestrated apply (kl apply
// --orchestrated) on the engine: StartRun records it, Reserve and
// AcquireRun take its reservations all or nothing, LockRun takes its CLI
// apply's lock, RenewRun keeps its lease, EndRun and AbortRun free what
// it held. The vocabulary (kilolock.ApplyRun, kilolock.RunStore) is the
// root package's: a commit is held to a run's reservations inside the
// store's transaction.
//
//	run, err := applyrun.Reserve(ctx, e, "network", kilolock.RunRequest{Actor: "alice", Reservations: reservations}, reserve.WaitOptions{})
package applyrun

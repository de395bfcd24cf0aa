// Package history reads and rewrites the versions of a state: Show, Diff,
// AddressHistory, Search, Cone and Slice read one; PlanRollback, Rollback,
// RollbackResource, StateRm and StateMv make a new one on the server
// (through kilolock.Engine.Edit); SetTag names one; Export and Import move
// a state's content in and out.
//
// Each is a function over a *kilolock.Engine, taking it after ctx:
//
//	d, err := history.Diff(ctx, e, "network", kilolock.VersionRef{Kind: kilolock.RefNumber, N: 3}, kilolock.Latest)
//	res, err := history.Rollback(ctx, e, "network", ref, history.RollbackOptions{Actor: "alice"})
//
// Tags are kept by a Store that implements TagStore.
package history

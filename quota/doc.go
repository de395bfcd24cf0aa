// Package quota decides whether a state, or the environment it belongs
// to, may hold the managed resource instances a change leaves: soft and
// hard limits, what counts, and the admission of a plan before it runs.
//
// # Basics
//
// A Limit has a hard cap (exactly it is allowed, one more is refused) and
// an optional soft one (above it is allowed with a warning), or is
// explicitly unlimited. Resolve picks the nearest limit set among a
// scope's own and the defaults above it. Check counts one scope:
//
//	v := quota.Check(quota.ScopeState, "network", 98, +3, quota.Limit{Soft: 80, Hard: 100})
//	// v.Level == quota.Exceed: 101 would exceed the hard limit of 100
//
// Only managed resources' current objects count (Counts); PlanDelta
// reads a plan's delta the same way, so admission before a plan runs and
// enforcement when its state is committed follow one rule.
//
// # Caveats
//
// The package counts and decides; the counts come from the store, which
// enforces the verdict inside the commit's transaction.
package quota

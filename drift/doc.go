// Package drift keeps what refresh-only checks found: RecordDrift stores a
// check of a version (the instances whose real objects differ from the
// recorded ones, masked as the store's clear copy is), Drift and
// DriftCounts read the open records, AcceptRefresh commits a refreshed
// state as a new version. A Store keeps them by implementing DriftStore.
//
//	check, err := drift.RecordDrift(ctx, e, "network", report, kilolock.Caller{Actor: "ci"})
package drift

// Package retention prunes old versions by policy (keep the last N, keep
// N days; a tagged version, a pinned rollback target and an apply run's
// base are never pruned) and backs up and restores a whole store.
//
//	rep, err := retention.ApplyRetention(ctx, e, retention.RetentionOptions{})
//	sum, err := retention.Backup(ctx, e, w)
//
// A Store prunes by implementing RetentionStore, and backs up by
// implementing BackupStore.
package retention

package kilolock

// Operations the CLIs name in the LockInfo of a lock taken by a command
// that writes a state it did not plan: tofu state push, and the
// destination of init -migrate-state (the same in Terraform).
const (
	operationStatePush = "state-push"
	operationMigrate   = "migration destination state"
)

// writeSource is the source of a POST under lockID (none: "") when its
// writer named none: a push without a lock, else what the lock's
// Operation says it is (a state push, a migration), else an apply.
func writeSource(lockID string, locks []Lock) Source {
	if lockID == "" {
		return SourcePush
	}
	for _, l := range locks {
		if l.Info.ID != lockID {
			continue
		}
		switch l.Info.Operation {
		case operationStatePush:
			return SourcePush
		case operationMigrate:
			return SourceMigrate
		}
	}
	return SourceApply
}

// Package storekit holds what only Store implementations run, inside their
// own transactions: the lock rules (CheckLock, SelectUnlock, CheckDelete,
// CheckLockMode), the apply runs' checks (RunBlockers, CheckRunLock,
// CheckRunCommit) and PrepareCommit, which checks a commit's parts before
// a transaction begins. An embedder of the engine never needs it.
package storekit

package kilolock

import (
	"context"
	"io"
	"time"
)

// BackupStore is a Store that can write everything it keeps as one backup
// file and load such a file into an empty database, of its own kind or of
// another: both SQL stores are, so a team moves from SQLite to PostgreSQL,
// or back, with its whole history (docs/backup.md describes the format).
type BackupStore interface {
	// Backup writes a consistent snapshot of the whole database to w —
	// states, versions, their payloads, intervals and kept bytes, refused
	// commits, apply runs and reservations, tenancy, the audit log,
	// retention policies and markers — while writes go on: every row is
	// read in one snapshot transaction, so the backup holds exactly the
	// versions committed before it began. It streams: its memory is that of
	// the largest row, not of the database. Held locks are left out and
	// counted (BackupSummary.Excluded): they belong to processes that will
	// not follow the data. A table the backup does not know is an error
	// naming it, never a silent gap.
	Backup(ctx context.Context, w io.Writer) (*BackupSummary, error)

	// Restore loads a backup into the store, which must hold nothing yet
	// (a fresh database; a *RefusedError restore_target_not_empty
	// otherwise). It is one transaction: a malformed, truncated or
	// corrupt file (an *InvalidError) or any failure leaves the database as
	// it was. A backup made by a newer KiloLock, with tables or columns
	// this one does not know, is refused (backup_too_new).
	Restore(ctx context.Context, r io.Reader) (*BackupSummary, error)
}

// BackupSummary says what a backup holds: where it was taken, and how
// many rows of each table it carries.
type BackupSummary struct {
	// Format is the version of the file's layout (BackupFormat).
	Format int `json:"format"`
	// Store is the kind of database the backup was taken from ("sqlite",
	// "postgres") and Schema its schema version.
	Store  string `json:"store"`
	Schema int64  `json:"schema_version"`
	// Created is when the snapshot was taken.
	Created time.Time `json:"created"`
	// Tables are the tables carried, in the order they are restored.
	Tables []BackupTable `json:"tables"`
	// Excluded are the tables left out, with the rows they had.
	Excluded []BackupTable `json:"excluded"`
	// Bytes is the size of the (compressed) file.
	Bytes int64 `json:"bytes"`
}

// Rows is the number of rows the backup carries.
func (s *BackupSummary) Rows() int64 {
	var n int64
	for _, t := range s.Tables {
		n += t.Rows
	}
	return n
}

// BackupTable is one table of a backup and its rows; Reason says why an
// excluded table was left out.
type BackupTable struct {
	Name   string `json:"name"`
	Rows   int64  `json:"rows"`
	Reason string `json:"reason,omitempty"`
}

// BackupFormat is the version of the backup file's layout this release
// writes and reads.
const BackupFormat = 1

// errNoBackup is a store that keeps no backups.
func errNoBackup() error {
	return &RefusedError{Code: "backup_unsupported", Message: "this store cannot write or load backups",
		Hint: "use the SQLite or PostgreSQL store (store.Open)"}
}

// Backup writes a backup of the engine's whole store to w (see
// BackupStore.Backup).
func (e *Engine) Backup(ctx context.Context, w io.Writer) (*BackupSummary, error) {
	bs, ok := e.store.(BackupStore)
	if !ok {
		return nil, errNoBackup()
	}
	return bs.Backup(ctx, w)
}

// Restore loads the backup r into s, which must be empty (see
// BackupStore.Restore).
func Restore(ctx context.Context, s Store, r io.Reader) (*BackupSummary, error) {
	bs, ok := s.(BackupStore)
	if !ok {
		return nil, errNoBackup()
	}
	return bs.Restore(ctx, r)
}

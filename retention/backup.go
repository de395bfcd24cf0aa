package retention

import (
	"context"
	"io"
	"time"

	"github.com/kilolock/kilolock"
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
	// it was. Objects are content-addressed, so each one's address is
	// computed again from its content, and a sealed value must open with
	// its state's key: a file altered inside is refused
	// (backup_content_mismatch) as a damaged one is. A backup made by a
	// newer KiloLock, with tables or columns this one does not know, is
	// refused (backup_too_new). Its memory is bounded by lim, whatever the
	// file holds or claims: a line or value past lim is refused
	// (backup_line_too_long, backup_value_too_large).
	Restore(ctx context.Context, r io.Reader, lim RestoreLimits) (*BackupSummary, error)
}

// RestoreLimits bound what a restore holds in memory, whatever the file
// holds or claims; a zero field takes its default.
type RestoreLimits struct {
	// MaxLine is the longest line of the file read (DefaultMaxBackupLine).
	// A backup in this format writes no line longer than an eighth of the
	// default: a value longer than 64 KiB goes on lines of its own, in
	// pieces. A longer line is refused before more of it is read.
	MaxLine int64
	// MaxValue is the largest value (a version's kept document, an
	// instance object) a restore puts together from its pieces
	// (DefaultMaxBackupValue). It must be at least the largest state the
	// store took: kld's --body-limit, 64 MiB by default.
	MaxValue int64
}

// Restore limits by default.
const (
	DefaultMaxBackupLine  = 16 << 20
	DefaultMaxBackupValue = 256 << 20
)

// WithDefaults returns l with each zero field set to its default.
func (l RestoreLimits) WithDefaults() RestoreLimits {
	if l.MaxLine <= 0 {
		l.MaxLine = DefaultMaxBackupLine
	}
	if l.MaxValue <= 0 {
		l.MaxValue = DefaultMaxBackupValue
	}
	return l
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
// writes; it reads this one and the ones before it. Format 2 put a value
// longer than 64 KiB on lines of its own, in pieces, so that no line is
// long whatever a state holds.
const BackupFormat = 2

// errNoBackup is a store that keeps no backups.
func errNoBackup() error {
	return &kilolock.RefusedError{Code: "backup_unsupported", Message: "this store cannot write or load backups",
		Hint: "use the SQLite or PostgreSQL store (store.Open)"}
}

// Backup writes a backup of the engine's whole store to w (see
// BackupStore.Backup).
func Backup(ctx context.Context, e *kilolock.Engine, w io.Writer) (*BackupSummary, error) {
	bs, ok := e.Store().(BackupStore)
	if !ok {
		return nil, errNoBackup()
	}
	return bs.Backup(ctx, w)
}

// Restore loads the backup r into s, which must be empty, within lim (see
// BackupStore.Restore).
func Restore(ctx context.Context, s kilolock.Store, r io.Reader, lim RestoreLimits) (*BackupSummary, error) {
	bs, ok := s.(BackupStore)
	if !ok {
		return nil, errNoBackup()
	}
	return bs.Restore(ctx, r, lim)
}

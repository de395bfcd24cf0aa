package sqlstore

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

// Migration is one numbered file (NNNN_what.sql) of a dialect's schema
// changes. A released file is never edited; a change is a new file.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Migrations reads the *.sql files of fsys's migrations directory, in
// order of their number.
func Migrations(fsys fs.FS) ([]Migration, error) {
	names, err := fs.Glob(fsys, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var ms []Migration
	for _, name := range names {
		base := path.Base(name)
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name must start with a positive number and '_'", base)
		}
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		ms = append(ms, Migration{Version: v, Name: base, SQL: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	for i := 1; i < len(ms); i++ {
		if ms[i].Version == ms[i-1].Version {
			return nil, fmt.Errorf("migrations %s and %s share version %d", ms[i-1].Name, ms[i].Name, ms[i].Version)
		}
	}
	if len(ms) == 0 {
		return nil, fmt.Errorf("no migrations")
	}
	return ms, nil
}

// Migrator says how a dialect migrates.
type Migrator struct {
	// Table creates kl_schema_version (version, name, applied_at) when
	// missing.
	Table string
	// Lock, when set, serializes migrations across processes within the
	// transaction (SQLite's write transaction does already).
	Lock string
	// After runs last in the transaction.
	After func(ctx context.Context, tx Tx) error
}

// SchemaChange is what Migrate did to a database's schema.
type SchemaChange struct {
	// From is the schema version the database had (0 for a new one), To
	// the one it has now.
	From, To int
	// Applied are the migrations this call applied, in order: none when
	// the database was up to date, or another process migrated it first.
	Applied []string
}

// SchemaTooNewError is Migrate's refusal of a database that a newer
// KiloLock migrated past the last migration this one knows: its code
// would not know what the newer schema means. Nothing is written.
type SchemaTooNewError struct {
	// Database is the database's schema version and Migration the name
	// of the migration that made it; Known is this KiloLock's last.
	Database  int
	Migration string
	Known     int
}

func (e *SchemaTooNewError) Error() string {
	return fmt.Sprintf("database schema version %d (%s) is newer than this KiloLock's %d: a newer release migrated it", e.Database, e.Migration, e.Known)
}

// Hint says what to do next.
func (e *SchemaTooNewError) Hint() string {
	return fmt.Sprintf("run a KiloLock release that knows schema %d (the one that migrated it, or newer); to go back to this release, restore the backup taken before the upgrade", e.Database)
}

// Migrate applies the migrations ms the database lacks, all in one write
// transaction with their kl_schema_version rows, so that processes opening
// one database at once apply each exactly once: the first to take the
// write lock (and m.Lock) applies them, the others wait for it and find
// nothing left to do. A database a newer release migrated past ms is
// refused with a *SchemaTooNewError.
func Migrate(ctx context.Context, d Dialect, m Migrator, ms []Migration) (SchemaChange, error) {
	var (
		change SchemaChange
		tooNew *SchemaTooNewError
		latest = ms[len(ms)-1].Version
	)
	err := d.Translate("migrate", d.Write(ctx, func(tx Tx) error {
		change, tooNew = SchemaChange{}, nil // a retried transaction starts over
		if m.Lock != "" {
			if _, err := tx.Exec(ctx, m.Lock); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, m.Table); err != nil {
			return err
		}
		var current int64
		var name string
		err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0), coalesce(max(name), '') FROM kl_schema_version
			WHERE version = (SELECT max(version) FROM kl_schema_version)`).Scan(&current, &name)
		if err != nil {
			return err
		}
		change.From, change.To = int(current), int(current)
		if current > int64(latest) {
			tooNew = &SchemaTooNewError{Database: int(current), Migration: name, Known: latest}
			return tooNew
		}
		for _, mg := range ms {
			if int64(mg.Version) <= current {
				continue
			}
			// No arguments: each driver then runs every statement of it.
			if _, err := tx.Exec(ctx, mg.SQL); err != nil {
				return fmt.Errorf("apply %s: %w", mg.Name, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO kl_schema_version (version, name, applied_at) VALUES ($1, $2, {now})`, mg.Version, mg.Name); err != nil {
				return err
			}
			change.To = mg.Version
			change.Applied = append(change.Applied, mg.Name)
		}
		if m.After != nil {
			return m.After(ctx, tx)
		}
		return nil
	}))
	if tooNew != nil {
		// Translate would hide its type: it is no driver's error.
		return change, tooNew
	}
	return change, err
}

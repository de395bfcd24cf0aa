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
	// RefuseNewer refuses a database a newer release migrated past this
	// one's last migration; without it such a database is used as it is
	// (migrations only ever add, so several releases may share one during
	// a rolling upgrade).
	RefuseNewer bool
	// After runs last in the transaction.
	After func(ctx context.Context, tx Tx) error
}

// Migrate applies the migrations ms the database lacks, all in one write
// transaction with their kl_schema_version rows, so that processes opening
// one database at once apply each exactly once.
func Migrate(ctx context.Context, d Dialect, m Migrator, ms []Migration) error {
	return d.Translate("migrate", d.Write(ctx, func(tx Tx) error {
		if m.Lock != "" {
			if _, err := tx.Exec(ctx, m.Lock); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, m.Table); err != nil {
			return err
		}
		var current int64
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM kl_schema_version`).Scan(&current); err != nil {
			return err
		}
		latest := ms[len(ms)-1].Version
		if m.RefuseNewer && current > int64(latest) {
			return fmt.Errorf("database schema version %d is newer than this KiloLock's %d; upgrade KiloLock", current, latest)
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
		}
		if m.After != nil {
			return m.After(ctx, tx)
		}
		return nil
	}))
}

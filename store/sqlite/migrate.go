package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

// migrations are the schema changes, applied in order of their number
// (NNNN_what.sql). A released file is never edited; a change is a new file.
//
//go:embed migrations/*.sql
var migrations embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

func loadMigrations() ([]migration, error) {
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, name := range names {
		base := path.Base(name)
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name must start with a positive number and '_'", base)
		}
		b, err := migrations.ReadFile(name)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: base, sql: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i := 1; i < len(ms); i++ {
		if ms[i].version == ms[i-1].version {
			return nil, fmt.Errorf("migrations %s and %s share a number", ms[i-1].name, ms[i].name)
		}
	}
	return ms, nil
}

// SchemaVersion is the schema version this package migrates databases to.
func SchemaVersion() int {
	ms, err := loadMigrations()
	if err != nil || len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].version
}

// migrate applies the migrations the database has not seen, each in its
// own write transaction together with its kl_schema_version row, so that
// several processes opening one new file at once apply each exactly once.
// A database from a newer KiloLock (a version above ours) is refused.
func (s *Store) migrate(ctx context.Context) error {
	ms, err := loadMigrations()
	if err != nil {
		return fmt.Errorf("load migrations: %w", err)
	}
	if _, err := s.write.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS kl_schema_version (
    version    INTEGER PRIMARY KEY,
    name       TEXT    NOT NULL,
    applied_at TEXT    NOT NULL
)`); err != nil {
		return translate("migrate", err)
	}
	for _, m := range ms {
		err := s.update(ctx, "migrate", func(tx *sql.Tx) error {
			var current int
			if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM kl_schema_version`).Scan(&current); err != nil {
				return err
			}
			if current >= m.version {
				return nil
			}
			if _, err := tx.ExecContext(ctx, m.sql); err != nil {
				return fmt.Errorf("apply %s: %w", m.name, err)
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO kl_schema_version (version, name, applied_at) VALUES (?, ?, ?)`,
				m.version, m.name, formatTime(now()))
			return err
		})
		if err != nil {
			return err
		}
	}
	var current int
	if err := s.write.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM kl_schema_version`).Scan(&current); err != nil {
		return translate("migrate", err)
	}
	if latest := ms[len(ms)-1].version; current > latest {
		return fmt.Errorf("database schema version %d is newer than this KiloLock's %d; upgrade KiloLock", current, latest)
	}
	return nil
}

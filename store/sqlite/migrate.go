package sqlite

import (
	"context"
	"embed"

	"github.com/kilolock/kilolock/store/sqlstore"
)

// migrations are the schema changes, applied in order of their number
// (NNNN_what.sql). A released file is never edited; a change is a new file.
//
//go:embed migrations/*.sql
var migrations embed.FS

// SchemaVersion is the schema version this package migrates databases to.
func SchemaVersion() int {
	ms, err := sqlstore.Migrations(migrations)
	if err != nil {
		return 0
	}
	return ms[len(ms)-1].Version
}

// migrate applies the migrations the database has not seen, in one write
// transaction (BEGIN IMMEDIATE: several processes opening one new file at
// once apply each exactly once; the others wait on SQLite's write lock). A
// database from a newer KiloLock is refused (*sqlstore.SchemaTooNewError).
func (s *Store) migrate(ctx context.Context) error {
	ms, err := sqlstore.Migrations(migrations)
	if err != nil {
		return err
	}
	s.schema, err = sqlstore.Migrate(ctx, s.d, sqlstore.Migrator{
		Table: `CREATE TABLE IF NOT EXISTS kl_schema_version (
    version    INTEGER PRIMARY KEY,
    name       TEXT    NOT NULL,
    applied_at TEXT    NOT NULL
)`,
	}, ms)
	return err
}

// Schema is what Open did to the database's schema.
func (s *Store) Schema() sqlstore.SchemaChange { return s.schema }

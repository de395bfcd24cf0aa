package sqlite

import (
	"context"

	"github.com/kilolock/kilolock/store/sqlstore"
)

var _ sqlstore.BackupDialect = (*dialect)(nil)

// Kind names the database in a backup's header.
func (*dialect) Kind() string { return "sqlite" }

// Tables reads the tables and their columns from sqlite_schema (hidden
// and generated columns are not in table_info).
func (*dialect) Tables(ctx context.Context, tx sqlstore.Tx) (map[string][]string, error) {
	return sqlstore.ReadColumns(ctx, tx, `SELECT m.name, p.name FROM sqlite_schema AS m JOIN pragma_table_info(m.name) AS p
		WHERE m.type = 'table' ORDER BY m.name, p.cid`)
}

// InsertOverriding is empty: SQLite writes any id it is given (and an
// AUTOINCREMENT table's counter follows the largest).
func (*dialect) InsertOverriding() string { return "" }

// AfterRestore does nothing: SQLite's ids continue from the largest
// restored, and sqlite_sequence moved with each explicit id.
func (*dialect) AfterRestore(context.Context, sqlstore.Tx, []string) error { return nil }

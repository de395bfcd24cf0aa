package postgres

import (
	"context"

	"github.com/kilolock/kilolock/store/sqlstore"
)

var _ sqlstore.BackupDialect = (*dialect)(nil)

// Kind names the database in a backup's header.
func (*dialect) Kind() string { return "postgres" }

// Tables reads the base tables of the store's schema (the first on the
// search path) and their columns, but generated ones (payloads.jsonb_ok),
// which the database computes again.
func (*dialect) Tables(ctx context.Context, tx sqlstore.Tx) (map[string][]string, error) {
	return sqlstore.ReadColumns(ctx, tx, `SELECT c.table_name, c.column_name FROM information_schema.columns c
		JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
		WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE' AND c.is_generated = 'NEVER'
		ORDER BY c.table_name, c.ordinal_position`)
}

// InsertOverriding lets a Restore write the ids of identity columns
// (audit_log's GENERATED ALWAYS).
func (*dialect) InsertOverriding() string { return " OVERRIDING SYSTEM VALUE" }

// AfterRestore moves the sequence of each restored table's id column (a
// BIGSERIAL or an identity) past the largest id restored, so that new rows
// never take an id a restored one has (version ids are cache keys), and
// gathers the tables' statistics for the planner.
func (*dialect) AfterRestore(ctx context.Context, tx sqlstore.Tx, tables []string) error {
	var sequenced []string
	rows, err := tx.Query(ctx, `SELECT table_name FROM information_schema.columns
		WHERE table_schema = current_schema() AND column_name = 'id' AND table_name IN (SELECT k FROM {texts $1} AS u)
		AND pg_get_serial_sequence(quote_ident(table_name), 'id') IS NOT NULL ORDER BY table_name`, tables)
	err = sqlstore.EachRow(rows, err, func(r sqlstore.Rows) error {
		var t string
		sequenced = append(sequenced, t)
		return r.Scan(&sequenced[len(sequenced)-1])
	})
	if err != nil {
		return err
	}
	b := &sqlstore.Batch{}
	for _, t := range sequenced {
		b.Exec(nil, `SELECT setval(pg_get_serial_sequence(quote_ident($1), 'id'), (SELECT coalesce(max(id), 0) + 1 FROM `+t+`), false)`, t)
	}
	for _, t := range tables {
		b.Exec(nil, `ANALYZE `+t)
	}
	return tx.Send(ctx, b)
}

package testpg_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/kilolock/kilolock/internal/testpg"
)

func TestMain(m *testing.M) { testpg.Main(m) }

func TestURLGivesFreshDatabases(t *testing.T) {
	ctx := context.Background()
	names := map[string]bool{}
	for range 2 {
		conn, err := pgx.Connect(ctx, testpg.URL(t))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		var db string
		var tables int
		// A database of its own, or a schema of its own when the role may
		// not create databases.
		if err := conn.QueryRow(ctx, `SELECT current_database() || '.' || current_schema(),
			(SELECT count(*) FROM pg_tables WHERE schemaname = current_schema())`).Scan(&db, &tables); err != nil {
			t.Fatal(err)
		}
		if tables != 0 {
			t.Errorf("%s has %d tables, want none", db, tables)
		}
		if _, err := conn.Exec(ctx, "CREATE TABLE t (x int)"); err != nil {
			t.Fatal(err)
		}
		names[db] = true
	}
	if len(names) != 2 {
		t.Errorf("got %v, want two different databases or schemas", names)
	}
}

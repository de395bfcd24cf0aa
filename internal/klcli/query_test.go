package klcli_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/client"
	"github.com/kilolock/kilolock/internal/klcli"
	"github.com/kilolock/kilolock/internal/testpg"
)

// writes are statements kl query must refuse, leaving the store as it was.
var writes = []string{
	"DELETE FROM states",
	"INSERT INTO states (name, created_at) VALUES ('intruder', '2026-01-01T00:00:00.000000Z')",
	"UPDATE states SET lineage = 'x'",
	"DROP TABLE locks",
}

// checkWritesRefused runs every write through the CLI on b and checks that
// each fails as read-only with a clear message and changes nothing.
func checkWritesRefused(t *testing.T, b *klcli.Conn) {
	ctx := context.Background()
	before, err := states(b)
	if err != nil {
		t.Fatal(err)
	}
	hist, err := versions(b, "prod")
	if err != nil {
		t.Fatal(err)
	}
	for _, sql := range writes {
		t.Run(strings.Fields(sql)[0], func(t *testing.T) {
			var out strings.Builder
			err := (&klcli.CLI{Conn: b, Out: &out}).Query(ctx, sql)
			if !errors.Is(err, kilolock.ErrReadOnly) {
				t.Fatalf("%s: err = %v, want ErrReadOnly", sql, err)
			}
			if out.Len() > 0 {
				t.Errorf("output: %q", out.String())
			}
			if code := klcli.ExitCode(err); code != klcli.ExitError {
				t.Errorf("exit code %d, want %d", code, klcli.ExitError)
			}
			var report strings.Builder
			klcli.Report(&report, err)
			t.Logf("%s", report.String())
			if msg := report.String(); !strings.Contains(msg, "nothing was changed") || !strings.Contains(msg, "hint: ") {
				t.Errorf("report:\n%s", msg)
			}
		})
	}
	after, err := states(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Fatalf("states: %d before, %d after", len(before), len(after))
	}
	for i := range before {
		if before[i].Name != after[i].Name || before[i].Lineage != after[i].Lineage || before[i].Current != after[i].Current || len(before[i].Locks) != len(after[i].Locks) {
			t.Errorf("state changed: %+v -> %+v", before[i], after[i])
		}
	}
	if h2, err := versions(b, "prod"); err != nil || len(h2) != len(hist) {
		t.Errorf("history of prod: %d versions before, %d after (%v)", len(hist), len(h2), err)
	}
}

func TestQueryRefusesWrites(t *testing.T) {
	forEachBackend(t, func(t *testing.T, h *harness) {
		checkWritesRefused(t, h.raw)
	})
}

// TestQueryRefusesWritesPostgres runs the in-process refusal on PostgreSQL
// (a throwaway cluster, or KL_TEST_DATABASE_URL).
func TestQueryRefusesWritesPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("PostgreSQL in -short mode")
	}
	e := seededEngine(t, testpg.URL(t))
	checkWritesRefused(t, klcli.NewDatabaseConn(e, klcli.HTTPOptions{}))
}

// states lists b's states.
func states(b *klcli.Conn) ([]kilolock.State, error) {
	l, err := b.API().States(context.Background())
	if err != nil {
		return nil, err
	}
	return l.States, nil
}

// versions lists the newest versions of state name on b.
func versions(b *klcli.Conn, name string) ([]kilolock.Version, error) {
	l, err := b.API().History(context.Background(), name, client.HistoryOptions{})
	if err != nil {
		return nil, err
	}
	return l.Versions, nil
}

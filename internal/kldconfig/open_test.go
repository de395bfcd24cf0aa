package kldconfig

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/log"
	"github.com/jackc/pgx/v5"

	"github.com/kilolock/kilolock/internal/testpg"
	"github.com/kilolock/kilolock/store/postgres"
	"github.com/kilolock/kilolock/store/sqlite"
)

// kld migrate says what it applied, then that there is nothing to apply;
// a database a newer release migrated maps to ExitSchema with a hint, and
// a setting that is wrong to ExitConfig.
func TestMigrate(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "kilolock.db")
	var out bytes.Buffer
	if err := Migrate(ctx, log.New(io.Discard), &out, path, &Limits{}, &Encryption{}); err != nil {
		t.Fatal(err)
	}
	if want := regexp.MustCompile(`^schema 0 -> \d+: applied \d+ migration\(s\): 0001_init\.sql, .*\n$`); !want.MatchString(out.String()) {
		t.Errorf("first kld migrate printed %q", out.String())
	}
	out.Reset()
	if err := Migrate(ctx, log.New(io.Discard), &out, path, &Limits{}, &Encryption{}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(out.String(), "is up to date: nothing to apply\n") {
		t.Errorf("second kld migrate printed %q", out.String())
	}

	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.Exec(`INSERT INTO kl_schema_version (version, name, applied_at) VALUES (?, 'future.sql', '')`, sqlite.SchemaVersion()+1)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	for name, call := range map[string]func() error{
		"migrate": func() error { return Migrate(ctx, log.New(io.Discard), &out, path, &Limits{}, &Encryption{}) },
		"open": func() error {
			_, _, err := Open(ctx, log.New(&out), path, &Limits{}, &Encryption{})
			return err
		},
	} {
		err := call()
		code, hint := Exit(err)
		if code != ExitSchema || !strings.Contains(hint, "restore the backup") || !strings.Contains(err.Error(), "future.sql") {
			t.Errorf("%s of a newer schema: %v, exit %d, hint %q; want exit %d with a hint", name, err, code, hint, ExitSchema)
		}
	}

	_, _, err = Open(ctx, log.New(&out), "mysql://db/kilolock", &Limits{}, &Encryption{})
	if code, hint := Exit(err); code != ExitConfig || hint == "" {
		t.Errorf("open of an unknown scheme: %v, exit %d, hint %q; want %d with a hint", err, code, hint, ExitConfig)
	}
	if code, _ := Exit(errors.New("serve: boom")); code != ExitFailure {
		t.Errorf("a plain error maps to %d, want %d", code, ExitFailure)
	}
}

// TestOpenWaitsForMigration: a kld that starts while another process holds
// the migration lock of its PostgreSQL (a replica migrating, or kld
// migrate) waits for it past OpenTimeout, however long the migration
// takes, then starts on the migrated schema; before, it gave up after
// OpenTimeout with exit 69, and so did the migrating kld itself, its
// migration rolled back, when it took longer than that. A database that
// does not answer is still refused within OpenTimeout, exit 69.
func TestOpenWaitsForMigration(t *testing.T) {
	url := testpg.URL(t)
	defer func(d time.Duration) { OpenTimeout = d }(OpenTimeout)
	OpenTimeout = 500 * time.Millisecond
	ctx := t.Context()

	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, postgres.MigrateLock); err != nil {
		t.Fatal(err)
	}
	held := 4 * OpenTimeout
	released := make(chan error, 1)
	go func() {
		time.Sleep(held)
		_, err := conn.Exec(ctx, `SELECT pg_advisory_unlock($1)`, postgres.MigrateLock)
		released <- err
	}()
	start := time.Now()
	// With a setting of the pool in the URL, which a bare connection
	// would send the server as one of its own.
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	st, _, err := Open(ctx, log.New(io.Discard), url+sep+"pool_max_conns=8", &Limits{}, &Encryption{})
	took := time.Since(start)
	if err := <-released; err != nil {
		t.Fatal(err)
	}
	if err != nil {
		code, _ := Exit(err)
		t.Fatalf("kld starting while the migration lock was held %s (OpenTimeout %s): %v, exit %d; want it to wait and start", held, OpenTimeout, err, code)
	}
	st.Close()
	if took < held {
		t.Errorf("Open returned after %s, before the lock was let go (%s): it did not wait for the migration", took, held)
	}

	// Nothing listens on port 1: refused within the bound, exit 69.
	start = time.Now()
	_, _, err = Open(ctx, log.New(io.Discard), "postgres://kilolock@127.0.0.1:1/kilolock?connect_timeout=10", &Limits{}, &Encryption{})
	if code, _ := Exit(err); code != ExitUnavailable || time.Since(start) > OpenTimeout+5*time.Second {
		t.Errorf("a database that does not answer: %v, exit %d after %s; want %d within %s", err, code, time.Since(start), ExitUnavailable, OpenTimeout)
	}
}

func TestMain(m *testing.M) { testpg.Main(m) }

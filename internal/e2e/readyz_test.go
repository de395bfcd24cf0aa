package e2e_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kilolock/kilolock/internal/testpg"
	"github.com/kilolock/kilolock/internal/tofu"
)

// TestReadyzChecksTheDatabase: the readiness probe of deploy/kubernetes
// asks /readyz, which must answer whether the database does, not just
// that kld runs. With kld's PostgreSQL database closed to connections and
// its sessions ended, /readyz answers 503 with Retry-After while /healthz
// (the liveness probe: restarting kld would not help) stays 200; once the
// database takes connections again, /readyz is 200 again.
func TestReadyzChecksTheDatabase(t *testing.T) {
	t.Parallel()
	dbURL := testpg.URL(t)
	srv := tofu.StartKLD(t, dbURL)
	db := databaseName(t, dbURL)

	// The server's maintenance database, to close and reopen kld's.
	admin := connectOther(t, dbURL)
	setAllowConnections := func(allow bool) {
		t.Helper()
		q := `ALTER DATABASE ` + pgx.Identifier{db}.Sanitize() + ` ALLOW_CONNECTIONS false`
		if allow {
			q = `ALTER DATABASE ` + pgx.Identifier{db}.Sanitize() + ` ALLOW_CONNECTIONS true`
		}
		// Not t.Context(): it runs in a cleanup too, after that has ended.
		if _, err := admin.Exec(context.Background(), q); err != nil {
			t.Fatal(err)
		}
	}
	setAllowConnections(false)
	t.Cleanup(func() { setAllowConnections(true) })
	if _, err := admin.Exec(t.Context(), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1`, db); err != nil {
		t.Fatal(err)
	}

	probe := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Retry-After")
	}
	// The pool may hold a connection that has not noticed its end yet: a
	// probe or two may go by before every one of them has.
	deadline := time.Now().Add(30 * time.Second)
	code, retry := probe("/readyz")
	for code == http.StatusOK && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		code, retry = probe("/readyz")
	}
	if code != http.StatusServiceUnavailable || retry == "" {
		t.Errorf("/readyz with the database closed: %d (Retry-After %q), want 503 with Retry-After", code, retry)
	}
	if code, _ := probe("/healthz"); code != http.StatusOK {
		t.Errorf("/healthz with the database closed: %d, want 200", code)
	}

	setAllowConnections(true)
	deadline = time.Now().Add(30 * time.Second)
	for code, _ = probe("/readyz"); code != http.StatusOK && time.Now().Before(deadline); code, _ = probe("/readyz") {
		time.Sleep(100 * time.Millisecond)
	}
	if code != http.StatusOK {
		t.Errorf("/readyz with the database back: %d, want 200", code)
	}
}

// databaseName is the database a postgres:// URL names.
func databaseName(t *testing.T, dbURL string) string {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil || len(u.Path) < 2 {
		t.Fatalf("no database in %s (%v)", dbURL, err)
	}
	return u.Path[1:]
}

// connectOther connects to the maintenance database "postgres" of
// dbURL's server.
func connectOther(t *testing.T, dbURL string) *pgx.Conn {
	t.Helper()
	u, _ := url.Parse(dbURL)
	u.Path = "/postgres"
	conn, err := pgx.Connect(t.Context(), u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

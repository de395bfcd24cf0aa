package e2e_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	_ "modernc.org/sqlite" // the "sqlite" driver, to stamp a file as a newer release would

	"github.com/kilolock/kilolock/internal/kldconfig"
	"github.com/kilolock/kilolock/internal/testpg"
	"github.com/kilolock/kilolock/internal/tofu"
	"github.com/kilolock/kilolock/store/postgres"
)

// migratedLine and upToDateLine are what kld migrate prints.
var (
	migratedLine = regexp.MustCompile(`(?m)^schema (\d+) -> (\d+): applied (\d+) migration\(s\): (.+)$`)
	upToDateLine = regexp.MustCompile(`(?m)^schema (\d+) is up to date: nothing to apply$`)
)

// TestMigrateOnce: during an upgrade on one PostgreSQL, migrations run
// once however many processes start at once, whether two `kld migrate`
// (the Job of deploy/kubernetes) or two kld replicas that migrate as they
// start. The test holds the migration's advisory lock while they start,
// so that both are seen waiting on it; once it lets go, exactly one
// applies every migration, the other finds nothing to do, and both
// replicas serve one state.
func TestMigrateOnce(t *testing.T) {
	t.Parallel()
	tofu.Binary(t)

	t.Run("kld migrate", func(t *testing.T) {
		t.Parallel()
		url := testpg.URL(t)
		outs := make(chan string, 2)
		holdMigrateLock(t, url, 2, func() {
			for range 2 {
				cmd := kldCommand(t, "migrate", "--database", url)
				go func() {
					out, err := cmd.CombinedOutput()
					if err != nil {
						out = fmt.Appendf(out, "\n(%v)", err)
					}
					outs <- string(out)
				}()
			}
		})
		var got [2]string
		for i := range got {
			got[i] = <-outs
		}
		applied, upToDate := 0, 0
		version := 0
		for i, out := range got {
			switch m, u := migratedLine.FindStringSubmatch(out), upToDateLine.FindStringSubmatch(out); {
			case m != nil:
				applied++
				version, _ = strconv.Atoi(m[2])
				if n, _ := strconv.Atoi(m[3]); m[1] != "0" || n != len(strings.Split(m[4], ", ")) {
					t.Errorf("kld migrate %d on a new database: %q", i, m[0])
				}
			case u != nil:
				upToDate++
			default:
				t.Errorf("kld migrate %d printed neither what it applied nor that the schema is up to date:\n%s", i, out)
			}
		}
		if applied != 1 || upToDate != 1 {
			t.Fatalf("%d kld migrate applied the migrations and %d found nothing to do; want 1 and 1:\n%s\n---\n%s", applied, upToDate, got[0], got[1])
		}
		if rows, latest := schemaRows(t, url); latest != version {
			t.Errorf("kl_schema_version: %d rows up to %d, want up to %d", rows, latest, version)
		}
		// The replicas then start on a schema that is up to date.
		a, b := tofu.StartKLD(t, url), tofu.StartKLD(t, url)
		for _, srv := range []*tofu.Server{a, b} {
			if strings.Contains(srv.Log(), "migrated the database schema") {
				t.Errorf("a replica migrated after kld migrate:\n%s", srv.Log())
			}
		}
		applyOnOneReadOnOther(t, a, b)
	})

	t.Run("replicas", func(t *testing.T) {
		t.Parallel()
		url := testpg.URL(t)
		var replicas [2]*tofu.Server
		holdMigrateLock(t, url, 2, func() {
			for i := range replicas {
				replicas[i] = tofu.Launch(t, kldCommand(t, "--listen", "127.0.0.1:0", "--database", url), url)
			}
		})
		migrated := 0
		for i, srv := range replicas {
			if err := srv.WaitReady(); err != nil {
				t.Fatalf("replica %d: %v\n%s", i, err, srv.Log())
			}
			if strings.Contains(srv.Log(), "migrated the database schema") {
				migrated++
			}
		}
		if migrated != 1 {
			t.Errorf("%d replicas logged that they migrated the schema, want 1:\n%s\n---\n%s", migrated, replicas[0].Log(), replicas[1].Log())
		}
		rows, latest := schemaRows(t, url)
		if rows == 0 || latest == 0 {
			t.Errorf("kl_schema_version: %d rows up to %d", rows, latest)
		}
		applyOnOneReadOnOther(t, replicas[0], replicas[1])
	})
}

// TestSchemaTooNew: a kld that finds a database a newer release migrated
// (its kl_schema_version past the last migration this kld knows) refuses
// to start, serving nothing, with exit code 65 and a message naming both
// versions and what to do; so does kld migrate. On both stores.
func TestSchemaTooNew(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, databaseURL string) {
		out, err := kldCommand(t, "migrate", "--database", databaseURL).CombinedOutput()
		m := migratedLine.FindStringSubmatch(string(out))
		if err != nil || m == nil {
			t.Fatalf("kld migrate on a new database: %v\n%s", err, out)
		}
		known, _ := strconv.Atoi(m[2])
		future := known + 1
		const name = "9999_from_a_newer_release.sql"
		stampSchema(t, databaseURL, future, name)
		rowsBefore, _ := schemaRows(t, databaseURL)

		for _, args := range [][]string{
			{"--listen", "127.0.0.1:0", "--database", databaseURL},
			{"migrate", "--database", databaseURL},
		} {
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			cmd := kldCommandContext(ctx, t, args...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			cancel()
			if cmd.ProcessState == nil {
				t.Fatalf("kld %s: %v", strings.Join(args, " "), err)
			}
			if code := cmd.ProcessState.ExitCode(); code != kldconfig.ExitSchema {
				t.Errorf("kld %s on a newer schema: exit %d, want %d\n%s", args[0], code, kldconfig.ExitSchema, stderr.String())
			}
			if strings.Contains(stdout.String(), "http://") {
				t.Errorf("kld %s on a newer schema listened: %s", args[0], stdout.String())
			}
			for _, want := range []string{
				fmt.Sprintf("schema version %d (%s)", future, name),
				fmt.Sprintf("this KiloLock's %d", known),
				fmt.Sprintf("run a KiloLock release that knows schema %d", future),
				"restore the backup taken before the upgrade",
				fmt.Sprintf("exit_code=%d", kldconfig.ExitSchema),
			} {
				if !strings.Contains(stderr.String(), want) {
					t.Errorf("kld %s on a newer schema did not say %q:\n%s", args[0], want, stderr.String())
				}
			}
		}
		if rowsAfter, latest := schemaRows(t, databaseURL); rowsAfter != rowsBefore || latest != future {
			t.Errorf("kl_schema_version after the refusals: %d rows up to %d, want %d up to %d as stamped", rowsAfter, latest, rowsBefore, future)
		}
	})
}

// kldCommand is a command line of the kld under test, with none of the
// developer's KL_ settings.
func kldCommand(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	return kldCommandContext(context.Background(), t, args...)
}

func kldCommandContext(ctx context.Context, t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.CommandContext(ctx, tofu.BuildKLD(t), args...)
	cmd.Env = tofu.CleanEnv("KL_")
	return cmd
}

// holdMigrateLock holds the advisory lock of PostgreSQL migrations on url
// while start starts processes that migrate, until waiters of them are
// seen waiting for it.
func holdMigrateLock(t *testing.T, url string, waiters int, start func()) {
	t.Helper()
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, postgres.MigrateLock); err != nil {
		t.Fatal(err)
	}
	start()
	deadline := time.Now().Add(time.Minute)
	for {
		var n int
		err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_locks
			WHERE locktype = 'advisory' AND NOT granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
			AND (classid::bigint << 32 | objid::bigint) = $1`, postgres.MigrateLock).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		if n >= waiters {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d processes wait for the migration lock after a minute, want %d", n, waiters)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock($1)`, postgres.MigrateLock); err != nil {
		t.Fatal(err)
	}
}

// schemaRows counts the rows of kl_schema_version and their latest version.
func schemaRows(t *testing.T, databaseURL string) (rows, latest int) {
	t.Helper()
	const q = `SELECT count(*), coalesce(max(version), 0) FROM kl_schema_version`
	if strings.HasPrefix(databaseURL, "postgres") {
		conn, err := pgx.Connect(t.Context(), databaseURL)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		if err := conn.QueryRow(t.Context(), q).Scan(&rows, &latest); err != nil {
			t.Fatal(err)
		}
		return rows, latest
	}
	db, err := sql.Open("sqlite", databaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.QueryRowContext(t.Context(), q).Scan(&rows, &latest); err != nil {
		t.Fatal(err)
	}
	return rows, latest
}

// stampSchema records migration version (name) in databaseURL's
// kl_schema_version, as a newer release's kld migrate would.
func stampSchema(t *testing.T, databaseURL string, version int, name string) {
	t.Helper()
	if strings.HasPrefix(databaseURL, "postgres") {
		conn, err := pgx.Connect(t.Context(), databaseURL)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(t.Context(), `INSERT INTO kl_schema_version (version, name) VALUES ($1, $2)`, version, name); err != nil {
			t.Fatal(err)
		}
		return
	}
	db, err := sql.Open("sqlite", databaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(t.Context(), `INSERT INTO kl_schema_version (version, name, applied_at) VALUES (?, ?, ?)`, version, name, time.Now().UTC().Format(time.RFC3339)); err != nil {
		t.Fatal(err)
	}
}

// applyOnOneReadOnOther applies a configuration through replica a and
// plans it through replica b: both serve the one database.
func applyOnOneReadOnOther(t *testing.T, a, b *tofu.Server) {
	t.Helper()
	wd := tofu.NewWorkdir(t, a.Backend("upgrade")+smallConfig("v1"))
	wd.Must("init", "-no-color")
	wd.Must("apply", "-auto-approve", "-no-color")
	other := tofu.NewWorkdir(t, b.Backend("upgrade")+smallConfig("v1"))
	other.Must("init", "-no-color")
	if stdout, stderr, code := other.Run("plan", "-detailed-exitcode", "-no-color"); code != 0 {
		t.Errorf("plan through the other replica: exit %d, want 0 (no changes)\n%s\n%s", code, stdout, stderr)
	}
	if got := stateList(t, other); !equalLists(got, smallAddresses) {
		t.Errorf("state list through the other replica = %q", got)
	}
}

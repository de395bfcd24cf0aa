package kldconfig

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/charmbracelet/log"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/store"
)

// OpenTimeout bounds how long kld waits at start for its database to
// answer; then it exits (69) to be restarted. Once the database answers,
// kld waits as long as the migrations take, its own or those of a replica
// that holds the migration lock: a migration cut short is rolled back, and
// a kld restarted for it would only start it over (a large index rebuild
// would then never finish). A variable for tests.
var OpenTimeout = 30 * time.Second

// Open opens database (a --database value) with the limits' and the
// keys' options, and logs the migrations it applied. A PostgreSQL
// database must answer within OpenTimeout; migrating is not bounded (see
// OpenTimeout), ctx ends it. It returns what to log of the keys (see
// Encryption.StoreOptions) and an *ExitError: ExitConfig for a wrong
// setting or key, ExitSchema for a database a newer KiloLock migrated,
// ExitUnavailable when the database cannot be reached.
func Open(ctx context.Context, logger *log.Logger, database string, l *Limits, e *Encryption) (kilolock.Store, string, error) {
	bounded, cancel := context.WithTimeout(ctx, OpenTimeout)
	defer cancel()
	if !answers(bounded, database) {
		ctx = bounded // open says why, within the bound, as an *ExitError
	}
	st, atRest, err := open(ctx, logger, database, l, e)
	if err != nil {
		return nil, "", err
	}
	if ch, _ := store.Schema(st); len(ch.Applied) > 0 {
		logger.Info("migrated the database schema", "from", ch.From, "to", ch.To, "applied", len(ch.Applied))
	}
	return st, atRest, nil
}

// Migrate is kld migrate: it brings database's schema up to date (as kld
// does at start, under the same lock, so it may run beside replicas),
// prints what it did on w and closes the database. It waits for the
// database as long as ctx lets it: a large migration may take minutes.
func Migrate(ctx context.Context, logger *log.Logger, w io.Writer, database string, l *Limits, e *Encryption) error {
	st, _, err := open(ctx, logger, database, l, e)
	if err != nil {
		return err
	}
	defer st.Close()
	ch, ok := store.Schema(st)
	switch {
	case !ok:
		return fmt.Errorf("%s: not a store kld migrates", Redact(database))
	case len(ch.Applied) == 0:
		_, err = fmt.Fprintf(w, "schema %d is up to date: nothing to apply\n", ch.To)
	default:
		_, err = fmt.Fprintf(w, "schema %d -> %d: applied %d migration(s): %s\n", ch.From, ch.To, len(ch.Applied), strings.Join(ch.Applied, ", "))
	}
	return err
}

// answers reports whether database answers a connection within ctx: a
// PostgreSQL URL that pgx connects to. SQLite, a file, always does.
func answers(ctx context.Context, database string) bool {
	scheme, _, ok := strings.Cut(database, "://")
	if !ok || !strings.EqualFold(scheme, "postgres") && !strings.EqualFold(scheme, "postgresql") {
		return true
	}
	cfg, err := pgxpool.ParseConfig(database) // as the store parses it: pool_* settings too
	if err != nil {
		return false
	}
	conn, err := pgx.ConnectConfig(ctx, cfg.ConnConfig)
	if err != nil {
		return false
	}
	conn.Close(ctx)
	return true
}

func open(ctx context.Context, logger *log.Logger, database string, l *Limits, e *Encryption) (kilolock.Store, string, error) {
	keys, atRest, err := e.StoreOptions(logger)
	if err != nil {
		return nil, "", &ExitError{ExitConfig, err}
	}
	st, err := store.Open(ctx, database, append(l.StoreOptions(), keys...)...)
	var tooNew *store.SchemaTooNewError
	switch {
	case err == nil:
		return st, atRest, nil
	case errors.As(err, &tooNew):
		return nil, "", &ExitError{ExitSchema, fmt.Errorf("--database %s: %w", Redact(database), err)}
	case errors.Is(err, kilolock.ErrInvalid), errors.Is(err, kilolock.ErrKey):
		return nil, "", &ExitError{ExitConfig, fmt.Errorf("--database %s: %w", Redact(database), err)}
	}
	return nil, "", &ExitError{ExitUnavailable, fmt.Errorf("open database %s: %w", Redact(database), err)}
}

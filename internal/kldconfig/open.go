package kldconfig

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/charmbracelet/log"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/store"
)

// OpenTimeout bounds how long kld waits at start for its database,
// migrations included: a replica that starts while another migrates waits
// for it that long, then exits (69) to be restarted.
const OpenTimeout = 30 * time.Second

// Open opens database (a --database value) with the limits' and the
// keys' options, within OpenTimeout, and logs the migrations it applied.
// It returns what to log of the keys (see Encryption.StoreOptions) and an
// *ExitError: ExitConfig for a wrong setting or key, ExitSchema for a
// database a newer KiloLock migrated, ExitUnavailable when the database
// cannot be reached.
func Open(ctx context.Context, logger *log.Logger, database string, l *Limits, e *Encryption) (kilolock.Store, string, error) {
	ctx, cancel := context.WithTimeout(ctx, OpenTimeout)
	defer cancel()
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

package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/store/sqlstore"
)

// translate turns an error met during op into one a kilolock.Store may
// return. The driver's *sqlite.Error never crosses the boundary: its
// message is kept, its type is not, and its code picks the sentinel:
//
//   - SQLITE_BUSY, SQLITE_LOCKED (another process held the write lock past
//     the busy timeout), I/O, open and corruption errors: ErrUnavailable;
//   - SQLITE_READONLY: ErrReadOnly;
//   - a CHECK constraint: ErrInvalid; a foreign key (what it names is
//     gone): ErrNotFound; any other constraint: ErrConflict.
//
// Errors the store made itself (kilolock sentinels and typed errors) and
// the context's errors pass through.
func (*dialect) Translate(op string, err error) error { return translate(op, err) }

func translate(op string, err error) error {
	if err == nil {
		return nil
	}
	var se *sqlite.Error
	if !errors.As(err, &se) {
		switch {
		case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
			return fmt.Errorf("%s: %w", op, err)
		case errors.Is(err, sql.ErrConnDone), errors.Is(err, driver.ErrBadConn),
			// database/sql's own, unexported: the store is closed (shutting down).
			err.Error() == "sql: database is closed", err.Error() == "sql: statement is closed":
			return fmt.Errorf("sqlite: %s: %w: %s", op, kilolock.ErrUnavailable, err.Error())
		case sqlstore.Own(err):
			return err
		}
		return fmt.Errorf("sqlite: %s: %w", op, err)
	}
	msg := err.Error()
	switch code := se.Code(); code & 0xff {
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		return fmt.Errorf("sqlite: %s: %w: the database stayed locked by another writer for over %s (%s)", op, kilolock.ErrUnavailable, busyTimeout, msg)
	case sqlite3.SQLITE_READONLY:
		return fmt.Errorf("sqlite: %s: %w: %s", op, kilolock.ErrReadOnly, msg)
	case sqlite3.SQLITE_CONSTRAINT:
		switch code {
		case sqlite3.SQLITE_CONSTRAINT_CHECK:
			return &kilolock.InvalidError{Code: "constraint", Message: fmt.Sprintf("%s: %s", op, msg), Hint: "check the value against the documented choices"}
		case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
			return fmt.Errorf("sqlite: %s: %w: %s", op, kilolock.ErrNotFound, msg)
		}
		return fmt.Errorf("sqlite: %s: %w: %s", op, kilolock.ErrConflict, msg)
	case sqlite3.SQLITE_IOERR, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_FULL, sqlite3.SQLITE_CORRUPT,
		sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_NOMEM, sqlite3.SQLITE_PERM, sqlite3.SQLITE_PROTOCOL,
		sqlite3.SQLITE_NOLFS, sqlite3.SQLITE_AUTH, sqlite3.SQLITE_INTERRUPT:
		return fmt.Errorf("sqlite: %s: %w: %s", op, kilolock.ErrUnavailable, msg)
	}
	return fmt.Errorf("sqlite: %s: %s", op, msg)
}

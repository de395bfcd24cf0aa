package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/kilolock/kilolock"
)

// storeError is an error of this package's own making (not the driver's),
// such as stored data that cannot be decoded. translate passes it through.
type storeError struct{ msg string }

func (e *storeError) Error() string { return "postgres: " + e.msg }

func corrupt(format string, args ...any) error {
	return &storeError{msg: fmt.Sprintf(format, args...)}
}

// errRetry asks inTx to run the transaction again: the state row vanished
// between creating it and locking it (a concurrent Delete).
var errRetry = errors.New("postgres: retry the transaction")

// translate turns what a transaction returned into what the Store returns.
// kilolock errors and storeErrors pass through; driver errors are
// translated here, once, and never cross the Store boundary: their text is
// kept, their types are not.
func translate(err error) error {
	if err == nil {
		return nil
	}
	if isKilolock(err) {
		return err
	}
	var se *storeError
	if errors.As(err, &se) {
		return err
	}
	for _, ce := range []error{context.Canceled, context.DeadlineExceeded} {
		if errors.Is(err, ce) {
			return fmt.Errorf("postgres: %w", ce)
		}
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		if unavailableCode(pe.Code) {
			return fmt.Errorf("%w: %s", kilolock.ErrUnavailable, err.Error())
		}
		return errors.New("postgres: " + err.Error())
	}
	if connectionFailure(err) {
		return fmt.Errorf("%w: %s", kilolock.ErrUnavailable, err.Error())
	}
	// A bug of ours (a scan into the wrong type, say): not the user's
	// doing, and not something a retry would cure.
	return errors.New("postgres: " + err.Error())
}

// connectionFailure reports whether err is about reaching the server:
// refused or broken connections, TLS, DNS, timeouts, a closed pool.
func connectionFailure(err error) bool {
	var (
		ce *pgconn.ConnectError
		ne net.Error
	)
	switch {
	case errors.As(err, &ce), errors.As(err, &ne), pgconn.Timeout(err), pgconn.SafeToRetry(err):
		return true
	case errors.Is(err, pgconn.ErrConnClosed), errors.Is(err, net.ErrClosed),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return true
	}
	return strings.Contains(err.Error(), "closed pool") // puddle.ErrClosedPool
}

// isKilolock reports whether err is one of the root package's errors.
func isKilolock(err error) bool {
	for _, s := range []error{
		kilolock.ErrNotFound, kilolock.ErrLocked, kilolock.ErrLockMismatch,
		kilolock.ErrConflict, kilolock.ErrStale, kilolock.ErrInvalid,
		kilolock.ErrEncrypted, kilolock.ErrReadOnly, kilolock.ErrUnavailable,
	} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// unavailableCode reports whether a SQLSTATE means the database cannot
// serve us now, though our request was fine: 503, try again.
func unavailableCode(code string) bool {
	switch {
	case strings.HasPrefix(code, "08"): // connection exception
		return true
	case strings.HasPrefix(code, "53"): // insufficient resources: too many connections, disk full
		return true
	case code == "57P01", code == "57P02", code == "57P03": // admin/crash shutdown, cannot connect now
		return true
	case code == "40001", code == "40P01": // serialization failure, deadlock, after our retries
		return true
	case code == "25006": // read-only transaction: a hot standby, or default_transaction_read_only
		return true
	case code == "57014": // statement cancelled (statement_timeout, lock_timeout set by an operator)
		return true
	}
	return false
}

// retryable reports whether the whole transaction may simply run again.
func retryable(err error) bool {
	if errors.Is(err, errRetry) {
		return true
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "40001" || pe.Code == "40P01"
	}
	// Nothing reached the server (e.g. a pooled connection had died).
	return pgconn.SafeToRetry(err)
}

const maxAttempts = 5

// inTx runs fn in a transaction, committed when fn returns nil and rolled
// back otherwise (or on panic), retried on serialization failures and
// deadlocks. Its error is translated. Its strings travel escaped (textTx).
func (s *Store) inTx(ctx context.Context, opts pgx.TxOptions, fn func(pgx.Tx) error) error {
	var err error
	for attempt := 1; ; attempt++ {
		err = pgx.BeginTxFunc(ctx, s.pool, opts, func(tx pgx.Tx) error { return fn(textTx{tx}) })
		if err == nil || attempt == maxAttempts || !retryable(err) || ctx.Err() != nil {
			break
		}
		// Back off a little, more each time, so retries do not collide again.
		select {
		case <-time.After(time.Duration(attempt*attempt) * 5 * time.Millisecond):
		case <-ctx.Done():
		}
	}
	if errors.Is(err, errRetry) {
		err = fmt.Errorf("%w: state row kept disappearing under concurrent deletes", kilolock.ErrUnavailable)
	}
	return translate(err)
}

// readTx runs fn in a read-only REPEATABLE READ transaction: one snapshot
// for every statement in it.
func (s *Store) readTx(ctx context.Context, fn func(pgx.Tx) error) error {
	return s.inTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, fn)
}

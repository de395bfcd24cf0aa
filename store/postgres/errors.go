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
	"github.com/kilolock/kilolock/store/sqlstore"
)

// Translate turns what a transaction returned into what the Store
// returns. The root package's errors and the store's own pass through;
// driver errors are translated here, once, and never cross the Store
// boundary: their text is kept, their types are not. A unique violation is
// ErrConflict, a check violation ErrInvalid, a foreign key violation (what
// it names was deleted meanwhile) ErrNotFound.
func (*dialect) Translate(op string, err error) error { return translate(err) }

func translate(err error) error {
	if err == nil || sqlstore.Own(err) {
		return err
	}
	for _, ce := range []error{context.Canceled, context.DeadlineExceeded} {
		if errors.Is(err, ce) {
			return fmt.Errorf("postgres: %w", ce)
		}
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case unavailableCode(pe.Code):
			return fmt.Errorf("%w: %s", kilolock.ErrUnavailable, err.Error())
		case pe.Code == "23505": // unique_violation
			return fmt.Errorf("%w: %s", kilolock.ErrConflict, pe.Message)
		case pe.Code == "23514": // check_violation
			return &kilolock.InvalidError{Code: "constraint", Message: pe.Message, Hint: "check the value against the documented choices"}
		case pe.Code == "23503": // foreign_key_violation
			return fmt.Errorf("%w: %s", kilolock.ErrNotFound, pe.Message)
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
	if errors.Is(err, sqlstore.ErrRetry) {
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

// Write runs fn in a READ COMMITTED transaction (the shared operations
// take the state's row lock with SELECT … FOR UPDATE), committed when fn
// returns nil and rolled back otherwise (or on panic), retried on
// serialization failures, deadlocks and ErrRetry.
func (d *dialect) Write(ctx context.Context, fn func(sqlstore.Tx) error) error {
	return d.inTx(ctx, pgx.TxOptions{}, fn)
}

// Read runs fn in a read-only REPEATABLE READ transaction: one snapshot
// for every statement in it.
func (d *dialect) Read(ctx context.Context, fn func(sqlstore.Tx) error) error {
	return d.inTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, fn)
}

// Pool runs single statements on the pool.
func (d *dialect) Pool() sqlstore.Tx { return tx{d.pool} }

func (d *dialect) inTx(ctx context.Context, opts pgx.TxOptions, fn func(sqlstore.Tx) error) error {
	var err error
	for attempt := 1; ; attempt++ {
		err = runTx(ctx, d.pool, opts, fn)
		if err == nil || attempt == maxAttempts || !retryable(err) || ctx.Err() != nil {
			break
		}
		// Back off a little, more each time, so retries do not collide again.
		select {
		case <-time.After(time.Duration(attempt*attempt) * 5 * time.Millisecond):
		case <-ctx.Done():
		}
	}
	if errors.Is(err, sqlstore.ErrRetry) {
		err = fmt.Errorf("%w: state row kept disappearing under concurrent deletes", kilolock.ErrUnavailable)
	}
	return err
}

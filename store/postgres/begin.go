package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kilolock/kilolock/store/sqlstore"
)

// runTx runs fn in a transaction of opts, as pgx.BeginTxFunc does, but
// begins it with fn's first batch (pgx.Batch.BeginTx) rather than in a
// round trip of its own: the store's operations open with a batch (the
// state's row lock and what they read with it), so a LOCK, a commit and
// an UNLOCK each cost PostgreSQL and kld one round trip fewer. A
// transaction whose first statement is not a batch begins as before.
func runTx(ctx context.Context, pool *pgxpool.Pool, opts pgx.TxOptions, fn func(sqlstore.Tx) error) (err error) {
	t := &lazyTx{pool: pool, opts: opts}
	defer func() {
		if t.tx == nil {
			return
		}
		if rerr := t.tx.Rollback(ctx); rerr != nil && !errors.Is(rerr, pgx.ErrTxClosed) {
			err = rerr
		}
	}()
	if err := fn(tx{t}); err != nil {
		if t.tx != nil {
			_ = t.tx.Rollback(ctx) // the error to return is fn's
		}
		return err
	}
	if t.tx == nil {
		return nil // fn sent nothing
	}
	return t.tx.Commit(ctx)
}

// lazyTx is the querier of runTx's transaction: nothing until the first
// statement, which begins it.
type lazyTx struct {
	pool *pgxpool.Pool
	opts pgx.TxOptions
	tx   pgx.Tx // nil until begun
}

// begin begins the transaction in a round trip of its own.
func (t *lazyTx) begin(ctx context.Context) (pgx.Tx, error) {
	if t.tx == nil {
		tx, err := t.pool.BeginTx(ctx, t.opts)
		if err != nil {
			return nil, err
		}
		t.tx = tx
	}
	return t.tx, nil
}

func (t *lazyTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	tx, err := t.begin(ctx)
	if err != nil {
		return nil, err
	}
	return tx.Query(ctx, sql, args...)
}

func (t *lazyTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	tx, err := t.begin(ctx)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	return tx.Exec(ctx, sql, args...)
}

func (t *lazyTx) CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error) {
	tx, err := t.begin(ctx)
	if err != nil {
		return 0, err
	}
	return tx.CopyFrom(ctx, table, columns, src)
}

// SendBatch sends b, led by the transaction's BEGIN when it is the first
// statement, whose result it reads: the caller reads b's as usual.
func (t *lazyTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if t.tx != nil {
		return t.tx.SendBatch(ctx, b)
	}
	var first pgx.Batch
	first.BeginTx(t.opts)
	first.QueuedQueries = append(first.QueuedQueries, b.QueuedQueries...)
	br := t.pool.SendBatch(ctx, &first)
	t.tx = br.Tx() // nil when no connection was had: nothing to end
	if _, err := br.Exec(); err != nil {
		return failedBatch{br, err}
	}
	return br
}

// failedBatch is a batch whose BEGIN failed: each of its results is that
// error.
type failedBatch struct {
	pgx.BatchResults
	err error
}

func (f failedBatch) Exec() (pgconn.CommandTag, error) { return pgconn.CommandTag{}, f.err }
func (f failedBatch) Query() (pgx.Rows, error)         { return nil, f.err }
func (f failedBatch) Close() error {
	_ = f.BatchResults.Close()
	return f.err
}

package sqlite

import (
	"context"
	"database/sql/driver"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/kilolock/kilolock/store/sqlstore"
)

// Group commit of locks and unlocks. A Terraform write cycle is LOCK →
// POST → UNLOCK: three write transactions, one after the other on the
// store's one write connection, each waiting for its own fsync
// (synchronous=FULL). A lock's or an unlock's transaction writes a row or
// two; the fsync is its cost. So the locks and unlocks that queue while
// the connection serves another transaction run together, next: in one
// transaction, each in a savepoint of its own, committed with one fsync.
// There is no delay to gather them: a lone lock runs at once.
//
// Commits (POSTs) do not join: a commit holds the connection for
// milliseconds of its own work (rows, the bytes' check), an fsync is a
// part of it, and its after-commit effects (the text indexer, the
// engine's caches) follow its own COMMIT; and one commit's failure must
// never cost another's.

// lockBatchMax bounds the ops of one batch: a batch holds the write
// connection while it runs, and a commit waits for it.
const lockBatchMax = 64

// lockQueue holds the locks and unlocks waiting for the write connection.
type lockQueue struct {
	mu  sync.Mutex
	ops []*lockOp
	// running: a goroutine runs batches until ops is empty.
	running bool
	// txs and ran count the batches' transactions (begun) and the ops
	// they ran (cancelled ones not): what batching saves, for tests.
	txs, ran atomic.Int64
}

// lockOp is one WriteLock call: its function, and its answer once done is
// closed.
type lockOp struct {
	ctx   context.Context
	fn    func(sqlstore.Tx) error
	state atomic.Int32
	done  chan struct{}
	err   error
	// panicked is what fn panicked with: its caller panics with it.
	panicked any
}

// An op's states: queued, then taken by the batch (it runs, or answers
// its context's error) or cancelled by its caller, whichever comes first.
const (
	opQueued int32 = iota
	opTaken
	opCancelled
)

// WriteLock is Write for locks and unlocks (sqlstore.LockWriter): fn runs
// in the next batch of the write connection, in a savepoint of its own
// (its error rolls back its writes only), and its answer is the batch's
// COMMIT's. A caller whose ctx ends before fn runs gets ctx's error, and
// fn does not run; once fn ran, the caller gets the batch's answer. With
// WithLazyLockSync the batch commits without an fsync (synchronous=NORMAL
// on the write connection, held for it, and FULL again before the
// connection serves another).
func (d *dialect) WriteLock(ctx context.Context, fn func(sqlstore.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	op := &lockOp{ctx: ctx, fn: fn, done: make(chan struct{})}
	q := &d.locks
	q.mu.Lock()
	q.ops = append(q.ops, op)
	start := !q.running
	q.running = true
	q.mu.Unlock()
	if start {
		// Not on the caller's goroutine: a caller whose context ends
		// returns, whatever the batch waits for.
		go d.runLockBatches()
	}
	select {
	case <-op.done:
	case <-ctx.Done():
		if op.state.CompareAndSwap(opQueued, opCancelled) {
			return ctx.Err()
		}
		<-op.done
	}
	if op.panicked != nil {
		panic(op.panicked)
	}
	return op.err
}

// runLockBatches runs batches of the queue until it is empty.
func (d *dialect) runLockBatches() {
	q := &d.locks
	for {
		d.runLockBatch()
		q.mu.Lock()
		if len(q.ops) == 0 {
			q.running = false
			q.mu.Unlock()
			return
		}
		q.mu.Unlock()
	}
}

// take removes the next batch from the queue.
func (q *lockQueue) take() []*lockOp {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := min(len(q.ops), lockBatchMax)
	batch := q.ops[:n:n]
	q.ops = q.ops[n:]
	return batch
}

// putBack returns ops a batch did not come to to the head of the queue,
// in their order.
func (q *lockQueue) putBack(ops []*lockOp) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.ops = append(ops[:len(ops):len(ops)], q.ops...)
}

// runLockBatch takes the write connection, then the ops queued by then,
// runs them in one transaction and answers each.
func (d *dialect) runLockBatch() {
	ctx := context.Background()
	// The ops queued while the connection served another transaction:
	// taken once it is free.
	c, err := d.write.db.Conn(ctx)
	batch := d.locks.take()
	if err != nil {
		answerAll(batch, err)
		return
	}
	run := &tx{p: d.write, detached: true}
	// After the connection is back: done prepares statements on the
	// pool, whose one connection this is.
	defer run.done(ctx)
	defer c.Close()
	if d.lazyLocks {
		if _, err := c.ExecContext(ctx, "PRAGMA synchronous=NORMAL"); err != nil {
			answerAll(batch, err)
			return
		}
		defer func() {
			if _, err := c.ExecContext(ctx, "PRAGMA synchronous=FULL"); err != nil {
				// Never left lazy for a commit: the connection goes.
				c.Raw(func(any) error { return driver.ErrBadConn })
			}
		}()
	}
	d.locks.txs.Add(1)
	if run.tx, err = c.BeginTx(ctx, nil); err != nil {
		answerAll(batch, err)
		return
	}
	var ran []*lockOp // with fn's own error in err
	for i, op := range batch {
		if !op.state.CompareAndSwap(opQueued, opTaken) {
			continue // its caller is gone
		}
		if op.err = op.ctx.Err(); op.err != nil {
			continue
		}
		d.locks.ran.Add(1)
		ran = append(ran, op)
		if err := runSavepoint(ctx, run, op); err != nil {
			// The transaction is lost (SQLite rolls one back whole on
			// an I/O error, a full disk): what ran fails with it, what
			// did not yet runs in the next batch.
			run.tx.Rollback()
			for _, r := range ran {
				r.err = err
			}
			d.locks.putBack(batch[i+1:])
			answer(batch[:i+1])
			return
		}
	}
	// Locks and unlocks write states and locks rows, never an
	// instance_intervals row, whose triggers alone queue changes of the
	// text index: no sqlTextQueued probe, nothing to wake.
	if err := run.tx.Commit(); err != nil {
		// A COMMIT that fails on a deferred constraint leaves the
		// transaction open on the connection: end it.
		c.ExecContext(ctx, "ROLLBACK")
		for _, r := range ran {
			r.err = err
		}
	}
	answer(batch)
}

// runSavepoint runs op's function in a savepoint of run's transaction,
// rolled back to when the function fails or panics (op.err, op.panicked).
// Its error is the transaction's: a savepoint that cannot be taken,
// released or rolled back to.
func runSavepoint(ctx context.Context, run *tx, op *lockOp) error {
	if _, err := run.tx.ExecContext(ctx, "SAVEPOINT kl_lock"); err != nil {
		return err
	}
	func() {
		defer func() {
			if p := recover(); p != nil {
				op.panicked = p
				op.err = fmt.Errorf("sqlite: a lock's transaction panicked: %v", p)
			}
		}()
		op.err = op.fn(run)
	}()
	if op.err != nil {
		if _, err := run.tx.ExecContext(ctx, "ROLLBACK TO kl_lock"); err != nil {
			return err
		}
	}
	_, err := run.tx.ExecContext(ctx, "RELEASE kl_lock")
	return err
}

// answer wakes the callers of ops.
func answer(ops []*lockOp) {
	for _, op := range ops {
		close(op.done)
	}
}

// answerAll answers every op of batch not cancelled with err: none ran.
func answerAll(batch []*lockOp, err error) {
	for _, op := range batch {
		if op.state.CompareAndSwap(opQueued, opTaken) {
			op.err = err
		}
	}
	answer(batch)
}

var _ sqlstore.LockWriter = (*dialect)(nil)

// detachedCtx is ctx without its cancellation for a batch's statements:
// SQLite answers an interrupted write by rolling back the transaction,
// which holds the other ops of the batch.
func detachedCtx(ctx context.Context, detached bool) context.Context {
	if detached {
		return context.WithoutCancel(ctx)
	}
	return ctx
}

package sqlite

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/kilolock/kilolock/store/sqlstore"
)

// The text index (migrations/0022_search_text.sql) is written apart from
// the writes that change it (migrations/0024_text_index_by_statement.sql):
// their triggers queue its changes in instance_text_rows (pending) and
// instance_text_gone, and the text indexer, a goroutine of the store,
// moves them into the FTS5 table in transactions of its own, a batch of
// rows in one statement, after the write that queued them has committed.
// So a write pays for a few rows of a plain table, not for FTS5, which
// writes what it holds as a segment at each savepoint (each statement),
// and merges segments as they add up: with a row at a time, a first write
// of 10,000 objects spent 4.4-5.1 s of CPU where it spent 0.6 s before
// the index, and a write of 2 of them 2.5-3.5 ms where 1.3-1.8 ms
// (BenchmarkCommitText; the indexer's own time is apart).
//
// A search reads the queue too ({textmatch}): a pending row is a
// candidate, which the caller's exact check confirms or drops, and a row
// gone is no longer in instance_text_rows, so the index's entry for it
// finds nothing. What a search finds does not depend on the indexer's
// progress.

// sqlTextQueued tells whether a transaction queued changes of the text
// index: two probes of (partial) indexes that are empty while the queue
// is.
const sqlTextQueued = `SELECT EXISTS (SELECT 1 FROM instance_text_rows WHERE pending IS NOT NULL)
	OR EXISTS (SELECT 1 FROM instance_text_gone)`

// textBatch is how many pending rows one transaction of the indexer moves
// into the index during a backlog (a first write's objects): it holds the
// database's write lock while it does, and a write waits for it (25-50 ms
// of CPU for 100 objects of 1 KiB of random text; batches of 500 held
// SQLite's memory up to 2 MiB higher).
const textBatch = 100

// textPass is how many queued rows a pass of the indexer moves in one
// transaction when it finds no more than that queued as it starts: the
// writes of the last textDelay in steady traffic. FTS5 writes each
// statement's rows as a segment and merges segments as they add up (its
// automerge), so a row costs less in one segment for the pass than in one
// segment per batch (BenchmarkTextIndexSteady); a pass that finds more
// queued is a backlog, moved textBatch rows at a time.
const textPass = 2000

// sqlTextCount counts the queue, up to textPass+1 rows of each kind.
var sqlTextCount = `SELECT (SELECT count(*) FROM (SELECT 1 FROM instance_text_rows WHERE pending IS NOT NULL LIMIT ` + strconv.Itoa(textPass+1) + `)),
	(SELECT count(*) FROM (SELECT 1 FROM instance_text_gone LIMIT ` + strconv.Itoa(textPass+1) + `))`

// sqlTextBatchEnd is the largest id of the next $1 pending rows (NULL
// when none is pending).
const sqlTextBatchEnd = `SELECT max(id) FROM (SELECT id FROM instance_text_rows WHERE pending IS NOT NULL ORDER BY id LIMIT $1)`

// sqlTextGone takes the gone ids out of the index, in one statement
// each, before sqlTextPending adds any row (an id may have been taken
// again).
var sqlTextGone = []string{
	`DELETE FROM instance_text WHERE rowid IN (SELECT id FROM instance_text_gone)`,
	`DELETE FROM instance_text_gone`,
}

// sqlTextPending moves the pending rows up to id $1 into the index.
var sqlTextPending = []string{
	`INSERT INTO instance_text (rowid, text) SELECT r.id, i.search_text FROM instance_text_rows r
		JOIN instance_intervals i ON i.state_id = r.state_id AND i.instance_id = r.instance_id AND i.valid_to IS NULL
		WHERE r.pending IS NOT NULL AND r.id <= $1`,
	`UPDATE instance_text_rows SET pending = NULL WHERE pending IS NOT NULL AND id <= $1`,
}

// textIndexer runs indexText until stop.
type textIndexer struct {
	kick chan struct{}
	stop context.CancelFunc
	done chan struct{}
	once sync.Once
	err  error
}

// wake has the indexer look at the queue, now or after the batch it is
// moving.
func (x *textIndexer) wake() {
	select {
	case x.kick <- struct{}{}:
	default:
	}
}

// startTextIndexer starts d's text indexer.
func (d *dialect) startTextIndexer() {
	ctx, stop := context.WithCancel(context.Background())
	x := &textIndexer{kick: make(chan struct{}, 1), stop: stop, done: make(chan struct{})}
	d.text = x
	go d.indexText(ctx, x)
}

// textDelay is how long the indexer waits, once woken, before it moves
// the queue into the index.
const textDelay = time.Second

// indexText moves the queue into the index, a batch at a time, each
// time it is woken, textDelay later. A batch that fails (the database held by another process past
// its busy timeout, the disk full) is tried again a second later; the
// queue keeps what it has not moved, and searches read it meanwhile.
func (d *dialect) indexText(ctx context.Context, x *textIndexer) {
	defer close(x.done)
	for {
		select {
		case <-ctx.Done():
			return
		case <-x.kick:
		}
		// The writes of the next moment are indexed with this one's: a
		// transaction, a segment and its merges for all of them.
		select {
		case <-ctx.Done():
			return
		case <-time.After(textDelay):
		}
		// A backlog (a first write's objects) is moved a batch after the
		// other. When writes waited for the connection during a batch, a
		// pause as long as the batch held it follows, so that they go
		// first: while writes keep coming, a backlog takes at most half
		// of the connection's time (a search reads what is pending).
		for pass := true; ; pass = false {
			more, yield, err := d.indexTextBatch(ctx, pass)
			if err != nil {
				select {
				case <-ctx.Done():
					return
				case <-time.After(time.Second):
					x.wake()
				}
				break
			}
			if !more {
				break
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(yield):
			}
		}
	}
}

// indexTextBatch moves the gone ids and a batch of the pending rows into
// the index, in one transaction: the first of a pass (pass) moves up to
// textPass rows when no more are queued, any other textBatch. more
// tells whether rows are left, and yield how long the transaction held
// the write connection when a write waited for it meanwhile (at most a
// second), or 0.
func (d *dialect) indexTextBatch(ctx context.Context, pass bool) (more bool, yield time.Duration, err error) {
	var began time.Time
	var waits int64
	// more tells the indexer what is left: no second probe, no wake.
	err = d.writeTx(ctx, func(t sqlstore.Tx) error {
		began, waits = time.Now(), d.write.db.Stats().WaitCount
		run := t.(*tx)
		limit := textBatch
		if pass {
			var pending, gone int
			if err := run.QueryRow(ctx, sqlTextCount).Scan(&pending, &gone); err != nil {
				return err
			}
			if pending <= textPass && gone <= textPass {
				limit = textPass
			}
		}
		var end *int64
		if err := run.QueryRow(ctx, sqlTextBatchEnd, limit).Scan(&end); err != nil {
			return err
		}
		if end == nil {
			end = new(int64) // the gone ids only: no id is 0
		}
		for _, q := range sqlTextGone {
			if err := execPrepared(ctx, run, q); err != nil {
				return err
			}
		}
		for _, q := range sqlTextPending {
			if err := execPrepared(ctx, run, q, *end); err != nil {
				return err
			}
		}
		if limit == textPass {
			// The pass took the whole queue, and only this transaction
			// writes: nothing is left.
			return nil
		}
		return run.QueryRow(ctx, sqlTextQueued).Scan(&more)
	}, false)
	if err == nil && d.write.db.Stats().WaitCount > waits {
		yield = min(time.Since(began), time.Second)
	}
	return more, yield, err
}

// IndexText moves what is queued of the text index into it before it
// returns, as the store's indexer otherwise does in the background: for
// a benchmark to tell a write's cost from its indexing's, and for tools
// that copy the file.
func (s *Store) IndexText(ctx context.Context) error { return s.d.flushText(ctx) }

// flushText moves the whole queue into the index before it returns.
func (d *dialect) flushText(ctx context.Context) error {
	for pass := true; ; pass = false {
		more, _, err := d.indexTextBatch(ctx, pass)
		if err != nil || !more {
			return err
		}
	}
}

// closeIndexing bounds how long Close goes on moving the queue into the
// index: what is left then, the store that opens the file next indexes
// (a first write of 100,000 objects leaves more than a shutdown should
// wait for).
const closeIndexing = 10 * time.Second

// stopTextIndexer stops the indexer and moves what is left of the queue
// into the index, for up to closeIndexing, so that a store opened next
// starts without one; a second call does nothing.
func (d *dialect) stopTextIndexer() error {
	x := d.text
	x.once.Do(func() {
		x.stop()
		<-x.done
		ctx, cancel := context.WithTimeout(context.Background(), closeIndexing)
		defer cancel()
		if err := d.flushText(ctx); err != nil && ctx.Err() == nil {
			x.err = err
		}
	})
	return x.err
}

// execPrepared runs q on run as a statement kept prepared (tx.Exec runs
// one without arguments as a migration's).
func execPrepared(ctx context.Context, run *tx, q string, args ...any) error {
	st, err := run.prepared(ctx, q)
	if err == nil {
		_, err = st.ExecContext(ctx, values(args)...)
	}
	if err != nil {
		return fmt.Errorf("text index: %w", err)
	}
	return nil
}

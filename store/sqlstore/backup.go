package sqlstore

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/retention"
)

var _ retention.BackupStore = (*Store)(nil)

// BackupDialect is what a Dialect does for Backup and Restore beyond the
// shared SQL. Both stores' dialects implement it; a Dialect without it
// keeps no backups.
type BackupDialect interface {
	// Kind names the database: "sqlite" or "postgres".
	Kind() string
	// Tables lists the tables of the store's schema with their columns
	// (generated columns left out), from the database's catalog, on tx.
	Tables(ctx context.Context, tx Tx) (map[string][]string, error)
	// InsertOverriding follows the column list of a Restore's INSERT, so
	// that it may write the ids the database would otherwise generate
	// (PostgreSQL's identity columns).
	InsertOverriding() string
	// AfterRestore runs last in a Restore's transaction, with the tables it
	// loaded rows into: PostgreSQL moves its sequences past the ids.
	AfterRestore(ctx context.Context, tx Tx, tables []string) error
}

// ReadColumns runs a dialect's catalog query, whose rows are (table,
// column) in order, and returns each table's columns.
func ReadColumns(ctx context.Context, tx Tx, sql string) (map[string][]string, error) {
	out := map[string][]string{}
	rows, err := tx.Query(ctx, sql)
	err = EachRow(rows, err, func(r Rows) error {
		var table, column string
		if err := r.Scan(&table, &column); err != nil {
			return err
		}
		out[table] = append(out[table], column)
		return nil
	})
	return out, err
}

func (s *Store) backupDialect() (BackupDialect, error) {
	bd, ok := s.d.(BackupDialect)
	if !ok {
		return nil, &kilolock.RefusedError{Code: "backup_unsupported", Message: "this store cannot write or load backups", Hint: "use the SQLite or PostgreSQL store"}
	}
	return bd, nil
}

// Backup writes every table of BackupTables, in one read transaction (one
// snapshot: PostgreSQL's REPEATABLE READ, SQLite's read transaction in WAL
// mode, neither of which blocks writers), row by row to w, so that its
// memory is that of one row. It first checks that BackupTables names every
// table and column of the database (see checkCoverage). Held locks are
// counted, not carried.
func (s *Store) Backup(ctx context.Context, w io.Writer) (*retention.BackupSummary, error) {
	bd, err := s.backupDialect()
	if err != nil {
		return nil, err
	}
	begun := false
	return readValue(ctx, s, "backup", func(tx Tx) (*retention.BackupSummary, error) {
		if begun {
			// The transaction is being run again (a dropped connection),
			// but part of the file is written: it cannot be taken back.
			return nil, corrupt("the backup's transaction failed after it began writing; take the backup again")
		}
		begun = true
		return backupTx(ctx, tx, bd, w)
	})
}

func backupTx(ctx context.Context, tx Tx, bd BackupDialect, w io.Writer) (*retention.BackupSummary, error) {
	catalog, err := bd.Tables(ctx, tx)
	if err != nil {
		return nil, err
	}
	if err := checkCoverage(catalog); err != nil {
		return nil, err
	}
	sum := &retention.BackupSummary{Format: retention.BackupFormat, Store: bd.Kind(), Tables: []retention.BackupTable{}}
	var locks int64
	b := &Batch{}
	b.Query(func(r Rows) error { return r.Scan(&sum.Created, &sum.Schema, &locks) },
		`SELECT {now}, (SELECT coalesce(max(version), 0) FROM kl_schema_version), (SELECT count(*) FROM locks)`)
	if err := tx.Send(ctx, b); err != nil {
		return nil, err
	}
	sum.Excluded = []retention.BackupTable{{Name: "locks", Rows: locks, Reason: notBackedUp["locks"]}}
	h := backupHeader{Format: sum.Format, Created: sum.Created.UTC().Format(timeLayout), Store: sum.Store, Schema: sum.Schema, Excluded: sum.Excluded}
	for _, t := range BackupTables {
		ht := headerTable{Name: t.Name}
		for _, c := range t.Columns {
			ht.Columns = append(ht.Columns, headerColumn(c))
		}
		h.Tables = append(h.Tables, ht)
	}
	bw := newBackupWriter(w)
	if err := bw.line(h); err != nil {
		return nil, err
	}
	var total int64
	for i := range BackupTables {
		t := &BackupTables[i]
		n, err := writeTable(ctx, tx, bw, t)
		if err != nil {
			return nil, fmt.Errorf("back up %s: %w", t.Name, err)
		}
		sum.Tables = append(sum.Tables, retention.BackupTable{Name: t.Name, Rows: n})
		total += n
	}
	if err := bw.line(marker{Complete: true, Rows: &total}); err != nil {
		return nil, err
	}
	if sum.Bytes, err = bw.close(); err != nil {
		return nil, err
	}
	return sum, nil
}

// writeTable writes the rows of t, in the order of its primary key.
func writeTable(ctx context.Context, tx Tx, bw *backupWriter, t *BackupTable) (int64, error) {
	if err := bw.line(marker{Table: t.Name}); err != nil {
		return 0, err
	}
	cols := make([]columnReader, len(t.Columns))
	dest := make([]any, len(cols))
	for i, c := range t.Columns {
		cols[i] = newColumnReader(c.Type)
		dest[i] = cols[i].dest()
	}
	row := make([]any, len(cols))
	var (
		n    int64
		long []longValue
	)
	rows, err := tx.Query(ctx, `SELECT `+join(t.names())+` FROM `+t.Name+` ORDER BY `+t.OrderBy)
	err = EachRow(rows, err, func(r Rows) error {
		// A copy: the dialects' Scan rewrites the destinations it converts.
		if err := r.Scan(slices.Clone(dest)...); err != nil {
			return err
		}
		long = long[:0]
		for i, c := range cols {
			if v, ok := longValueOf(c); ok {
				row[i] = v.cell()
				long = append(long, v)
				continue
			}
			row[i] = c.json()
		}
		n++
		if err := bw.line(row); err != nil {
			return err
		}
		for _, v := range long {
			if err := bw.writePieces(v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, bw.line(marker{End: t.Name, Rows: &n})
}

// checkCoverage reports a table or column of the database (catalog) that
// BackupTables does not name, or a table it names that the database lacks:
// a backup must carry everything, so a schema change without its entry is
// an error here, not a gap in someone's backups.
func checkCoverage(catalog map[string][]string) error {
	const hint = "add it to BackupTables in store/sqlstore/backup_tables.go (see docs/backup.md)"
	names := make([]string, 0, len(catalog))
	for name := range catalog {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if _, skip := notBackedUp[name]; skip || strings.HasPrefix(name, "sqlite_") {
			continue
		}
		t := backupTable(name)
		if t == nil {
			return corrupt("table %s is not in the backup's list of tables: %s", name, hint)
		}
		for _, c := range catalog[name] {
			if !slices.Contains(t.names(), c) {
				return corrupt("column %s.%s is not in the backup's list of tables: %s", name, c, hint)
			}
		}
	}
	for _, t := range BackupTables {
		if _, ok := catalog[t.Name]; !ok {
			return corrupt("the database has no table %s, which backups carry: is it migrated?", t.Name)
		}
	}
	return nil
}

// Restore limits: one INSERT carries at most restoreRows rows and
// restoreValues values (SQLite allows 32,766); rows pending reach at most
// restoreBytes before they are written.
const (
	restoreRows   = 500
	restoreValues = 30_000
	restoreBytes  = 4 << 20
)

// Restore loads the backup r in one write transaction: it refuses a
// database that holds any row of BackupTables, then inserts the rows of
// each table with their ids as they were (so version ids, cache keys,
// stay what they were), checks the keys and what the rows hold against
// their addresses and seals (checkContent), and lets the dialect finish
// (AfterRestore).
func (s *Store) Restore(ctx context.Context, r io.Reader, lim retention.RestoreLimits) (*retention.BackupSummary, error) {
	bd, err := s.backupDialect()
	if err != nil {
		return nil, err
	}
	cr := &countingReader{r: r}
	br, h, sum, err := openBackup(cr, lim, true)
	if err != nil {
		return nil, err
	}
	tables, err := restoreTables(h)
	if err != nil {
		return nil, err
	}
	begun := false
	err = s.write(ctx, "restore", func(tx Tx) error {
		if begun {
			return corrupt("the restore's transaction failed and cannot be run again from the same file; run the restore again")
		}
		begun = true
		if err := checkEmpty(ctx, tx); err != nil {
			return err
		}
		var loaded []string
		for i := range tables {
			t := &tables[i]
			n, err := restoreTable(ctx, tx, bd, br, t)
			if err != nil {
				return err
			}
			sum.Tables = append(sum.Tables, retention.BackupTable{Name: t.Name, Rows: n})
			if n > 0 {
				loaded = append(loaded, t.Name)
			}
		}
		if err := br.complete(sum.Rows()); err != nil {
			return err
		}
		// A backup of an encrypted store needs its keys: without them
		// the restored store could not read what it holds.
		if err := checkKeys(ctx, tx, s.ring()); err != nil {
			return err
		}
		if err := s.checkContent(ctx, tx); err != nil {
			return err
		}
		return bd.AfterRestore(ctx, tx, loaded)
	})
	if err != nil {
		return nil, err
	}
	// A backup of an older release has intervals without identity keys.
	if err := s.FillInventory(ctx); err != nil {
		return nil, err
	}
	sum.Bytes = cr.n
	return sum, nil
}

// restoreTables are the tables of a backup's header as Restore loads them:
// each must be one this release knows, with columns it knows of the same
// type (a backup of an older release may lack some; the database's
// defaults fill them).
func restoreTables(h *backupHeader) ([]BackupTable, error) {
	tooNew := func(what string) error {
		return &kilolock.InvalidError{Code: "backup_too_new",
			Message: fmt.Sprintf("the backup holds %s, which this KiloLock does not know", what),
			Hint:    "restore it with the KiloLock release that made it, or a newer one"}
	}
	var out []BackupTable
	for _, ht := range h.Tables {
		known := backupTable(ht.Name)
		if known == nil {
			return nil, tooNew("table " + ht.Name)
		}
		t := BackupTable{Name: ht.Name}
		for _, c := range ht.Columns {
			i := slices.IndexFunc(known.Columns, func(k BackupColumn) bool { return k.Name == c.Name })
			if i < 0 {
				return nil, tooNew("column " + ht.Name + "." + c.Name)
			}
			if known.Columns[i].Type != c.Type {
				return nil, tooNew(fmt.Sprintf("column %s.%s of type %s (here %s)", ht.Name, c.Name, c.Type, known.Columns[i].Type))
			}
			t.Columns = append(t.Columns, known.Columns[i])
		}
		out = append(out, t)
	}
	return out, nil
}

// checkEmpty refuses a database that holds a row of any table a backup
// carries, or a held lock.
func checkEmpty(ctx context.Context, tx Tx) error {
	var used []string
	b := &Batch{}
	for _, t := range append(slices.Clone(BackupTables), BackupTable{Name: "locks"}) {
		b.Query(func(r Rows) error {
			var any bool
			if err := r.Scan(&any); err != nil {
				return err
			}
			if any {
				used = append(used, t.Name)
			}
			return nil
		}, `SELECT EXISTS (SELECT 1 FROM `+t.Name+`)`)
	}
	if err := tx.Send(ctx, b); err != nil {
		return err
	}
	if len(used) > 0 {
		return &kilolock.RefusedError{Code: "restore_target_not_empty", Err: kilolock.ErrConflict,
			Message: fmt.Sprintf("the database is not empty (it has rows in %s): a backup is restored only into an empty database", strings.Join(used, ", ")),
			Hint:    "restore into a new database (a new SQLite file, or CREATE DATABASE on PostgreSQL); nothing was changed"}
	}
	return nil
}

// restoreTable reads the table's rows and inserts them.
func restoreTable(ctx context.Context, tx Tx, bd BackupDialect, br *backupReader, t *BackupTable) (int64, error) {
	per := max(1, min(restoreRows, restoreValues/len(t.Columns)))
	ins := &inserter{tx: tx, table: t, overriding: bd.InsertOverriding(), per: per}
	n, err := br.table(t, func(row []any) error { return ins.add(ctx, row) })
	if err != nil {
		return 0, err
	}
	return n, ins.flush(ctx, true)
}

// inserter writes a table's rows in INSERTs of per rows, or, for what
// remains and when the rows pending grow past restoreBytes, one by one: so
// each table needs two statements, whatever the sizes of its rows.
type inserter struct {
	tx         Tx
	table      *BackupTable
	overriding string
	per        int
	rows       [][]any
	bytes      int
}

func (ins *inserter) add(ctx context.Context, row []any) error {
	ins.rows = append(ins.rows, row)
	ins.bytes += rowBytes(row)
	switch {
	case len(ins.rows) == ins.per:
		return ins.flush(ctx, false)
	case ins.bytes > restoreBytes:
		return ins.flush(ctx, true)
	}
	return nil
}

// flush writes the pending rows: in one INSERT when there are per of
// them, else (rest) one by one.
func (ins *inserter) flush(ctx context.Context, rest bool) error {
	defer func() { ins.rows, ins.bytes = ins.rows[:0], 0 }()
	if len(ins.rows) == ins.per {
		return ins.insert(ctx, ins.rows)
	}
	if !rest {
		return nil
	}
	for _, r := range ins.rows {
		if err := ins.insert(ctx, [][]any{r}); err != nil {
			return err
		}
	}
	return nil
}

func (ins *inserter) insert(ctx context.Context, rows [][]any) error {
	t := ins.table
	var b strings.Builder
	b.WriteString("INSERT INTO " + t.Name + " (" + join(t.names()) + ")" + ins.overriding + " VALUES ")
	args := make([]any, 0, len(rows)*len(t.Columns))
	for i, r := range rows {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(" + placeholders(len(args)+1, len(r)) + ")")
		args = append(args, r...)
	}
	n, err := ins.tx.Exec(ctx, b.String(), args...)
	if err != nil {
		return fmt.Errorf("restore %s: %w", t.Name, err)
	}
	if int(n) != len(rows) {
		return corrupt("restore %s wrote %d rows, want %d", t.Name, n, len(rows))
	}
	return nil
}

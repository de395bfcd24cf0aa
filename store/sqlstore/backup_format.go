package sqlstore

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/retention"
)

// A backup is a gzip stream of JSON lines (docs/backup.md):
//
//	{"kilolock_backup":1,"created":…,"store":"sqlite","schema_version":11,"tables":[{"name":"states","columns":[{"name":"id","type":"int"},…]},…],"excluded":[…]}
//	{"table":"states"}
//	[1,"network","2026-05-01T12:00:00.000000Z",…]      one line per row, the header's columns in order
//	{"end":"states","rows":1}
//	…                                                   every table of the header, in its order
//	{"complete":true,"rows":12345}
//
// Values: int a JSON number, text a JSON string (or {"base64":…} for a
// string that is not UTF-8, which JSON cannot carry), bool true or false,
// time a string in RFC 3339 with microseconds in UTC, bytes a base64
// string, NULL null. A text or bytes value longer than backupInline is
// {"pieces":N,"bytes":L} in its row, and its L bytes follow the row on N
// lines of their own (backup_pieces.go). The last line and gzip's
// checksum prove the file whole.

// timeLayout is how a backup writes timestamps.
const timeLayout = "2006-01-02T15:04:05.000000Z"

// backupHeader is a backup's first line.
type backupHeader struct {
	Format   int                     `json:"kilolock_backup"`
	Created  string                  `json:"created"`
	Store    string                  `json:"store"`
	Schema   int64                   `json:"schema_version"`
	Tables   []headerTable           `json:"tables"`
	Excluded []retention.BackupTable `json:"excluded"`
}

type headerTable struct {
	Name    string         `json:"name"`
	Columns []headerColumn `json:"columns"`
}

type headerColumn struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

// marker is a line that begins or ends a table, or ends the backup.
type marker struct {
	Table    string `json:"table,omitempty"`
	End      string `json:"end,omitempty"`
	Complete bool   `json:"complete,omitempty"`
	Rows     *int64 `json:"rows,omitempty"`
}

// backupWriter writes the lines of a backup.
type backupWriter struct {
	n   countingWriter
	gz  *gzip.Writer
	enc *json.Encoder
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func newBackupWriter(w io.Writer) *backupWriter {
	bw := &backupWriter{n: countingWriter{w: w}}
	bw.gz = gzip.NewWriter(&bw.n)
	bw.enc = json.NewEncoder(bw.gz)
	bw.enc.SetEscapeHTML(false)
	return bw
}

// line writes v as one line.
func (bw *backupWriter) line(v any) error { return bw.enc.Encode(v) }

// close ends the gzip stream; it returns the bytes written to the file.
func (bw *backupWriter) close() (int64, error) {
	err := bw.gz.Close()
	return bw.n.n, err
}

// columnReader is the scan destination of one column of a table and the
// JSON value of what it read.
type columnReader interface {
	dest() any
	json() any
}

type (
	intColumn   struct{ v *int64 }
	textColumn  struct{ v *string }
	boolColumn  struct{ v *bool }
	timeColumn  struct{ v time.Time } // the zero time is NULL
	bytesColumn struct{ v []byte }
)

func (c *intColumn) dest() any   { return &c.v }
func (c *textColumn) dest() any  { return &c.v }
func (c *boolColumn) dest() any  { return &c.v }
func (c *timeColumn) dest() any  { return &c.v }
func (c *bytesColumn) dest() any { return &c.v }

func (c *intColumn) json() any {
	if c.v == nil {
		return nil
	}
	return *c.v
}

func (c *textColumn) json() any {
	switch {
	case c.v == nil:
		return nil
	case !utf8.ValidString(*c.v):
		return map[string][]byte{"base64": []byte(*c.v)}
	}
	return *c.v
}

func (c *boolColumn) json() any {
	if c.v == nil {
		return nil
	}
	return *c.v
}

func (c *timeColumn) json() any {
	if c.v.IsZero() {
		return nil
	}
	return c.v.UTC().Format(timeLayout)
}

func (c *bytesColumn) json() any {
	if c.v == nil {
		return nil
	}
	return c.v // base64, as encoding/json writes []byte
}

// newColumnReader returns the reader of a column of type typ.
func newColumnReader(typ string) columnReader {
	switch typ {
	case "int":
		return &intColumn{}
	case "bool":
		return &boolColumn{}
	case "time":
		return &timeColumn{}
	case "bytes":
		return &bytesColumn{}
	}
	return &textColumn{}
}

// backupReader reads the lines of a backup, within lim. With assemble,
// a value in pieces is put together; else its pieces are only checked.
type backupReader struct {
	gz       *gzip.Reader
	br       *bufio.Reader
	lim      retention.RestoreLimits
	assemble bool
	format   int
	line     int
	buf      []byte
}

// malformed is a backup that cannot be read, at the line it reads.
func (r *backupReader) malformed(format string, args ...any) error {
	return &kilolock.InvalidError{
		Code:    "backup_malformed",
		Message: fmt.Sprintf("backup line %d: %s", r.line, fmt.Sprintf(format, args...)),
		Hint:    "the file is damaged, cut short or not a KiloLock backup (kl backup writes one); nothing was restored",
	}
}

func newBackupReader(r io.Reader, lim retention.RestoreLimits, assemble bool) (*backupReader, error) {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return nil, &kilolock.InvalidError{Code: "backup_malformed", Message: "the file is not a KiloLock backup: " + err.Error(),
			Hint: "a backup is the gzip file kl backup writes; nothing was restored"}
	}
	gz.Multistream(false)
	return &backupReader{gz: gz, br: bufio.NewReaderSize(gz, 1<<16), lim: lim.WithDefaults(), assemble: assemble}, nil
}

// next returns the next line, without its newline; io.ErrUnexpectedEOF
// (as a malformed backup) when the file ends before a line does. A line
// longer than the limit is refused as soon as the limit is read, so no
// more of it is ever held.
func (r *backupReader) next() ([]byte, error) {
	r.line++
	r.buf = r.buf[:0]
	for {
		chunk, err := r.br.ReadSlice('\n')
		if int64(len(r.buf)+len(chunk)) > r.lim.MaxLine {
			return nil, r.lineTooLong()
		}
		if need := len(r.buf) + len(chunk); need > cap(r.buf) {
			// Doubling, up to the limit: a long line costs twice its
			// length in allocations, not append's many smaller steps.
			r.buf = slices.Grow(r.buf, int(min(max(2*int64(cap(r.buf)), int64(need)), r.lim.MaxLine))-len(r.buf))
		}
		r.buf = append(r.buf, chunk...)
		switch {
		case err == nil:
			return r.buf[:len(r.buf)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			return nil, r.malformed("the file ends before the backup does: it was cut short")
		default:
			return nil, r.malformed("%v", err)
		}
	}
}

// end checks that nothing follows the last line and that gzip's checksum
// holds.
func (r *backupReader) end() error {
	n, err := r.br.Read(make([]byte, 1))
	switch {
	case n > 0:
		return r.malformed("data follows the end of the backup")
	case errors.Is(err, io.EOF):
		return nil
	}
	return r.malformed("%v", err)
}

// header reads the first line.
func (r *backupReader) header() (*backupHeader, error) {
	line, err := r.next()
	if err != nil {
		return nil, err
	}
	var h backupHeader
	if err := json.Unmarshal(line, &h); err != nil || h.Format == 0 {
		return nil, r.malformed("no KiloLock backup header")
	}
	if h.Format > retention.BackupFormat {
		return nil, &kilolock.InvalidError{Code: "backup_too_new",
			Message: fmt.Sprintf("the backup is in format %d; this KiloLock reads formats up to %d", h.Format, retention.BackupFormat),
			Hint:    "restore it with the KiloLock release that made it, or a newer one"}
	}
	r.format = h.Format
	return &h, nil
}

// marker reads a line that must be a marker.
func (r *backupReader) marker() (*marker, error) {
	line, err := r.next()
	if err != nil {
		return nil, err
	}
	var m marker
	if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &m) != nil {
		return nil, r.malformed("a table marker was expected")
	}
	return &m, nil
}

// row reads the next line of table t: its values as Restore inserts them,
// or nil at the table's end marker (whose row count it checks).
func (r *backupReader) row(t *BackupTable, read int64) ([]any, error) {
	line, err := r.next()
	if err != nil {
		return nil, err
	}
	if len(line) > 0 && line[0] == '{' {
		var m marker
		if json.Unmarshal(line, &m) != nil || m.End != t.Name || m.Rows == nil {
			return nil, r.malformed("the end of table %s was expected", t.Name)
		}
		if *m.Rows != read {
			return nil, r.malformed("table %s ends after %d rows, but %d were read", t.Name, *m.Rows, read)
		}
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var cells []any
	if err := dec.Decode(&cells); err != nil {
		return nil, r.malformed("a row of %s is not a JSON array: %v", t.Name, err)
	}
	if len(cells) != len(t.Columns) {
		return nil, r.malformed("a row of %s has %d values for %d columns", t.Name, len(cells), len(t.Columns))
	}
	var long []int // the columns whose values follow in pieces
	for i, c := range t.Columns {
		if p, ok := r.piecesOf(c.Type, cells[i]); ok {
			cells[i] = p
			long = append(long, i)
			continue
		}
		v, err := fromJSON(c.Type, cells[i])
		if err != nil {
			return nil, r.malformed("column %s.%s: %v", t.Name, c.Name, err)
		}
		cells[i] = v
	}
	for _, i := range long {
		v, err := r.pieces(t, t.Columns[i], cells[i].(pieces))
		if err != nil {
			return nil, err
		}
		cells[i] = v
	}
	return cells, nil
}

// fromJSON is the value of a backup's JSON cell for a column of type typ.
func fromJSON(typ string, cell any) (any, error) {
	if cell == nil {
		return nil, nil
	}
	switch typ {
	case "int":
		if n, ok := cell.(json.Number); ok {
			return n.Int64()
		}
	case "bool":
		if b, ok := cell.(bool); ok {
			return b, nil
		}
	case "time":
		if s, ok := cell.(string); ok {
			return time.Parse(time.RFC3339Nano, s)
		}
	case "bytes":
		if s, ok := cell.(string); ok {
			return base64.StdEncoding.DecodeString(s)
		}
	case "text":
		switch v := cell.(type) {
		case string:
			return v, nil
		case map[string]any:
			if s, ok := v["base64"].(string); ok && len(v) == 1 {
				b, err := base64.StdEncoding.DecodeString(s)
				return string(b), err
			}
		}
	}
	return nil, fmt.Errorf("%v is not a value of type %s", cell, typ)
}

// CopyBackup writes the backup that write streams to w and reads it back
// as it goes (VerifyBackup), so that what w received is known to be whole:
// it returns what the backup holds, or write's error, or, when the backup
// does not read back whole, an error saying so. kl backup downloads a
// backup through it.
func CopyBackup(w io.Writer, write func(io.Writer) error) (*retention.BackupSummary, error) {
	var sum *retention.BackupSummary
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		var err error
		sum, err = VerifyBackup(pr)
		pr.CloseWithError(err)
		done <- err
	}()
	err := write(io.MultiWriter(w, pw))
	pw.CloseWithError(err)
	if verr := <-done; err == nil && verr != nil {
		err = fmt.Errorf("the backup read back is not whole: %w", verr)
	}
	return sum, err
}

// VerifyBackup reads a whole backup without a database, as Restore would,
// and returns what it holds: an *InvalidError when it is damaged, cut
// short or not a backup. kl runs it on a backup it downloads, so that a
// file it keeps is known to be whole.
func VerifyBackup(r io.Reader) (*retention.BackupSummary, error) {
	cr := &countingReader{r: r}
	br, h, sum, err := openBackup(cr, retention.RestoreLimits{}, false)
	if err != nil {
		return nil, err
	}
	for _, ht := range h.Tables {
		t := BackupTable{Name: ht.Name}
		for _, c := range ht.Columns {
			t.Columns = append(t.Columns, BackupColumn(c))
		}
		n, err := br.table(&t, func([]any) error { return nil })
		if err != nil {
			return nil, err
		}
		sum.Tables = append(sum.Tables, retention.BackupTable{Name: t.Name, Rows: n})
	}
	if err := br.complete(sum.Rows()); err != nil {
		return nil, err
	}
	sum.Bytes = cr.n
	return sum, nil
}

// openBackup reads a backup's header, and returns the summary it starts.
func openBackup(r io.Reader, lim retention.RestoreLimits, assemble bool) (*backupReader, *backupHeader, *retention.BackupSummary, error) {
	br, err := newBackupReader(r, lim, assemble)
	if err != nil {
		return nil, nil, nil, err
	}
	h, err := br.header()
	if err != nil {
		return nil, nil, nil, err
	}
	created, err := time.Parse(time.RFC3339Nano, h.Created)
	if err != nil {
		return nil, nil, nil, br.malformed("the header's created time %q: %v", h.Created, err)
	}
	sum := &retention.BackupSummary{Format: h.Format, Store: h.Store, Schema: h.Schema, Created: created, Excluded: h.Excluded, Tables: []retention.BackupTable{}}
	if sum.Excluded == nil {
		sum.Excluded = []retention.BackupTable{}
	}
	return br, h, sum, nil
}

// table reads the marker and the rows of table t, calling each with each
// row, and returns how many there were.
func (r *backupReader) table(t *BackupTable, each func(row []any) error) (int64, error) {
	m, err := r.marker()
	if err != nil {
		return 0, err
	}
	if m.Table != t.Name {
		return 0, r.malformed("table %s was expected", t.Name)
	}
	var n int64
	for {
		row, err := r.row(t, n)
		if err != nil {
			return 0, err
		}
		if row == nil {
			return n, nil
		}
		n++
		if err := each(row); err != nil {
			return 0, err
		}
	}
}

// complete reads the last line, which must count rows, and checks that
// the file ends there, whole.
func (r *backupReader) complete(rows int64) error {
	m, err := r.marker()
	if err != nil {
		return err
	}
	if !m.Complete || m.Rows == nil || *m.Rows != rows {
		return r.malformed("the end of the backup was expected, with %d rows", rows)
	}
	return r.end()
}

package sqlstore

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/internal/bytesize"
)

// backupInline is the longest text or bytes value a backup writes inline,
// in its row. A longer one (a version's kept document, a large instance
// object) is written {"pieces":N,"bytes":L} in its row, and follows the
// row on N lines of its own, one JSON string each: a piece of the text
// itself when it is UTF-8 (cut between characters), else base64 of a
// piece of its bytes, at most backupPiece bytes a piece. So a line is
// never longer than a row of short values, whatever a state holds
// (TestBackupLinesBounded: under maxWrittenLine), and a restore reads
// lines of a bounded length while it puts a value together from pieces.
const (
	backupInline = 16 << 10
	backupPiece  = 64 << 10
)

// maxWrittenLine bounds the lines a backup writes: a row of inline values
// (each at most backupInline bytes, which JSON's escapes may make six
// times longer) or a piece. The default RestoreLimits.MaxLine is eight
// times as long.
const maxWrittenLine = 2 << 20

// pieces is the cell standing for a value written in pieces: how many
// lines, how many bytes, and, for text, whether the pieces are base64
// (text that is not UTF-8, which JSON cannot carry).
type pieces struct {
	Pieces int64 `json:"pieces"`
	Bytes  int64 `json:"bytes"`
	Base64 bool  `json:"base64,omitempty"`
}

// longValue is a text or bytes value longer than backupInline, to write
// in pieces: text that is UTF-8 in pieces of text, anything else in
// pieces of base64.
type longValue struct {
	text     string
	bytes    []byte
	isText   bool
	utf8Text bool
}

// longValueOf returns the value c read, when it is to be written in
// pieces.
func longValueOf(c columnReader) (longValue, bool) {
	switch c := c.(type) {
	case *textColumn:
		if c.v != nil && len(*c.v) > backupInline {
			return longValue{text: *c.v, isText: true, utf8Text: utf8.ValidString(*c.v)}, true
		}
	case *bytesColumn:
		if len(c.v) > backupInline {
			return longValue{bytes: c.v}, true
		}
	}
	return longValue{}, false
}

func (v longValue) len() int {
	if v.isText {
		return len(v.text)
	}
	return len(v.bytes)
}

// cuts calls f with the bounds of each piece, in order: at most
// backupPiece bytes, UTF-8 text cut between characters.
func (v longValue) cuts(f func(off, end int) error) error {
	for off := 0; off < v.len(); {
		end := min(off+backupPiece, v.len())
		for v.utf8Text && end < len(v.text) && !utf8.RuneStart(v.text[end]) {
			end--
		}
		if err := f(off, end); err != nil {
			return err
		}
		off = end
	}
	return nil
}

// cell is what stands for the value in its row.
func (v longValue) cell() pieces {
	p := pieces{Bytes: int64(v.len()), Base64: v.isText && !v.utf8Text}
	_ = v.cuts(func(int, int) error { p.Pieces++; return nil })
	return p
}

// writePieces writes the value's pieces, a line each: a JSON string of
// the text, or base64 (as encoding/json writes []byte).
func (bw *backupWriter) writePieces(v longValue) error {
	return v.cuts(func(off, end int) error {
		switch {
		case v.utf8Text:
			return bw.line(v.text[off:end])
		case v.isText:
			return bw.line([]byte(v.text[off:end]))
		}
		return bw.line(v.bytes[off:end])
	})
}

// piecesOf reports whether cell, of a column of type typ, stands for a
// value in pieces (from format 2 on), and which.
func (r *backupReader) piecesOf(typ string, cell any) (pieces, bool) {
	m, ok := cell.(map[string]any)
	if !ok || r.format < 2 || (typ != "text" && typ != "bytes") {
		return pieces{}, false
	}
	n, okN := m["pieces"].(json.Number)
	size, okB := m["bytes"].(json.Number)
	if !okN || !okB {
		return pieces{}, false
	}
	p := pieces{Pieces: -1, Bytes: -1}
	if v, err := n.Int64(); err == nil {
		p.Pieces = v
	}
	if v, err := size.Int64(); err == nil {
		p.Bytes = v
	}
	if b, has := m["base64"]; has {
		p.Base64, _ = b.(bool)
	}
	return p, true
}

// pieces reads the lines of a value in pieces of column c of table t: the
// value (a string for text, bytes for bytes) when r assembles, else nil.
// A value longer than the limit is refused before a piece is read, and
// pieces that add up to more (or less) than their cell says are refused
// as they do.
func (r *backupReader) pieces(t *BackupTable, c BackupColumn, p pieces) (any, error) {
	if p.Pieces < 1 || p.Bytes < 1 || p.Pieces > p.Bytes {
		return nil, r.malformed("column %s.%s: a value in %d pieces of %d bytes", t.Name, c.Name, p.Pieces, p.Bytes)
	}
	if r.assemble && p.Bytes > r.lim.MaxValue {
		return nil, r.valueTooLarge(t, c, p.Bytes)
	}
	var (
		text    strings.Builder
		bytes   []byte
		scratch []byte
		got     int64
	)
	if r.assemble {
		if c.Type == "text" {
			text.Grow(int(p.Bytes))
		} else {
			bytes = make([]byte, 0, p.Bytes)
		}
	}
	for range p.Pieces {
		line, err := r.next()
		if err != nil {
			return nil, err
		}
		piece, err := r.piece(line, c.Type == "bytes" || p.Base64, &scratch)
		if err != nil {
			return nil, r.malformed("column %s.%s: a piece of a value: %v", t.Name, c.Name, err)
		}
		if got += int64(len(piece)); got > p.Bytes || len(piece) == 0 {
			return nil, r.malformed("column %s.%s: the pieces of a value are not the %d bytes its row says", t.Name, c.Name, p.Bytes)
		}
		switch {
		case !r.assemble:
		case c.Type == "text":
			text.Write(piece)
		default:
			bytes = append(bytes, piece...)
		}
	}
	if got != p.Bytes {
		return nil, r.malformed("column %s.%s: the pieces of a value hold %d bytes, its row says %d", t.Name, c.Name, got, p.Bytes)
	}
	switch {
	case !r.assemble:
		return nil, nil
	case c.Type == "text":
		return text.String(), nil
	}
	return bytes, nil
}

// piece decodes one piece's line, a JSON string: base64, or text. The
// bytes it returns are valid until the next call.
func (r *backupReader) piece(line []byte, base64Piece bool, scratch *[]byte) ([]byte, error) {
	if !base64Piece {
		var s string
		if err := json.Unmarshal(line, &s); err != nil {
			return nil, fmt.Errorf("not a JSON string")
		}
		return []byte(s), nil
	}
	if len(line) < 2 || line[0] != '"' || line[len(line)-1] != '"' {
		return nil, fmt.Errorf("not a base64 string")
	}
	b, err := base64.StdEncoding.AppendDecode((*scratch)[:0], line[1:len(line)-1])
	*scratch = b
	return b, err
}

// lineTooLong is a line past the limit.
func (r *backupReader) lineTooLong() error {
	hint := fmt.Sprintf("a backup KiloLock writes has no line longer than %s (a longer value goes on lines of its own, in pieces): the file is damaged or not a KiloLock backup; nothing was restored", bytesize.Size(maxWrittenLine))
	if r.format == 1 {
		hint = "a backup in format 1, from a KiloLock before format 2, keeps a long value on one line: raise the limit (kl restore --max-line SIZE), or restore it with the release that wrote it and back it up again with this one; nothing was restored"
	}
	return &kilolock.InvalidError{Code: "backup_line_too_long",
		Message: fmt.Sprintf("backup line %d is longer than %s, the longest line a restore reads", r.line, bytesize.Size(r.lim.MaxLine)),
		Hint:    hint}
}

// valueTooLarge is a value in pieces past the limit.
func (r *backupReader) valueTooLarge(t *BackupTable, c BackupColumn, n int64) error {
	return &kilolock.InvalidError{Code: "backup_value_too_large",
		Message: fmt.Sprintf("backup line %d: a value of %s.%s holds %d bytes, more than the %s a restore puts together", r.line, t.Name, c.Name, n, bytesize.Size(r.lim.MaxValue)),
		Hint:    "a store that took states this large (kld --body-limit) is restored with kl restore --max-value SIZE, at least that limit; else the file is damaged; nothing was restored"}
}

package sqlstore

import (
	"encoding/base64"
	"testing"

	"github.com/kilolock/kilolock/retention"
)

// TestBackupLinesBounded: whatever a store holds, no line a backup writes
// is longer than maxWrittenLine — a row of every table with each value as
// long as it is written inline, and escaped as JSON's worst (six bytes a
// byte), or a piece — and the default limit of a restore's lines is eight
// times that.
func TestBackupLinesBounded(t *testing.T) {
	worst := map[string]int{
		"text":  6*backupInline + 2,
		"bytes": base64.StdEncoding.EncodedLen(backupInline) + 2,
		"int":   len("-9223372036854775808"),
		"time":  len(`"2026-01-01T00:00:00.000000Z"`),
		"bool":  len("false"),
	}
	for _, tbl := range BackupTables {
		n := len("[]\n")
		for _, c := range tbl.Columns {
			w, ok := worst[c.Type]
			if !ok {
				t.Fatalf("column %s.%s has type %s, which this test does not know", tbl.Name, c.Name, c.Type)
			}
			n += w + 1
		}
		if n > maxWrittenLine {
			t.Errorf("a row of %s may take %d bytes, more than %d", tbl.Name, n, maxWrittenLine)
		}
	}
	for what, n := range map[string]int{"text": 6*backupPiece + 3, "bytes": base64.StdEncoding.EncodedLen(backupPiece) + 3} {
		if n > maxWrittenLine {
			t.Errorf("a piece of %s may take %d bytes, more than %d", what, n, maxWrittenLine)
		}
	}
	if retention.DefaultMaxBackupLine != 8*maxWrittenLine {
		t.Errorf("the default line limit is %d, not 8 times %d as documented", retention.DefaultMaxBackupLine, maxWrittenLine)
	}
}

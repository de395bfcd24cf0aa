package sqlite

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/kilolock/kilolock/inventory"
	"github.com/kilolock/kilolock/store/sqlstore"
)

// TestInventoryTextPlan: a search by text, and its next page, find the
// current intervals through the FTS5 index of trigrams, then each by its
// key (instance_intervals_current), never by a scan of the intervals.
// SQLite plans without statistics here, so the plan of an empty database
// is the plan of a big one.
func TestInventoryTextPlan(t *testing.T) {
	s := openAt(t, filepath.Join(t.TempDir(), "kl.db"))
	for name, f := range map[string]inventory.ScanFilter{
		"text":             {Text: "web-alpha"},
		"text, page":       {Text: "web-alpha", After: inventory.Cursor{StateID: 3, InstanceID: "aws_instance.web[0]"}},
		"text and type":    {Text: "web-alpha", Type: "aws_instance"},
		"text and a state": {Text: "web-alpha", StateLike: []string{"net%"}},
	} {
		q, args := sqlstore.ScanSQL(f)
		plan := queryPlan(t, s, q+" LIMIT 1000", append(args, "")...)
		whole := strings.Join(plan, "\n")
		if !strings.Contains(whole, "SCAN instance_text VIRTUAL TABLE INDEX") {
			t.Errorf("%s: does not read the text index:\n%s", name, whole)
		}
		for _, step := range plan {
			if strings.HasPrefix(step, "SCAN i") && !strings.HasPrefix(step, "SCAN instance_text") {
				t.Errorf("%s: %q scans the intervals:\n%s", name, step, whole)
			}
		}
	}
}

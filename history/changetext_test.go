package history_test

import (
	"strings"
	"testing"

	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/history"
)

// TestChangeSetText: a change set told for people, line by line, with a
// line break in an ID escaped and the mask shown as it is.
func TestChangeSetText(t *testing.T) {
	cs := &history.ChangeSet{
		Added:   []string{"aws_s3_bucket.logs"},
		Removed: []string{"null_resource.x[\"a\nb\"]"},
		Changed: []history.InstanceDiff{{Address: "aws_instance.web", Changes: []graph.AttributeChange{
			{Path: "ami", Kind: "changed", Before: "ami-1", After: "ami-2"},
			{Path: "tags.env", Kind: "added", After: "prod"},
			{Path: "password", Kind: "removed", Before: graph.SensitiveMask},
		}}},
		OutputsChanged: []history.OutputDiff{{Name: "ip", Changes: []graph.AttributeChange{{Kind: "changed", Before: 1.0, After: 2.0}}}},
	}
	var b strings.Builder
	cs.WriteText(&b, history.RollbackVerbs)
	want := `+ aws_s3_bucket.logs
~ aws_instance.web
    ami: "ami-1" → "ami-2"
    tags.env: (absent) → "prod"
    password: (sensitive) → (absent)
- null_resource.x["a\nb"]
~ output.ip
    : 1 → 2
Instances: 1 would add back, 1 would change, 1 would remove. Outputs: 0 would add back, 1 would change, 0 would remove.
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	(&history.ChangeSet{}).WriteText(&b, history.DiffVerbs)
	if b.String() != "No changes.\n" {
		t.Errorf("empty change set: %q", b.String())
	}
}

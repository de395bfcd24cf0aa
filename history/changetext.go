package history

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/kilolock/kilolock/graph"
)

// Verbs are the words a change set is told with (ChangeSet.WriteText).
type Verbs struct{ Added, Changed, Removed string }

var (
	// DiffVerbs tell a diff between versions, or a state operation written.
	DiffVerbs = Verbs{"added", "changed", "removed"}
	// PlanVerbs tell a state operation's dry run.
	PlanVerbs = Verbs{"would add", "would change", "would remove"}
	// RollbackVerbs tell a rollback's plan, RolledBackVerbs one written.
	RollbackVerbs   = Verbs{"would add back", "would change", "would remove"}
	RolledBackVerbs = Verbs{"added back", "changed", "removed"}
)

// WriteText writes cs for people, as kl does: "+ ID" per instance added,
// "~ ID" per instance changed followed by its attribute changes
// (WriteAttributeChanges), "- ID" per instance removed, the same for
// outputs ("+ output.NAME"), then the counts told with verbs; "No
// changes." when cs is empty. Tabs and line breaks in IDs and values are
// escaped (\t, \n, \r), so that a line stays one change.
func (cs *ChangeSet) WriteText(w io.Writer, verbs Verbs) {
	if cs.Empty() {
		fmt.Fprintln(w, "No changes.")
		return
	}
	writeChanges := func(prefix string, added, removed []string, n int, changed func(int) (string, []graph.AttributeChange)) {
		for _, id := range added {
			fmt.Fprintf(w, "+ %s%s\n", prefix, OneLine(id))
		}
		for i := range n {
			id, changes := changed(i)
			fmt.Fprintf(w, "~ %s%s\n", prefix, OneLine(id))
			WriteAttributeChanges(w, "    ", changes)
		}
		for _, id := range removed {
			fmt.Fprintf(w, "- %s%s\n", prefix, OneLine(id))
		}
	}
	writeChanges("", cs.Added, cs.Removed, len(cs.Changed), func(i int) (string, []graph.AttributeChange) {
		return cs.Changed[i].Address, cs.Changed[i].Changes
	})
	writeChanges("output.", cs.OutputsAdded, cs.OutputsRemoved, len(cs.OutputsChanged), func(i int) (string, []graph.AttributeChange) {
		return cs.OutputsChanged[i].Name, cs.OutputsChanged[i].Changes
	})
	counts := func(a, c, r int) string {
		return fmt.Sprintf("%d %s, %d %s, %d %s", a, verbs.Added, c, verbs.Changed, r, verbs.Removed)
	}
	fmt.Fprintf(w, "Instances: %s.", counts(len(cs.Added), len(cs.Changed), len(cs.Removed)))
	if n := len(cs.OutputsAdded) + len(cs.OutputsChanged) + len(cs.OutputsRemoved); n > 0 {
		fmt.Fprintf(w, " Outputs: %s.", counts(len(cs.OutputsAdded), len(cs.OutputsChanged), len(cs.OutputsRemoved)))
	}
	fmt.Fprintln(w)
}

// WriteAttributeChanges writes one line per attribute change after
// indent, `path: before → after`: values as compact JSON, a masked value
// as the mask, "(absent)" for the side without it; tabs and line breaks
// escaped.
func WriteAttributeChanges(w io.Writer, indent string, cs []graph.AttributeChange) {
	for _, c := range cs {
		before, after := valueText(c.Before), valueText(c.After)
		switch c.Kind {
		case "added":
			before = "(absent)"
		case "removed":
			after = "(absent)"
		}
		fmt.Fprintf(w, "%s%s\n", indent, OneLine(fmt.Sprintf("%s: %s → %s", c.Path, before, after)))
	}
}

// valueText shows one attribute value as a client decoded it: the mask as
// it is, anything else as compact JSON.
func valueText(v any) string {
	if s, ok := v.(string); ok && s == graph.SensitiveMask {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

var lineEscapes = strings.NewReplacer("\t", `\t`, "\n", `\n`, "\r", `\r`)

// OneLine escapes the tabs and line breaks of s (\t, \n, \r), as
// WriteText does those of IDs and values, so that s stays on one line and
// in one cell of a table.
func OneLine(s string) string {
	if !strings.ContainsAny(s, "\t\n\r") {
		return s
	}
	return lineEscapes.Replace(s)
}

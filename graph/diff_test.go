package graph

import (
	"bytes"
	"slices"
	"testing"
)

func TestDiff(t *testing.T) {
	doc := func(serial, single string, outputs string, extra string) []byte {
		return []byte(`{"version":4,"serial":` + serial + `,"lineage":"l","outputs":{` + outputs + `},"resources":[` +
			`{"mode":"managed","type":"t","name":"a","provider":"p","instances":[{"attributes":{"v":` + single + `}}]},` +
			`{"mode":"managed","type":"t","name":"c","provider":"p","instances":[{"index_key":0,"attributes":{}},{"index_key":1,"attributes":{}}` + extra + `]}]}`)
	}
	a := mustParse(t, doc("1", "1", `"keep":{"value":1,"type":"number"},"gone":{"value":1,"type":"number"},"edit":{"value":1,"type":"number"}`, ""))
	b := mustParse(t, doc("2", "2", `"keep":{"value":1,"type":"number"},"new":{"value":1,"type":"number"},"edit":{"value":2,"type":"number"}`,
		`,{"index_key":1,"deposed":"abcd1234","attributes":{}}`))

	got := Diff(a, b)
	want := Changes{
		Added:          []string{"t.c[1] (deposed object abcd1234)"},
		Changed:        []string{"t.a"},
		OutputsAdded:   []string{"new"},
		OutputsRemoved: []string{"gone"},
		OutputsChanged: []string{"edit"},
	}
	if !equalChanges(got, want) {
		t.Errorf("Diff(a, b) = %+v, want %+v", got, want)
	}
	back := Diff(b, a)
	if !slices.Equal(back.Removed, want.Added) || !slices.Equal(back.OutputsAdded, want.OutputsRemoved) {
		t.Errorf("Diff(b, a) = %+v", back)
	}
	if c := Diff(a, a); !c.Empty() {
		t.Errorf("Diff(a, a) = %+v", c)
	}

	// Nil is the empty state.
	all := Diff(nil, a)
	if !slices.Equal(all.Added, []string{"t.a", "t.c[0]", "t.c[1]"}) || !slices.Equal(all.OutputsAdded, []string{"edit", "gone", "keep"}) || all.Empty() {
		t.Errorf("Diff(nil, a) = %+v", all)
	}
	if none := Diff(a, nil); !slices.Equal(none.Removed, all.Added) {
		t.Errorf("Diff(a, nil) = %+v", none)
	}
	if !Diff(nil, nil).Empty() {
		t.Error("Diff(nil, nil) not empty")
	}
}

func equalChanges(a, b Changes) bool {
	return slices.Equal(a.Added, b.Added) && slices.Equal(a.Removed, b.Removed) && slices.Equal(a.Changed, b.Changed) &&
		slices.Equal(a.OutputsAdded, b.OutputsAdded) && slices.Equal(a.OutputsRemoved, b.OutputsRemoved) && slices.Equal(a.OutputsChanged, b.OutputsChanged)
}

// TestDiffIgnoresLayout: the same state from either CLI has no changes.
func TestDiffIgnoresLayout(t *testing.T) {
	for _, fx := range fixtures(t) {
		if fx.format != FormatCompact {
			continue
		}
		a := mustParse(t, fx.data)
		b := mustParse(t, sibling(t, fx))
		if c := Diff(a, b); !c.Empty() {
			t.Errorf("%s: %+v", fx.name, c)
		}
		if !bytes.Equal(a.Render(FormatIndent), b.Render(FormatIndent)) {
			t.Errorf("%s: renders differ", fx.name)
		}
	}
}

func TestIndex(t *testing.T) {
	for _, fx := range fixtures(t) {
		st := mustParse(t, fx.data)
		idx := st.Index()
		if len(idx) != len(st.Instances) {
			t.Errorf("%s: %d IDs for %d instances", fx.name, len(idx), len(st.Instances))
		}
		for id, i := range idx {
			if st.Instances[i].ID() != id {
				t.Errorf("%s: Index()[%q] = %d", fx.name, id, i)
			}
		}
		for name, i := range st.OutputIndex() {
			if st.Outputs[i].Name != name {
				t.Errorf("%s: OutputIndex()[%q] = %d", fx.name, name, i)
			}
		}
	}
}

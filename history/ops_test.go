package history_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/history"
	"github.com/kilolock/kilolock/internal/enginetest"
)

// sameContent reports whether two graphs hold the same instances and
// outputs.
func sameContent(a, b *graph.State) bool { return graph.Diff(a, b).Empty() }

func TestShowAndDiff(t *testing.T) {
	ctx := context.Background()
	e := enginetest.SQLiteEngine(t)
	enginetest.ThreeVersions(t, e, "s")

	view, err := history.Show(ctx, e, "s", enginetest.MustRef(t, "@1"))
	if err != nil || view.Version.Number != 1 || view.Current || len(view.Instances) != 2 || view.Instances[1].Address != "terraform_data.item[1]" || view.Instances[1].Type != "terraform_data" {
		t.Fatalf("Show(@1) = %+v, %v", view, err)
	}
	if view, err = history.Show(ctx, e, "s", kilolock.Latest); err != nil || !view.Current || len(view.Instances) != 4 {
		t.Fatalf("Show(@latest) = %+v, %v", view, err)
	}

	d, err := history.Diff(ctx, e, "s", enginetest.MustRef(t, "@1"), enginetest.MustRef(t, "@3"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(d.Added, ","); got != "terraform_data.item[2],terraform_data.item[3]" {
		t.Fatalf("added %s", got)
	}
	if len(d.Removed) != 0 || len(d.Changed) != 2 || d.Changed[0].Address != "terraform_data.item[0]" {
		t.Fatalf("diff %+v", d)
	}
	var lines []string
	for _, c := range d.Changed[0].Changes {
		lines = append(lines, c.String())
	}
	if got, want := strings.Join(lines, "\n"), `attributes.input.value: "a" → "A"`; got != want {
		t.Fatalf("attribute diff:\n%s\nwant:\n%s", got, want)
	}
	if len(d.OutputsChanged) != 1 || d.OutputsChanged[0].Changes[0].String() != "value: 2 → 4" {
		t.Fatalf("outputs changed %+v", d.OutputsChanged)
	}
	if _, err := json.Marshal(d); err != nil {
		t.Fatalf("StateDiff does not encode: %v", err)
	}

	hist, err := history.AddressHistory(ctx, e, "s", "terraform_data.item[1]")
	if err != nil || len(hist) != 2 || hist[0].Kind != "changed" || hist[0].Version.Number != 2 || hist[1].Kind != "added" || hist[1].Version.Number != 1 {
		t.Fatalf("AddressHistory(item[1]) = %+v, %v", hist, err)
	}
	if got := hist[0].Changes[0].String(); got != `attributes.input.value: "b" → "B"` {
		t.Fatalf("AddressHistory change %s", got)
	}
	if hist, err = history.AddressHistory(ctx, e, "s", "terraform_data.item"); err != nil || len(hist) != 6 {
		t.Fatalf("AddressHistory(resource) = %d changes, %v; want 6", len(hist), err)
	}
	if _, err := history.AddressHistory(ctx, e, "s", "terraform_data.nothing"); !errors.Is(err, kilolock.ErrNotFound) {
		t.Fatalf("AddressHistory of an unknown address: %v", err)
	}
}

func TestSensitiveValuesAreMasked(t *testing.T) {
	ctx := context.Background()
	e := enginetest.SQLiteEngine(t)
	doc, err := os.ReadFile("../graph/testdata/sensitive/terraform.tfstate")
	if err != nil {
		t.Fatal(err)
	}
	enginetest.Write(t, e, "sec", doc)
	doc2 := bytes.ReplaceAll(doc, []byte(`"serial":1`), []byte(`"serial":2`))
	doc2 = bytes.ReplaceAll(doc2, []byte("hunter2"), []byte("hunter3"))
	doc2 = bytes.ReplaceAll(doc2, []byte(`"user":"admin"`), []byte(`"user":"root"`))
	enginetest.Write(t, e, "sec", doc2)

	inst, err := history.ShowInstance(ctx, e, "sec", kilolock.Latest, "terraform_data.s")
	if err != nil {
		t.Fatal(err)
	}
	// The fixture marks only input's paths sensitive (output holds the
	// same values unmarked): masking follows the marks the writer left.
	b, _ := json.Marshal(inst.Attributes.(map[string]any)["input"])
	if bytes.Contains(b, []byte("hunter")) || !bytes.Contains(b, []byte(`"password":"(sensitive)"`)) || !bytes.Contains(b, []byte(`"user":"root"`)) {
		t.Fatalf("ShowInstance leaks or over-masks:\n%s", b)
	}
	d, err := history.Diff(ctx, e, "sec", enginetest.MustRef(t, "@1"), enginetest.MustRef(t, "@2"))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, c := range d.Changed[0].Changes {
		if strings.HasPrefix(c.Path, "attributes.input") {
			if b, _ := json.Marshal(c); bytes.Contains(b, []byte("hunter")) {
				t.Fatalf("Diff leaks a sensitive value: %s", b)
			}
		}
		lines = append(lines, c.String())
	}
	got := strings.Join(lines, "\n")
	for _, want := range []string{
		`attributes.input.value.list[1]: (sensitive) → (sensitive)`,
		`attributes.input.value.password: (sensitive) → (sensitive)`,
		`attributes.input.value.user: "admin" → "root"`,
	} {
		if !strings.Contains(got, want) {
			t.Fatalf("attribute diff lacks %q:\n%s", want, got)
		}
	}
	if len(d.OutputsChanged) != 1 || d.OutputsChanged[0].Changes[0].String() != "value: (sensitive) → (sensitive)" {
		t.Fatalf("sensitive output diff %+v", d.OutputsChanged)
	}
}

func TestRollback(t *testing.T) {
	ctx := context.Background()
	st, _ := enginetest.OpenSQLite(t)
	e := kilolock.NewEngine(st, kilolock.Options{})
	enginetest.ThreeVersions(t, e, "r")

	plan, err := history.PlanRollback(ctx, e, "r", enginetest.MustRef(t, "@1"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(plan.Removed, ",") != "terraform_data.item[2],terraform_data.item[3]" || len(plan.Added) != 0 || len(plan.Changed) != 2 {
		t.Fatalf("plan %+v", plan)
	}
	if plan.Changed[1].Changes[0].String() != `attributes.input.value: "B" → "b"` {
		t.Fatalf("plan change %s", plan.Changed[1].Changes[0])
	}
	if want := strings.Replace(history.RollbackWarning, "the target version", "@1", 1); plan.Warning != want || !strings.Contains(want, "created after @1 become orphans") {
		t.Fatalf("warning %q", plan.Warning)
	}
	if h, _ := e.History(ctx, "r", kilolock.HistoryOptions{}); len(h) != 3 {
		t.Fatalf("a dry run wrote: %d versions", len(h))
	}

	res, err := history.Rollback(ctx, e, "r", enginetest.MustRef(t, "@1"), history.RollbackOptions{Actor: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	v := res.Version
	if v == nil || v.Number != 4 || v.Source != kilolock.SourceRollback || v.Actor != "alice" || v.Serial != 4 || v.Lineage != "L" || v.Removed != 2 || v.Changed != 2 {
		t.Fatalf("rollback version %+v", v)
	}
	got := enginetest.ReadGraph(t, e, "r")
	at1, err := history.Export(ctx, e, "r", enginetest.MustRef(t, "@1"))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := graph.Parse(at1)
	if !sameContent(got, want) || got.Serial != 4 || got.Lineage != "L" {
		t.Fatalf("after rollback: %v serial %d, want the content of @1 at serial 4", enginetest.Addresses(got), got.Serial)
	}
	// A fresh engine (no cache) reads the same.
	if d, err := kilolock.NewEngine(st, kilolock.Options{}).Read(ctx, "r"); err != nil || !bytes.Equal(d.Bytes, enginetest.MustRead(t, e, "r")) {
		t.Fatalf("a fresh engine reads other bytes (%v)", err)
	}
	// History is kept: @3 is still there with its content.
	if view, err := history.Show(ctx, e, "r", enginetest.MustRef(t, "@3")); err != nil || len(view.Instances) != 4 {
		t.Fatalf("@3 after rollback: %+v, %v", view, err)
	}
	// Rolling back onto the same content writes nothing.
	if res, err := history.Rollback(ctx, e, "r", enginetest.MustRef(t, "@1"), history.RollbackOptions{}); err != nil || res.Version != nil {
		t.Fatalf("a no-op rollback: %+v, %v", res, err)
	}
	// A client with the rolled back state can go on: serial 5 is accepted.
	enginetest.Write(t, e, "r", enginetest.TFState(t, true, 5, "L", "a", "b", "x"))
}

func TestRollbackResource(t *testing.T) {
	ctx := context.Background()
	e := enginetest.SQLiteEngine(t)
	enginetest.ThreeVersions(t, e, "rr")

	plan, err := history.PlanRollbackResource(ctx, e, "rr", "terraform_data.item[1]", enginetest.MustRef(t, "@1"))
	if err != nil || len(plan.Changed) != 1 || plan.Changed[0].Address != "terraform_data.item[1]" || len(plan.Added)+len(plan.Removed) != 0 || plan.Warning == "" {
		t.Fatalf("plan %+v, %v", plan, err)
	}
	res, err := history.RollbackResource(ctx, e, "rr", "terraform_data.item[1]", enginetest.MustRef(t, "@1"), history.RollbackOptions{})
	if err != nil || res.Version.Changed != 1 || res.Version.Source != kilolock.SourceRollback {
		t.Fatalf("RollbackResource: %+v, %v", res, err)
	}
	g := enginetest.ReadGraph(t, e, "rr")
	if !strings.Contains(string(g.Instances[1].Object), `"value":"b"`) || !strings.Contains(string(g.Instances[0].Object), `"value":"A"`) || len(g.Instances) != 4 {
		t.Fatalf("after a resource rollback: %s", enginetest.MustRead(t, e, "rr"))
	}
	// The whole resource to @1: [2] and [3] go, [0] goes back to "a".
	res, err = history.RollbackResource(ctx, e, "rr", "terraform_data.item", enginetest.MustRef(t, "@1"), history.RollbackOptions{})
	if err != nil || res.Version.Removed != 2 || res.Version.Changed != 1 {
		t.Fatalf("RollbackResource(resource): %+v, %v", res, err)
	}
	if _, err := history.RollbackResource(ctx, e, "rr", "terraform_data.nothing", enginetest.MustRef(t, "@1"), history.RollbackOptions{}); !errors.Is(err, kilolock.ErrInvalid) {
		t.Fatalf("unknown address: %v", err)
	}
}

func TestServerWritesRefusedWhileLocked(t *testing.T) {
	ctx := context.Background()
	for _, mode := range []kilolock.LockMode{kilolock.LockExclusive, kilolock.LockOptimistic} {
		t.Run(string(mode), func(t *testing.T) {
			st, _ := enginetest.OpenSQLite(t)
			e := kilolock.NewEngine(st, kilolock.Options{DefaultLockMode: mode})
			enginetest.ThreeVersions(t, e, "held")
			if _, err := e.Lock(ctx, "held", kilolock.LockInfo{ID: "L1", Who: "bob@laptop", Operation: "OperationTypeApply"}); err != nil {
				t.Fatal(err)
			}
			for name, op := range map[string]func() error{
				"rollback": func() error {
					_, err := history.Rollback(ctx, e, "held", enginetest.MustRef(t, "@1"), history.RollbackOptions{})
					return err
				},
				"rollback dry run": func() error { _, err := history.PlanRollback(ctx, e, "held", enginetest.MustRef(t, "@1")); return err },
				"resource": func() error {
					_, err := history.RollbackResource(ctx, e, "held", "terraform_data.item", enginetest.MustRef(t, "@1"), history.RollbackOptions{})
					return err
				},
				"rm": func() error {
					_, err := history.StateRm(ctx, e, "held", []string{"terraform_data.item[0]"}, history.StateOpOptions{})
					return err
				},
				"mv": func() error {
					_, err := history.StateMv(ctx, e, "held", "terraform_data.item[0]", "terraform_data.item[9]", history.StateOpOptions{})
					return err
				},
				"import": func() error {
					_, err := history.Import(ctx, e, "held", enginetest.TFState(t, true, 9, "L", "z"), history.ImportOptions{})
					return err
				},
			} {
				err := op()
				var le *kilolock.LockedError
				if !errors.As(err, &le) || le.Holder.Who != "bob@laptop" || !strings.Contains(err.Error(), "bob@laptop") {
					t.Fatalf("%s while locked: %v, want a LockedError naming bob@laptop", name, err)
				}
			}
			if h, _ := e.History(ctx, "held", kilolock.HistoryOptions{}); len(h) != 3 {
				t.Fatalf("%d versions after refused writes, want 3", len(h))
			}
		})
	}
}

func TestStateRm(t *testing.T) {
	ctx := context.Background()
	e := enginetest.SQLiteEngine(t)
	enginetest.ThreeVersions(t, e, "rm")

	res, err := history.StateRm(ctx, e, "rm", []string{"terraform_data.item[1]", "terraform_data.item[3]"}, history.StateOpOptions{DryRun: true})
	if err != nil || res.Version != nil || !res.DryRun || strings.Join(res.Plan.Removed, ",") != "terraform_data.item[1],terraform_data.item[3]" {
		t.Fatalf("dry run %+v, %v", res, err)
	}
	if len(enginetest.ReadGraph(t, e, "rm").Instances) != 4 {
		t.Fatal("a dry run removed instances")
	}
	if _, err := history.StateRm(ctx, e, "rm", []string{"terraform_data.item[1]", "terraform_data.nope"}, history.StateOpOptions{}); !errors.Is(err, kilolock.ErrInvalid) || !strings.Contains(err.Error(), "terraform_data.nope") {
		t.Fatalf("rm of an unknown address: %v", err)
	}
	res, err = history.StateRm(ctx, e, "rm", []string{"terraform_data.item[1]", "terraform_data.item[3]"}, history.StateOpOptions{Actor: "carol"})
	if err != nil || res.Version.Source != kilolock.SourceStateOp || res.Version.Removed != 2 || res.Version.Serial != 4 || res.Version.Actor != "carol" {
		t.Fatalf("rm %+v, %v", res, err)
	}
	if got := strings.Join(enginetest.Addresses(enginetest.ReadGraph(t, e, "rm")), ","); got != "terraform_data.item[0],terraform_data.item[2]" {
		t.Fatalf("after rm: %s", got)
	}
	list, err := history.StateList(ctx, e, "rm", "terraform_data.item")
	if err != nil || len(list) != 2 {
		t.Fatalf("StateList: %+v, %v", list, err)
	}
	if list, _ = history.StateList(ctx, e, "rm", "*item[2]"); len(list) != 1 {
		t.Fatalf("StateList glob: %+v", list)
	}
	if list, _ = history.StateList(ctx, e, "rm", "terraform_data.ite"); len(list) != 0 {
		t.Fatalf("StateList matched a partial name: %+v", list)
	}
	if _, err := history.StateRm(ctx, e, "rm", []string{"terraform_data.item"}, history.StateOpOptions{}); err != nil || len(enginetest.ReadGraph(t, e, "rm").Instances) != 0 {
		t.Fatalf("rm of a resource: %v", err)
	}
}

func TestStateMv(t *testing.T) {
	ctx := context.Background()
	doc, err := os.ReadFile("../graph/testdata/modules/terraform.tfstate")
	if err != nil {
		t.Fatal(err)
	}
	e := enginetest.SQLiteEngine(t)
	enginetest.Write(t, e, "mv", doc)
	before := enginetest.ReadGraph(t, e, "mv")

	// Into a module: every dependency on terraform_data.root follows.
	res, err := history.StateMv(ctx, e, "mv", "terraform_data.root", "module.demo.terraform_data.root", history.StateOpOptions{DryRun: true})
	if err != nil || res.Version != nil || strings.Join(res.Plan.Added, ",") != "module.demo.terraform_data.root" || strings.Join(res.Plan.Removed, ",") != "terraform_data.root" {
		t.Fatalf("dry run: %+v, %v", res.Plan, err)
	}
	if len(res.Plan.Changed) != 12 {
		t.Fatalf("dry run changes the dependencies of %d instances, want 12", len(res.Plan.Changed))
	}
	if !sameContent(before, enginetest.ReadGraph(t, e, "mv")) {
		t.Fatal("a dry run changed the state")
	}
	if res, err = history.StateMv(ctx, e, "mv", "terraform_data.root", "module.demo.terraform_data.root", history.StateOpOptions{}); err != nil {
		t.Fatal(err)
	}
	if res.Version.Source != kilolock.SourceStateOp || res.Version.Serial != 2 {
		t.Fatalf("version %+v", res.Version)
	}
	g := enginetest.ReadGraph(t, e, "mv")
	moved := g.Instances[g.Index()["module.demo.terraform_data.root"]]
	if !bytes.Equal(moved.Object, before.Instances[before.Index()["terraform_data.root"]].Object) {
		t.Fatalf("the moved object changed: %s", moved.Object)
	}
	leaf := g.Instances[g.Index()[`module.a["x"].module.child.terraform_data.leaf[0]`]]
	if got := strings.Join(leaf.Dependencies, ","); got != "module.a.terraform_data.this,module.demo.terraform_data.root" {
		t.Fatalf("leaf dependencies %s", got)
	}
	if !strings.HasPrefix(string(leaf.Object), `{"index_key":0,"schema_version":0,"attributes":`) {
		t.Fatalf("member order not kept: %s", leaf.Object)
	}
	for i := range g.Instances {
		for _, d := range g.Instances[i].Dependencies {
			if d == "terraform_data.root" {
				t.Fatalf("%s still depends on terraform_data.root", g.Instances[i].ID())
			}
		}
	}

	// Index keys, and out of a module to the root.
	if _, err = history.StateMv(ctx, e, "mv", `module.b[1].module.child.terraform_data.leaf[0]`, `module.b[1].module.child.terraform_data.leaf[5]`, history.StateOpOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err = history.StateMv(ctx, e, "mv", `module.a["x"].terraform_data.this`, `terraform_data.this["x"]`, history.StateOpOptions{}); err != nil {
		t.Fatal(err)
	}
	g = enginetest.ReadGraph(t, e, "mv")
	idx := g.Index()
	five, ok := idx[`module.b[1].module.child.terraform_data.leaf[5]`]
	if !ok || !strings.HasPrefix(string(g.Instances[five].Object), `{"index_key":5,`) {
		t.Fatalf("after a key move: %v", enginetest.Addresses(g))
	}
	x, ok := idx[`terraform_data.this["x"]`]
	if !ok || !strings.HasPrefix(string(g.Instances[x].Object), `{"index_key":"x","schema_version":0`) {
		t.Fatalf("after a move out of a module: %v", enginetest.Addresses(g))
	}
	// module.a["y z"].terraform_data.this remains, so dependencies name both.
	leaf = g.Instances[idx[`module.a["y z"].module.child.terraform_data.leaf[1]`]]
	if got := strings.Join(leaf.Dependencies, ","); got != "module.a.terraform_data.this,module.demo.terraform_data.root,terraform_data.this" {
		t.Fatalf("leaf dependencies %s", got)
	}

	// Refusals: onto an existing address, unknown from, type change.
	for _, tc := range [][2]string{
		{`module.b[1].module.child.terraform_data.leaf[1]`, `module.b[1].module.child.terraform_data.leaf[5]`},
		{`terraform_data.nope`, `terraform_data.other`},
		{`terraform_data.this["x"]`, `null_resource.this`},
		{`module.b[0].module.child.terraform_data.leaf`, `terraform_data.leaf[0]`},
		{`terraform_data.this["x"`, `terraform_data.y`},
	} {
		if _, err := history.StateMv(ctx, e, "mv", tc[0], tc[1], history.StateOpOptions{}); !errors.Is(err, kilolock.ErrInvalid) {
			t.Fatalf("mv %s %s: %v, want ErrInvalid", tc[0], tc[1], err)
		}
	}
	// A whole resource keeps its keys.
	if _, err = history.StateMv(ctx, e, "mv", `module.b[0].module.child.terraform_data.leaf`, `terraform_data.leaf`, history.StateOpOptions{}); err != nil {
		t.Fatal(err)
	}
	g = enginetest.ReadGraph(t, e, "mv")
	if _, ok := g.Index()["terraform_data.leaf[1]"]; !ok {
		t.Fatalf("after a resource move: %v", enginetest.Addresses(g))
	}
	// The server-made bytes round-trip.
	d, _ := e.Read(ctx, "mv")
	if !bytes.Equal(g.Render(g.Format), d.Bytes) {
		t.Fatal("parse and render of the served state do not give it back")
	}
}

func TestExportImport(t *testing.T) {
	ctx := context.Background()
	doc, err := os.ReadFile("../graph/testdata/modules/terraform.tfstate")
	if err != nil {
		t.Fatal(err)
	}
	e := enginetest.SQLiteEngine(t)
	enginetest.Write(t, e, "src", doc)
	if _, err := history.StateRm(ctx, e, "src", []string{"module.b"}, history.StateOpOptions{}); err != nil {
		t.Fatal(err)
	}
	cur, err := history.Export(ctx, e, "src", kilolock.Latest)
	if err != nil || !bytes.Equal(cur, enginetest.MustRead(t, e, "src")) {
		t.Fatalf("export of the current version: %v", err)
	}
	old, err := history.Export(ctx, e, "src", enginetest.MustRef(t, "@1"))
	if err != nil || !bytes.Equal(old, doc) {
		t.Fatalf("export of @1 is not the posted bytes (%v)", err)
	}

	res, err := history.Import(ctx, e, "dst", cur, history.ImportOptions{Actor: "dave"})
	if err != nil || res.Version.Source != kilolock.SourceImport || res.Version.Actor != "dave" {
		t.Fatalf("import: %+v, %v", res, err)
	}
	if got := enginetest.MustRead(t, e, "dst"); !bytes.Equal(got, cur) {
		t.Fatal("an import into a new state does not serve the imported bytes")
	}
	src, dst := enginetest.ReadGraph(t, e, "src"), enginetest.ReadGraph(t, e, "dst")
	if !sameContent(src, dst) || src.Lineage != dst.Lineage || src.Serial != dst.Serial {
		t.Fatal("exported and imported states differ")
	}

	// The same content again, in either layout, adds no version.
	for _, again := range [][]byte{cur, compact(t, cur)} {
		if res, err := history.Import(ctx, e, "dst", again, history.ImportOptions{}); err != nil || !res.Unchanged || res.Version.Number != 1 {
			t.Fatalf("re-import of the current content: %+v, %v; want unchanged at version 1", res, err)
		}
	}

	// The older version onto the same lineage: lands with a higher serial.
	res, err = history.Import(ctx, e, "dst", old, history.ImportOptions{})
	if err != nil || res.Version.Serial != 3 {
		t.Fatalf("import of an older serial: %+v, %v", res, err)
	}
	if g := enginetest.ReadGraph(t, e, "dst"); g.Serial != 3 || len(g.Instances) != 13 {
		t.Fatalf("after import: serial %d, %d instances", g.Serial, len(g.Instances))
	}

	other := enginetest.TFState(t, true, 1, "another-lineage", "z")
	var ce *kilolock.ConflictError
	if _, err := history.Import(ctx, e, "dst", other, history.ImportOptions{}); !errors.As(err, &ce) || ce.Reason != kilolock.ReasonLineage {
		t.Fatalf("import of another lineage: %v, want a lineage conflict", err)
	}
	if res, err = history.Import(ctx, e, "dst", other, history.ImportOptions{Force: true}); err != nil || res.Version.Lineage != "another-lineage" {
		t.Fatalf("forced import: %+v, %v", res, err)
	}
	if h, _ := e.History(ctx, "dst", kilolock.HistoryOptions{}); len(h) != 3 {
		t.Fatalf("%d versions, want 3", len(h))
	}
	if _, err := history.Import(ctx, e, "dst", []byte("{"), history.ImportOptions{}); !errors.Is(err, kilolock.ErrInvalid) {
		t.Fatalf("import of garbage: %v", err)
	}
}

// compact returns doc re-encoded without insignificant whitespace, as
// OpenTofu lays states out.
func compact(t *testing.T, doc []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, doc); err != nil {
		t.Fatal(err)
	}
	return append(b.Bytes(), '\n')
}

// TestRollbackEncrypted: a whole-state rollback works when the target or
// the current version is a client-side encrypted blob: the target's bytes
// come back as they were written, the plan says it cannot list resources,
// and holders still refuse it.
func TestRollbackEncrypted(t *testing.T) {
	ctx := context.Background()
	e := enginetest.SQLiteEngine(t)
	plain := enginetest.TFState(t, true, 1, "lin", "x", "y")
	blob := []byte(`{"serial":2,"lineage":"lin","meta":{"key_provider.pbkdf2.k":"eyJzYWx0Ijo"},"encrypted_data":"c2VjcmV0","encryption_version":"v0"}` + "\n")
	blob2 := []byte(`{"serial":3,"lineage":"lin","meta":{"key_provider.pbkdf2.k":"eyJzYWx0Ijo"},"encrypted_data":"bW9yZQ==","encryption_version":"v0"}` + "\n")
	enginetest.Write(t, e, "enc", plain)
	enginetest.Write(t, e, "enc", blob)
	enginetest.Write(t, e, "enc", blob2)

	// To an encrypted version: its bytes, as written.
	plan, err := history.PlanRollback(ctx, e, "enc", enginetest.MustRef(t, "@2"))
	if err != nil || !plan.Opaque || plan.Target.Number != 2 || plan.Base.Number != 3 || plan.Warning == "" {
		t.Fatalf("PlanRollback to an encrypted version = %+v, %v", plan, err)
	}
	if h, _ := e.History(ctx, "enc", kilolock.HistoryOptions{}); len(h) != 3 {
		t.Fatalf("the dry run wrote: %d versions", len(h))
	}
	res, err := history.Rollback(ctx, e, "enc", enginetest.MustRef(t, "@2"), history.RollbackOptions{Actor: "alice"})
	if err != nil || res.Version == nil || res.Version.Number != 4 || res.Version.Source != kilolock.SourceRollback || res.Version.Actor != "alice" || res.Version.Format != kilolock.FormatOpaque {
		t.Fatalf("Rollback to @2 = %+v, %v", res, err)
	}
	if got := enginetest.MustRead(t, e, "enc"); !bytes.Equal(got, blob) {
		t.Fatalf("after the rollback the state is %q, want the blob of @2", got)
	}
	if res, err := history.Rollback(ctx, e, "enc", enginetest.MustRef(t, "@2"), history.RollbackOptions{}); err != nil || res.Version != nil {
		t.Fatalf("rolling back onto the same bytes = %+v, %v; want nothing written", res, err)
	}

	// To the plain version before encryption: readable again, with a serial
	// above every earlier one.
	res, err = history.Rollback(ctx, e, "enc", enginetest.MustRef(t, "@1"), history.RollbackOptions{})
	if err != nil || res.Version == nil || res.Version.Number != 5 || res.Version.Format == kilolock.FormatOpaque {
		t.Fatalf("Rollback to @1 = %+v, %v", res, err)
	}
	got := enginetest.ReadGraph(t, e, "enc")
	want, _ := graph.Parse(plain)
	if !sameContent(got, want) || got.Lineage != "lin" || got.Serial <= 1 {
		t.Fatalf("after rolling back to @1: %v serial %d", enginetest.Addresses(got), got.Serial)
	}
	// From plain back to encrypted, with a holder: refused, nothing written.
	if _, err := e.Lock(ctx, "enc", kilolock.LockInfo{ID: "L1", Who: "bob", Operation: "OperationTypeApply"}); err != nil {
		t.Fatal(err)
	}
	var locked *kilolock.LockedError
	if _, err := history.Rollback(ctx, e, "enc", enginetest.MustRef(t, "@3"), history.RollbackOptions{}); !errors.As(err, &locked) || locked.Holder.ID != "L1" {
		t.Fatalf("Rollback while locked = %v; want a LockedError naming L1", err)
	}
	if h, _ := e.History(ctx, "enc", kilolock.HistoryOptions{}); len(h) != 5 {
		t.Fatalf("%d versions after a refused rollback, want 5", len(h))
	}
}

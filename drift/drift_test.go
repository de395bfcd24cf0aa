package drift_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/drift"
	"github.com/kilolock/kilolock/internal/enginetest"
)

// sensitiveState is the fixture whose terraform_data.s marks
// input.password and input.list[1] sensitive.
func sensitiveState(t testing.TB) (doc []byte, attrs map[string]any) {
	t.Helper()
	doc, err := os.ReadFile("../graph/testdata/sensitive/terraform.tfstate")
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Resources []struct {
			Instances []struct {
				Attributes map[string]any `json:"attributes"`
			} `json:"instances"`
		} `json:"resources"`
	}
	if err := json.Unmarshal(doc, &st); err != nil {
		t.Fatal(err)
	}
	return doc, st.Resources[0].Instances[0].Attributes
}

// TestRecordDrift: a report's real objects are compared with the version
// the plan read, attribute by attribute, and nothing sensitive is stored:
// not what the record marks, nor what the real object marks, nor a value
// that repeats either.
func TestRecordDrift(t *testing.T) {
	ctx := context.Background()
	e := enginetest.SQLiteEngine(t)
	doc, attrs := sensitiveState(t)
	enginetest.Write(t, e, "sec", doc)
	g := enginetest.ReadGraph(t, e, "sec")

	real := strings.NewReplacer(`"admin"`, `"root"`, "hunter2", "hunter3").Replace(mustJSON(t, attrs))
	report := &drift.DriftReport{Lineage: g.Lineage, Serial: g.Serial, Drifted: []drift.DriftedInstance{{
		Address:       "terraform_data.s",
		Real:          json.RawMessage(real),
		RealSensitive: json.RawMessage(`{"output":{"password":true}}`),
	}}}
	c, err := drift.RecordDrift(ctx, e, "sec", report, kilolock.Caller{Actor: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Version != 1 || len(c.Drifted) != 1 || c.Drifted[0].Kind != drift.DriftChanged {
		t.Fatalf("check %+v", c)
	}
	open, err := drift.Drift(ctx, e, "sec")
	if err != nil || len(open) != 1 {
		t.Fatalf("Drift = %+v, %v", open, err)
	}
	var got []string
	for _, ch := range open[0].Changes {
		got = append(got, ch.Path+": "+mustJSON(t, ch.Recorded)+" → "+mustJSON(t, ch.Real))
	}
	want := []string{
		`input.value.list[1]: "(sensitive)" → "(sensitive)"`,
		`input.value.password: "(sensitive)" → "(sensitive)"`,
		`input.value.user: "admin" → "root"`,
		`output.value.list[1]: "(sensitive)" → "(sensitive)"`,
		`output.value.password: "(sensitive)" → "(sensitive)"`,
		`output.value.user: "admin" → "root"`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("changes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if open[0].Actor != "alice" || open[0].Checked.IsZero() {
		t.Errorf("record %+v lacks who and when", open[0])
	}
	// output.list[1] repeats input.list[1] unmarked on both sides, as
	// terraform_data's output does: masked as the clear copy of the
	// instance masks it, so that no record holds a secret.
	for _, secret := range []string{"hunter2", "hunter3"} {
		if js := mustJSON(t, open); strings.Contains(js, secret) {
			t.Errorf("the drift record holds %s: %s", secret, js)
		}
	}
	// A gone object, and bad reports.
	report.Drifted[0].Real = json.RawMessage(`null`)
	if c, err := drift.RecordDrift(ctx, e, "sec", report, kilolock.Caller{}); err != nil || c.Drifted[0].Kind != drift.DriftDeleted {
		t.Fatalf("a gone object: %+v, %v", c, err)
	}
	for name, bad := range map[string]*drift.DriftReport{
		"other lineage":  {Lineage: "x", Serial: g.Serial},
		"unknown serial": {Lineage: g.Lineage, Serial: 99},
		"unknown address": {Lineage: g.Lineage, Serial: g.Serial,
			Drifted: []drift.DriftedInstance{{Address: "terraform_data.nope", Real: json.RawMessage(`null`)}}},
		"bad address": {Lineage: g.Lineage, Serial: g.Serial,
			Drifted: []drift.DriftedInstance{{Address: "not an address", Real: json.RawMessage(`null`)}}},
		"bad scope": {Lineage: g.Lineage, Serial: g.Serial, Scope: []string{"terraform_data.nope"}},
	} {
		if _, err := drift.RecordDrift(ctx, e, "sec", bad, kilolock.Caller{}); !errors.Is(err, kilolock.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	if h, _ := e.History(ctx, "sec", kilolock.HistoryOptions{}); len(h) != 1 {
		t.Errorf("a drift check wrote a version: %d versions", len(h))
	}
}

// TestAcceptRefresh: the refreshed state of a plan that read the current
// serial becomes a version whose source is refresh, which closes the drift
// of what it changed; one that read an older serial is refused.
func TestAcceptRefresh(t *testing.T) {
	ctx := context.Background()
	e := enginetest.SQLiteEngine(t)
	enginetest.Write(t, e, "r", enginetest.TFState(t, true, 4, "L", "a", "b"))
	if _, err := drift.RecordDrift(ctx, e, "r", &drift.DriftReport{Lineage: "L", Serial: 4,
		Drifted: []drift.DriftedInstance{{Address: "terraform_data.item[1]", Real: json.RawMessage(`null`)}}}, kilolock.Caller{Actor: "ci"}); err != nil {
		t.Fatal(err)
	}
	refreshed := enginetest.TFState(t, true, 4, "L", "a")
	v, err := drift.AcceptRefresh(ctx, e, "r", refreshed, "ci")
	if err != nil || v == nil || v.Source != drift.SourceRefresh || v.Serial != 5 || v.Removed != 1 || v.Actor != "ci" {
		t.Fatalf("AcceptRefresh = %+v, %v", v, err)
	}
	if open, err := drift.Drift(ctx, e, "r"); err != nil || len(open) != 0 {
		t.Fatalf("drift after the refresh was accepted: %+v, %v", open, err)
	}
	var ce *kilolock.ConflictError
	if _, err := drift.AcceptRefresh(ctx, e, "r", refreshed, "ci"); !errors.As(err, &ce) || ce.Reason != kilolock.ReasonStaleSerial {
		t.Fatalf("accepting a refresh of an older serial = %v", err)
	}
	if h, _ := e.History(ctx, "r", kilolock.HistoryOptions{}); len(h) != 2 {
		t.Fatalf("%d versions, want 2", len(h))
	}
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

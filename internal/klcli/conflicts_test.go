package klcli_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/client"
	"github.com/kilolock/kilolock/internal/klcli"
)

// seedRace adds the state "race" to h's store: optimistic, written by
// three writers at once, as parallel applies would:
//
//	v1  ci pushes a, b, c (serial 1)
//	    alice, bob and carol lock (base serial 1)
//	v2  alice changes a
//	    bob changes a too: rejected, alice won
//	v3  bob changes b instead: merged onto alice's
//	    carol changes a and b: rejected
//	    alice unlocks; dave locks (base serial 3)
func seedRace(t testing.TB, e *kilolock.Engine) {
	t.Helper()
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	write := func(lockID string, serial uint64, values map[string]string) error {
		_, err := e.Write(ctx, "race", raceDoc(t, serial, values), kilolock.WriteOptions{LockID: lockID, Actor: map[string]string{"": "ci"}[lockID]})
		return err
	}
	must(e.SetLockMode(ctx, "race", kilolock.LockOptimistic))
	must(write("", 1, map[string]string{"a": "1", "b": "1", "c": "1"}))
	for _, l := range []kilolock.LockInfo{lockInfo("alice", "lock-a"), lockInfo("bob", "lock-b"), lockInfo("carol", "lock-c")} {
		_, err := e.Lock(ctx, "race", l)
		must(err)
	}
	must(write("lock-a", 2, map[string]string{"a": "alice", "b": "1", "c": "1"}))
	if err := write("lock-b", 2, map[string]string{"a": "bob", "b": "1", "c": "1"}); !errors.Is(err, kilolock.ErrConflict) {
		t.Fatalf("bob's overlapping write: %v, want a conflict", err)
	}
	must(write("lock-b", 2, map[string]string{"a": "1", "b": "bob", "c": "1"}))
	if err := write("lock-c", 2, map[string]string{"a": "carol", "b": "carol", "c": "1"}); !errors.Is(err, kilolock.ErrConflict) {
		t.Fatalf("carol's overlapping write: %v, want a conflict", err)
	}
	_, err := e.Unlock(ctx, "race", "lock-a", false)
	must(err)
	_, err = e.Lock(ctx, "race", lockInfo("dave", "lock-d"))
	must(err)
}

// raceDoc is a state of terraform_data resources named after the keys of
// values, their input the values, laid out as Terraform writes state.
func raceDoc(t testing.TB, serial uint64, values map[string]string) []byte {
	t.Helper()
	type instance struct {
		SchemaVersion       int            `json:"schema_version"`
		Attributes          map[string]any `json:"attributes"`
		SensitiveAttributes []any          `json:"sensitive_attributes"`
	}
	type resource struct {
		Mode      string     `json:"mode"`
		Type      string     `json:"type"`
		Name      string     `json:"name"`
		Provider  string     `json:"provider"`
		Instances []instance `json:"instances"`
	}
	names := make([]string, 0, len(values))
	for n := range values {
		names = append(names, n)
	}
	sort.Strings(names)
	resources := []resource{}
	for _, n := range names {
		resources = append(resources, resource{
			Mode: "managed", Type: "terraform_data", Name: n, Provider: `provider["terraform.io/builtin/terraform"]`,
			Instances: []instance{{Attributes: map[string]any{
				"id": "id-" + n, "input": map[string]any{"value": values[n], "type": "string"}, "output": nil, "triggers_replace": nil,
			}, SensitiveAttributes: []any{}}},
		})
	}
	b, err := json.MarshalIndent(map[string]any{
		"version": 4, "terraform_version": "1.10.10", "serial": serial, "lineage": "race-lineage",
		"outputs": map[string]any{}, "resources": resources, "check_results": nil,
	}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// TestConflictsGolden checks the human output of kl conflicts (and of
// status and history on the same optimistic state) on every backend.
func TestConflictsGolden(t *testing.T) {
	ctx := context.Background()
	cases := []goldenCase{
		{"conflicts_race", func(c *klcli.CLI) error { return c.Conflicts(ctx, "race", 0) }},
		{"conflicts_race_limit", func(c *klcli.CLI) error { return c.Conflicts(ctx, "race", 1) }},
		{"conflicts_none", func(c *klcli.CLI) error { return c.Conflicts(ctx, "prod", 0) }},
		{"status_race", func(c *klcli.CLI) error { return c.Status(ctx, "race") }},
		{"history_race", func(c *klcli.CLI) error { return c.History(ctx, "race", kilolock.HistoryOptions{}) }},
	}
	eachGolden(t, func(t *testing.T, h *harness) { seedRace(t, h.engine) }, cases)
}

func TestConflictsJSON(t *testing.T) {
	forEachBackend(t, func(t *testing.T, h *harness) {
		seedRace(t, h.engine)
		out, err := h.run(t, true, func(c *klcli.CLI) error { return c.Conflicts(context.Background(), "race", 0) })
		if err != nil {
			t.Fatal(err)
		}
		var got klcli.ConflictsJSON
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if got.State != "race" || len(got.Rejections) != 2 {
			t.Fatalf("conflicts = %s", out)
		}
		carol, bob := got.Rejections[0], got.Rejections[1]
		if carol.LockID != "lock-c" || carol.Actor != "carol" || carol.Reason != kilolock.ReasonWriteConflict ||
			!slices.Equal(carol.Addresses, []string{"terraform_data.a", "terraform_data.b"}) ||
			carol.BaseSerial != 1 || carol.LatestSerial != 3 || carol.Winner == nil || carol.Hint == "" {
			t.Errorf("newest rejection = %+v, want carol's on a and b at serial 3", carol)
		}
		if bob.LockID != "lock-b" || !slices.Equal(bob.Addresses, []string{"terraform_data.a"}) || bob.LatestSerial != 2 ||
			bob.Winner == nil || *bob.Winner != (kilolock.Winner{Actor: "alice", LockID: "lock-a", Version: 2}) {
			t.Errorf("oldest rejection = %+v, want bob's on a, alice won at version 2", bob)
		}
		// The same list as kl history --rejected would show, in order.
		if !(carol.ID > bob.ID) {
			t.Errorf("rejections not newest first: %d then %d", carol.ID, bob.ID)
		}
	})
}

// TestConfigureLockMode: kl state config --exclusive-locks=false|true,
// alone or with --allow-lineage-change, on every backend.
func TestConfigureLockMode(t *testing.T) {
	ctx := context.Background()
	forEachBackend(t, func(t *testing.T, h *harness) {
		out, err := h.run(t, false, func(c *klcli.CLI) error {
			return c.ConfigureState(ctx, "staging", client.StateConfig{ExclusiveLocks: ptr(false)})
		})
		if err != nil || !strings.Contains(out, "state staging: optimistic locks") {
			t.Fatalf("config --exclusive-locks=false: %q, %v", out, err)
		}
		if s, err := h.backend.API().Status(ctx, "staging"); err != nil || s.LockMode != kilolock.LockOptimistic || s.AllowLineageChange {
			t.Fatalf("status: %+v, %v", s, err)
		}

		out, err = h.run(t, true, func(c *klcli.CLI) error {
			return c.ConfigureState(ctx, "staging", client.StateConfig{ExclusiveLocks: ptr(true), AllowLineageChange: ptr(true)})
		})
		if want := "{\n  \"ok\": true,\n  \"state\": \"staging\",\n  \"lock_mode\": \"exclusive\",\n  \"allow_lineage_change\": true\n}\n"; err != nil || out != want {
			t.Fatalf("config --exclusive-locks --allow-lineage-change --json: %q, %v", out, err)
		}
		if s, err := h.backend.API().Status(ctx, "staging"); err != nil || s.LockMode != kilolock.LockExclusive || !s.AllowLineageChange {
			t.Fatalf("status: %+v, %v", s, err)
		}

		// A state configured before its first apply is created in that mode.
		if _, err := h.run(t, false, func(c *klcli.CLI) error {
			return c.ConfigureState(ctx, "new", client.StateConfig{ExclusiveLocks: ptr(false)})
		}); err != nil {
			t.Fatal(err)
		}
		if s, err := h.backend.API().Status(ctx, "new"); err != nil || s.LockMode != kilolock.LockOptimistic {
			t.Fatalf("status of a state configured before its first write: %+v, %v", s, err)
		}

		// Refused while the two holders of "shared" hold it, naming them.
		_, err = h.run(t, false, func(c *klcli.CLI) error {
			return c.ConfigureState(ctx, "shared", client.StateConfig{ExclusiveLocks: ptr(true)})
		})
		var report strings.Builder
		klcli.Report(&report, err)
		if klcli.ExitCode(err) != klcli.ExitConflict || !strings.Contains(report.String(), "erin") || !strings.Contains(report.String(), "frank") || !strings.Contains(report.String(), "hint: ") {
			t.Errorf("config of a held state: exit %d\n%s", klcli.ExitCode(err), report.String())
		}
	})
}

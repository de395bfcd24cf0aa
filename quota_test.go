package kilolock_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/charmbracelet/log"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/history"
	"github.com/kilolock/kilolock/internal/enginetest"
	"github.com/kilolock/kilolock/quota"
	"github.com/kilolock/kilolock/tenancy"
)

// TestControlSetQuota: Control validates a limit's target and its
// numbers before anything is stored, and audits each change.
func TestControlSetQuota(t *testing.T) {
	ctx := context.Background()
	c, _ := enginetest.NewControl(t, func(tb testing.TB) kilolock.Store { st, _ := enginetest.OpenSQLite(tb); return st })
	by := kilolock.Caller{Actor: "alice", From: "10.0.0.7:4242"}
	ws, err := c.CreateWorkspace(ctx, by, "acme", "", "alice")
	if err != nil {
		t.Fatal(err)
	}
	env, err := c.CreateEnvironment(ctx, by, ws.ID, "prod")
	if err != nil {
		t.Fatal(err)
	}
	other, err := c.CreateWorkspace(ctx, by, "other", "", "bob")
	if err != nil {
		t.Fatal(err)
	}
	tenant, _ := tenancy.TenantStateName(ws.ID, env.PublicID, "network")
	hard := func(n int64) *quota.Limit { return &quota.Limit{Hard: n} }
	target := func(scope kilolock.QuotaScope, t string) kilolock.QuotaTarget {
		return kilolock.QuotaTarget{Scope: scope, Target: t}
	}
	refused := []struct {
		name string
		ch   tenancy.QuotaChange
		code string // an InvalidError's, or "" for ErrNotFound
	}{
		{"unknown scope", tenancy.QuotaChange{QuotaTarget: target("galaxy", "x"), Limit: hard(1)}, "invalid_quota"},
		{"soft above hard", tenancy.QuotaChange{QuotaTarget: target(kilolock.QuotaState, "net"), Limit: &quota.Limit{Soft: 5, Hard: 4}}, "invalid_quota"},
		{"hard 0", tenancy.QuotaChange{QuotaTarget: target(kilolock.QuotaState, "net"), Limit: hard(0)}, "invalid_quota"},
		{"unlimited with a number", tenancy.QuotaChange{QuotaTarget: target(kilolock.QuotaState, "net"), Limit: &quota.Limit{Unlimited: true, Hard: 3}}, "invalid_quota"},
		{"a bad state name", tenancy.QuotaChange{QuotaTarget: target(kilolock.QuotaState, "a/b"), Limit: hard(1)}, "invalid_state_name"},
		{"a local name of the tenant form", tenancy.QuotaChange{QuotaTarget: target(kilolock.QuotaState, "ws_x"), Limit: hard(1)}, "invalid_state_name"},
		{"a tenant state of a missing environment", tenancy.QuotaChange{QuotaTarget: target(kilolock.QuotaState, ws.ID+".env_0000000000000000.net"), Limit: hard(1)}, ""},
		{"a tenant state of another workspace's environment", tenancy.QuotaChange{QuotaTarget: target(kilolock.QuotaState, other.ID+"."+env.PublicID+".net"), Limit: hard(1)}, ""},
		{"a missing environment", tenancy.QuotaChange{QuotaTarget: target(kilolock.QuotaEnvironment, "env_0000000000000000"), Limit: hard(1)}, ""},
		{"an environment of another workspace", tenancy.QuotaChange{QuotaTarget: target(kilolock.QuotaEnvironment, env.PublicID), Workspace: other.ID, Limit: hard(1)}, ""},
		{"a slug for an environment id", tenancy.QuotaChange{QuotaTarget: target(kilolock.QuotaEnvironment, "prod"), Limit: hard(1)}, ""},
		{"not an id", tenancy.QuotaChange{QuotaTarget: target(kilolock.QuotaEnvironment, "env_\x00"), Limit: hard(1)}, "invalid_id"},
		{"a missing workspace", tenancy.QuotaChange{QuotaTarget: target(kilolock.QuotaWorkspaceStates, "ws_0000000000000000"), Limit: hard(1)}, ""},
		{"a workspace beside a state", tenancy.QuotaChange{QuotaTarget: target(kilolock.QuotaState, "net"), Workspace: ws.ID, Limit: hard(1)}, "invalid_quota"},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			err := c.SetQuota(ctx, by, tt.ch)
			var ie *kilolock.InvalidError
			switch {
			case tt.code == "" && !errors.Is(err, kilolock.ErrNotFound):
				t.Errorf("SetQuota = %v, want ErrNotFound", err)
			case tt.code != "" && (!errors.As(err, &ie) || ie.Code != tt.code || ie.Hint == ""):
				t.Errorf("SetQuota = %v, want %s with a hint", err, tt.code)
			}
		})
	}
	if qs, _ := c.Quotas(ctx); len(qs) != 0 {
		t.Fatalf("refused changes stored %+v", qs)
	}

	for _, ch := range []tenancy.QuotaChange{
		{QuotaTarget: target(kilolock.QuotaState, "net"), Limit: &quota.Limit{Soft: 8, Hard: 10}},
		{QuotaTarget: target(kilolock.QuotaState, tenant), Limit: &quota.Limit{Unlimited: true}},
		{QuotaTarget: target(kilolock.QuotaEnvironment, env.PublicID), Workspace: ws.ID, Limit: hard(50)},
		{QuotaTarget: target(kilolock.QuotaWorkspaceStates, ws.ID), Limit: hard(20)},
		{QuotaTarget: target(kilolock.QuotaWorkspaceEnvironments, ws.ID), Limit: hard(100)},
		{QuotaTarget: target(kilolock.QuotaState, "net")},
	} {
		if err := c.SetQuota(ctx, by, ch); err != nil {
			t.Fatalf("SetQuota(%+v): %v", ch, err)
		}
	}
	qs, err := c.Quotas(ctx)
	if err != nil || len(qs) != 4 {
		t.Errorf("Quotas = %+v, %v; want 4 (net cleared)", qs, err)
	}
	entries, lines := enginetest.AuditLog(t, c)
	want := []string{
		"quota.set state net (soft 8, hard 10)",
		"quota.set state " + tenant + " (unlimited)",
		"quota.set environment " + env.PublicID + " (hard 50)",
		"quota.set workspace_states " + ws.ID + " (hard 20)",
		"quota.set workspace_environments " + ws.ID + " (hard 100)",
		"quota.clear state net",
	}
	got := lines[len(lines)-len(want):]
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("audit log ends with\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if e := entries[len(entries)-1]; e.Actor != "alice" || e.From != "10.0.0.7:4242" {
		t.Errorf("audit entry %+v, want alice from 10.0.0.7:4242", e)
	}
}

// TestEngineQuota: writes through the Engine are held to the server's
// default, warn above soft, and a refusal writes nothing, is kept for kl
// quota status and logged; a plan's admission decides the same way; a
// rollback is a commit like any other.
func TestEngineQuota(t *testing.T) {
	enginetest.EachStore(t, func(t *testing.T, name string, open func(testing.TB) kilolock.Store) bool {
		return t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			var logs bytes.Buffer
			e := kilolock.NewEngine(open(t), kilolock.Options{Logger: log.New(&logs), DefaultStateQuota: &quota.Limit{Soft: 2, Hard: 3}})
			const state = "limited"
			if _, err := e.Write(ctx, state, enginetest.TFState(t, true, 1, "lin", "a", "b"), kilolock.WriteOptions{}); err != nil {
				t.Fatal(err)
			}
			res, err := e.Write(ctx, state, enginetest.TFState(t, true, 2, "lin", "a", "b", "c"), kilolock.WriteOptions{Actor: "alice"})
			if err != nil || len(res.QuotaWarnings) != 1 || res.QuotaWarnings[0].Result != 3 || res.QuotaWarnings[0].From != kilolock.LimitFromServer {
				t.Fatalf("a write to exactly the hard limit = %+v, %v; want one warning at 3 from the server's default", res, err)
			}
			if !strings.Contains(logs.String(), "quota warning") {
				t.Errorf("no warning logged:\n%s", logs.String())
			}
			before, _ := e.History(ctx, state, kilolock.HistoryOptions{})

			_, err = e.Write(ctx, state, enginetest.TFState(t, true, 3, "lin", "a", "b", "c", "d"), kilolock.WriteOptions{Actor: "bob"})
			var qe *kilolock.QuotaError
			if !errors.As(err, &qe) || !errors.Is(err, kilolock.ErrQuotaExceeded) || qe.Refused.Result != 4 || qe.Refused.Limit.Hard != 3 {
				t.Fatalf("a write past the hard limit = %v, want a QuotaError at 4 of 3", err)
			}
			if !strings.Contains(qe.Hint(), "kl quota set --state "+state) || !strings.Contains(qe.Error(), "would exceed the hard limit of 3") {
				t.Errorf("refusal %q, hint %q", qe.Error(), qe.Hint())
			}
			after, _ := e.History(ctx, state, kilolock.HistoryOptions{})
			if len(after) != len(before) || after[0] != before[0] {
				t.Errorf("the refused write changed the history: %+v, was %+v", after, before)
			}
			st, err := e.Status(ctx, state)
			if err != nil || st.Quota == nil || st.Quota.LatestRefusal == nil || st.Quota.LatestRefusal.Actor != "bob" || st.Quota.LatestRefusal.Result != 4 {
				t.Errorf("status after the refusal = %+v, %v; want the refusal of bob's write at 4", st.Quota, err)
			}
			if st.Quota.LatestWarning == nil || st.Quota.LatestWarning.Version != 2 {
				t.Errorf("latest warning = %+v, want version 2's", st.Quota.LatestWarning)
			}
			if !strings.Contains(logs.String(), "commit refused by quota") {
				t.Errorf("no refusal logged:\n%s", logs.String())
			}

			// Admission: the same rule, nothing written.
			if st, err := e.QuotaStatus(ctx, state, 0); err != nil || st.Level != quota.Warn || st.Counts[0].Remaining != 0 {
				t.Errorf("QuotaStatus(0) = %+v, %v; want warn, 0 left", st, err)
			}
			if st, err := e.QuotaStatus(ctx, state, 1); !errors.As(err, &qe) || st == nil || st.Level != quota.Exceed || st.Counts[0].Result != 4 {
				t.Errorf("QuotaStatus(+1) = %+v, %v; want exceed at 4 and a QuotaError", st, err)
			}
			if !qe.Admission || !strings.HasPrefix(qe.Hint(), "applying this plan would be refused: state "+state+" may hold 3") {
				t.Errorf("an admission's refusal: %+v, hint %q", qe, qe.Hint())
			}
			if st, err := e.QuotaStatus(ctx, state, -1); err != nil || st.Level != quota.Within {
				t.Errorf("QuotaStatus(-1) = %+v, %v; want within", st, err)
			}
			var ie *kilolock.InvalidError
			if _, err := e.QuotaStatus(ctx, state, quota.MaxLimit+1); !errors.As(err, &ie) || ie.Code != "invalid_delta" {
				t.Errorf("a huge delta = %v, want invalid_delta", err)
			}
			if _, err := e.QuotaStatus(ctx, "a/b", 0); !errors.Is(err, kilolock.ErrInvalid) {
				t.Errorf("a bad name = %v, want ErrInvalid", err)
			}

			// A rollback to a larger version is refused as a write would be.
			if _, err := e.Write(ctx, state, enginetest.TFState(t, true, 3, "lin", "a"), kilolock.WriteOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := history.Rollback(ctx, e, state, kilolock.VersionRef{Kind: kilolock.RefNumber, N: 2}, history.RollbackOptions{Actor: "carol"}); err != nil {
				t.Errorf("a rollback to 3 managed: %v", err)
			}
			if _, err := e.Write(ctx, state, enginetest.TFState(t, true, 5, "lin", "a"), kilolock.WriteOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := tenancy.NewControl(e.Store().(tenancy.TenantStore)).SetQuota(ctx, kilolock.Caller{}, tenancy.QuotaChange{QuotaTarget: kilolock.QuotaTarget{Scope: kilolock.QuotaState, Target: state}, Limit: &quota.Limit{Hard: 2}}); err != nil {
				t.Fatal(err)
			}
			if _, err := history.Rollback(ctx, e, state, kilolock.VersionRef{Kind: kilolock.RefNumber, N: 2}, history.RollbackOptions{Actor: "carol"}); !errors.As(err, &qe) || qe.Refused.From != kilolock.LimitFromState {
				t.Errorf("a rollback past the state's own limit of 2 = %v, want a QuotaError", err)
			}
		})
	})
}

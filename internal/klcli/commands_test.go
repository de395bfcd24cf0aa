package klcli_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/client"
	"github.com/kilolock/kilolock/internal/klcli"
)

// TestGolden checks the human output of every command against one golden
// file, the same for every backend: the library and the server must agree.
func TestGolden(t *testing.T) {
	ctx := context.Background()
	cases := []goldenCase{
		{"status_prod", func(c *klcli.CLI) error { return c.Status(ctx, "prod") }},
		{"status_staging", func(c *klcli.CLI) error { return c.Status(ctx, "staging") }},
		{"status_empty", func(c *klcli.CLI) error { return c.Status(ctx, "empty") }},
		{"status_shared", func(c *klcli.CLI) error { return c.Status(ctx, "shared") }},
		{"history_prod", func(c *klcli.CLI) error { return c.History(ctx, "prod", kilolock.HistoryOptions{}) }},
		{"history_prod_page", func(c *klcli.CLI) error {
			return c.History(ctx, "prod", kilolock.HistoryOptions{Limit: 1, Before: 3})
		}},
		{"history_empty", func(c *klcli.CLI) error { return c.History(ctx, "empty", kilolock.HistoryOptions{}) }},
		{"states", func(c *klcli.CLI) error { return c.States(ctx) }},
		{"query_resources", func(c *klcli.CLI) error {
			return c.Query(ctx, "SELECT state, address, type, mode, index_key FROM resources ORDER BY state, address")
		}},
		{"query_versions", func(c *klcli.CLI) error {
			return c.Query(ctx, "SELECT number, serial, source, actor, lock_id, added, changed, removed FROM version_history WHERE state = 'prod' ORDER BY number")
		}},
		{"query_outputs", func(c *klcli.CLI) error {
			return c.Query(ctx, "SELECT state, name, sensitive, NULL AS missing, 1.5 AS ratio FROM outputs ORDER BY state, name")
		}},
		{"query_empty", func(c *klcli.CLI) error { return c.Query(ctx, "SELECT name FROM outputs WHERE name = 'nope'") }},
	}
	eachGolden(t, nil, cases)
}

func TestStatusJSON(t *testing.T) {
	forEachBackend(t, func(t *testing.T, h *harness) {
		out, err := h.run(t, true, func(c *klcli.CLI) error { return c.Status(context.Background(), "prod") })
		if err != nil {
			t.Fatal(err)
		}
		var s kilolock.Status
		if err := json.Unmarshal([]byte(out), &s); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if s.Name != "prod" || s.Current != 3 || s.Serial != 3 || s.Version == nil || s.Version.Number != 3 ||
			s.Instances != 3 || len(s.Locks) != 1 || s.Locks[0].Info.Who != "carol" || s.LockMode != kilolock.LockExclusive {
			t.Errorf("status = %s", out)
		}
		if len(s.Types) != 1 || s.Types[0] != (kilolock.TypeCount{Type: "terraform_data", Count: 3}) {
			t.Errorf("types = %+v", s.Types)
		}
	})
}

func TestHistoryJSON(t *testing.T) {
	forEachBackend(t, func(t *testing.T, h *harness) {
		out, err := h.run(t, true, func(c *klcli.CLI) error {
			return c.History(context.Background(), "prod", kilolock.HistoryOptions{Limit: 2})
		})
		if err != nil {
			t.Fatal(err)
		}
		var got klcli.HistoryJSON
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if got.State != "prod" || got.Current != 3 || len(got.Versions) != 2 {
			t.Fatalf("history = %s", out)
		}
		v3, v2 := got.Versions[0], got.Versions[1]
		if v3.Number != 3 || v3.Source != kilolock.SourcePush || v3.Actor != "ci" || v3.Removed != 1 {
			t.Errorf("version 3 = %+v", v3)
		}
		if v2.Number != 2 || v2.Source != kilolock.SourceApply || v2.Actor != "bob" || v2.LockID != "lock-2" || v2.Added != 1 || v2.Changed != 1 {
			t.Errorf("version 2 = %+v", v2)
		}
	})
}

func TestStatesJSON(t *testing.T) {
	forEachBackend(t, func(t *testing.T, h *harness) {
		out, err := h.run(t, true, func(c *klcli.CLI) error { return c.States(context.Background()) })
		if err != nil {
			t.Fatal(err)
		}
		var got klcli.StatesJSON
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		var names []string
		for _, s := range got.States {
			names = append(names, s.Name)
		}
		if strings.Join(names, " ") != "empty prod shared staging" {
			t.Errorf("states = %v", names)
		}
	})
}

func TestQueryJSON(t *testing.T) {
	forEachBackend(t, func(t *testing.T, h *harness) {
		out, err := h.run(t, true, func(c *klcli.CLI) error {
			return c.Query(context.Background(), "SELECT state AS name, max(number) AS current_version FROM version_history GROUP BY state ORDER BY state")
		})
		if err != nil {
			t.Fatal(err)
		}
		want := `{
  "columns": [
    "name",
    "current_version"
  ],
  "rows": [
    [
      "prod",
      3
    ],
    [
      "staging",
      1
    ]
  ]
}
`
		if out != want {
			t.Errorf("got\n%s", out)
		}
	})
}

func TestPull(t *testing.T) {
	ctx := context.Background()
	forEachBackend(t, func(t *testing.T, h *harness) {
		for _, tc := range []struct {
			state   string
			version string
			doc     string
		}{
			{"prod", "@latest", "prod-3"},
			{"prod", "@1", "prod-1"},
			{"prod", "@2", "prod-2"},
			{"prod", "@-1", "prod-2"},
			{"staging", "@latest", "staging-1"},
		} {
			ref, err := kilolock.ParseVersionRef(tc.version)
			if err != nil {
				t.Fatal(err)
			}
			out, err := h.run(t, false, func(c *klcli.CLI) error { return c.Pull(ctx, tc.state, ref) })
			if err != nil {
				t.Fatalf("pull %s %s: %v", tc.state, tc.version, err)
			}
			if want := string(seedDoc(t, tc.doc)); out != want {
				t.Errorf("pull %s %s: not the document written (%s)\n%s", tc.state, tc.version, tc.doc, out)
			}
		}
	})
}

// TestErrors checks that failures map to the documented exit codes the
// same way on every backend, and carry a hint.
func TestErrors(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name string
		cmd  func(*klcli.CLI) error
		code int
		is   error
	}{
		{"status of a missing state", func(c *klcli.CLI) error { return c.Status(ctx, "nope") }, klcli.ExitNotFound, kilolock.ErrNotFound},
		{"history of a missing state", func(c *klcli.CLI) error { return c.History(ctx, "nope", kilolock.HistoryOptions{}) }, klcli.ExitNotFound, kilolock.ErrNotFound},
		{"config of a missing state", func(c *klcli.CLI) error {
			return c.ConfigureState(ctx, "nope", client.StateConfig{AllowLineageChange: ptr(true)})
		}, klcli.ExitNotFound, kilolock.ErrNotFound},
		{"settings of a missing state", func(c *klcli.CLI) error { return c.ConfigureState(ctx, "nope", client.StateConfig{}) }, klcli.ExitNotFound, kilolock.ErrNotFound},
		{"lock mode of a locked state", func(c *klcli.CLI) error {
			return c.ConfigureState(ctx, "prod", client.StateConfig{ExclusiveLocks: ptr(false)})
		}, klcli.ExitConflict, kilolock.ErrConflict},
		{"conflicts of a missing state", func(c *klcli.CLI) error { return c.Conflicts(ctx, "nope", 0) }, klcli.ExitNotFound, kilolock.ErrNotFound},
		{"conflicts with a negative limit", func(c *klcli.CLI) error { return c.Conflicts(ctx, "prod", -1) }, klcli.ExitUsage, nil},
		{"pull of a missing version", func(c *klcli.CLI) error {
			return c.Pull(ctx, "prod", kilolock.VersionRef{Kind: kilolock.RefNumber, N: 99})
		}, klcli.ExitNotFound, kilolock.ErrNotFound},
		{"pull of a state without versions", func(c *klcli.CLI) error { return c.Pull(ctx, "empty", kilolock.Latest) }, klcli.ExitNotFound, kilolock.ErrNotFound},
		{"invalid state name", func(c *klcli.CLI) error { return c.Status(ctx, "bad name!") }, klcli.ExitUsage, kilolock.ErrInvalid},
		{"negative limit", func(c *klcli.CLI) error { return c.History(ctx, "prod", kilolock.HistoryOptions{Limit: -1}) }, klcli.ExitUsage, nil},
		{"empty query", func(c *klcli.CLI) error { return c.Query(ctx, "  ") }, klcli.ExitUsage, nil},
		{"bad SQL", func(c *klcli.CLI) error { return c.Query(ctx, "SELEKT 1") }, -1, nil},
	}
	forEachBackend(t, func(t *testing.T, h *harness) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				out, err := h.run(t, false, tc.cmd)
				if err == nil {
					t.Fatalf("no error; output:\n%s", out)
				}
				if out != "" {
					t.Errorf("output on error: %q", out)
				}
				if got := klcli.ExitCode(err); tc.code >= 0 && got != tc.code {
					t.Errorf("exit code %d, want %d (err: %v)", got, tc.code, err)
				} else if got == klcli.ExitOK {
					t.Errorf("exit code 0 for %v", err)
				}
				if tc.is != nil && !errors.Is(err, tc.is) {
					t.Errorf("error %v does not match %v", err, tc.is)
				}
				var report strings.Builder
				klcli.Report(&report, err)
				t.Logf("%s", report.String())
				if tc.is != nil && !strings.Contains(report.String(), "hint: ") {
					t.Errorf("no hint:\n%s", report.String())
				}
			})
		}
	})
}

func TestStateConfig(t *testing.T) {
	ctx := context.Background()
	forEachBackend(t, func(t *testing.T, h *harness) {
		other := strings.Replace(string(seedDoc(t, "staging-1")), `"serial":1,"lineage":"1e2d3c4b`, `"serial":2,"lineage":"ffffffff`, 1)
		if _, err := h.engine.Write(ctx, "staging", []byte(other), kilolock.WriteOptions{}); !errors.Is(err, kilolock.ErrConflict) {
			t.Fatalf("write with another lineage before config: %v, want a conflict", err)
		}

		out, err := h.run(t, false, func(c *klcli.CLI) error {
			return c.ConfigureState(ctx, "staging", client.StateConfig{AllowLineageChange: ptr(true)})
		})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, "lineage change allowed") {
			t.Errorf("output %q", out)
		}
		s, err := h.backend.API().Status(ctx, "staging")
		if err != nil || !s.AllowLineageChange {
			t.Fatalf("status after allowing: %+v, %v", s, err)
		}
		if _, err := h.engine.Write(ctx, "staging", []byte(other), kilolock.WriteOptions{}); err != nil {
			t.Fatalf("write with another lineage once allowed: %v", err)
		}

		out, err = h.run(t, true, func(c *klcli.CLI) error {
			return c.ConfigureState(ctx, "staging", client.StateConfig{AllowLineageChange: ptr(false)})
		})
		if err != nil {
			t.Fatal(err)
		}
		if want := "{\n  \"ok\": true,\n  \"state\": \"staging\",\n  \"allow_lineage_change\": false\n}\n"; out != want {
			t.Errorf("json %q, want %q", out, want)
		}
		if s, err := h.backend.API().Status(ctx, "staging"); err != nil || s.AllowLineageChange {
			t.Fatalf("status after refusing again: %+v, %v", s, err)
		}
	})
}

func TestVersion(t *testing.T) {
	kl := client.VersionInfo{Version: "v1.2.3", Commit: "deadbee", Date: "2026-11-30T12:00:00Z", GoVersion: "go1.26.0"}
	forEachBackend(t, func(t *testing.T, h *harness) {
		var out strings.Builder
		c := &klcli.CLI{Conn: h.raw, Out: &out, JSON: true}
		if err := c.Version(context.Background(), kl); err != nil {
			t.Fatal(err)
		}
		var got klcli.VersionJSON
		if err := json.Unmarshal([]byte(out.String()), &got); err != nil {
			t.Fatal(err)
		}
		if got.Client != kl {
			t.Errorf("client = %+v", got.Client)
		}
		switch {
		case h.url == "" && got.Server != nil:
			t.Errorf("in-process, server = %+v", got.Server)
		case h.url != "" && (got.Server == nil || got.Server.Version != "v9.9.9-test" || got.Server.Commit != "abc1234"):
			t.Errorf("server = %+v", got.Server)
		}
	})

	// Without any backend (kl version without --server): the client only.
	var out strings.Builder
	if err := (&klcli.CLI{Out: &out}).Version(context.Background(), kl); err != nil {
		t.Fatal(err)
	}
	golden(t, "version", out.String())
}

func ptr[T any](v T) *T { return &v }

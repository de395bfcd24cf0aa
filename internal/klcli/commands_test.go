package klcli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/applyrun"
	"github.com/kilolock/kilolock/client"
	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/history"
	"github.com/kilolock/kilolock/httpbackend"
	"github.com/kilolock/kilolock/internal/klcli"
	"github.com/kilolock/kilolock/internal/testpg"
	"github.com/kilolock/kilolock/inventory"
	"github.com/kilolock/kilolock/reserve"
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
		var got client.StateList
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

// TestClientSideEncryptionShown: kl status and kl states say that a state
// is client-side encrypted and by which key providers (type and name, never
// the meta's material), kl history that its version is, and kl state config --require-client-encryption
// makes the state refuse plaintext writes, on every backend.
func TestClientSideEncryptionShown(t *testing.T) {
	ctx := context.Background()
	const salt = "eyJzYWx0IjoiU0VDUkVUX1NBTFQifQ==" // {"salt":"SECRET_SALT"}
	blob := []byte(`{"serial":1,"lineage":"enc-lineage","meta":{"key_provider.pbkdf2.team":"` + salt + `","ops-kms\u001b]0;x":"e30="},"encrypted_data":"c2VjcmV0","encryption_version":"v0"}`)
	forEachBackend(t, func(t *testing.T, h *harness) {
		if _, err := h.engine.Write(ctx, "enc", blob, kilolock.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		out, err := h.run(t, false, func(c *klcli.CLI) error {
			return c.ConfigureState(ctx, "enc", client.StateConfig{RequireClientEncryption: ptr(true)})
		})
		if err != nil || !strings.Contains(out, "client-side encryption required") {
			t.Fatalf("state config = %q, %v", out, err)
		}
		status, err := h.run(t, false, func(c *klcli.CLI) error { return c.Status(ctx, "enc") })
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"serial 1", "encryption:", "client-side (OpenTofu v0), key providers pbkdf2.team, alias ops-kms\uFFFD]0;x", "required by the state"} {
			if !strings.Contains(status, want) {
				t.Errorf("kl status lacks %q:\n%s", want, status)
			}
		}
		history, err := h.run(t, false, func(c *klcli.CLI) error { return c.History(ctx, "enc", kilolock.HistoryOptions{}) })
		if err != nil || !strings.Contains(history, "encrypted") || strings.Contains(history, "+0 ~0") {
			t.Errorf("kl history = %v\n%s", err, history)
		}
		states, err := h.run(t, false, func(c *klcli.CLI) error { return c.States(ctx) })
		if err != nil || !strings.Contains(states, "pbkdf2.team, alias ops-kms\uFFFD]0;x, required") {
			t.Errorf("kl states = %v\n%s", err, states)
		}
		js, err := h.run(t, true, func(c *klcli.CLI) error { return c.Status(ctx, "enc") })
		if err != nil {
			t.Fatal(err)
		}
		var s kilolock.Status
		if err := json.Unmarshal([]byte(js), &s); err != nil || s.ClientEncryption == nil || len(s.ClientEncryption.KeyProviders) != 2 ||
			s.ClientEncryption.KeyProviders[0] != (kilolock.KeyProvider{Type: "pbkdf2", Name: "team"}) || !s.RequireClientEncryption {
			t.Errorf("kl status --json = %+v, %v\n%s", s.ClientEncryption, err, js)
		}
		for _, out := range []string{status, states, js} {
			if strings.Contains(out, "SECRET_SALT") || strings.Contains(out, salt) || strings.Contains(out, "\x1b") {
				t.Errorf("kl shows the meta's material or a raw escape:\n%s", out)
			}
		}

		plain := seedDoc(t, "prod-1")
		_, err = h.engine.Write(ctx, "enc", plain, kilolock.WriteOptions{})
		var ce *kilolock.ConflictError
		if !errors.As(err, &ce) || ce.Reason != kilolock.ReasonClientEncryptionRequired {
			t.Errorf("plaintext write = %v, want client_encryption_required", err)
		}
		if _, err := h.run(t, false, func(c *klcli.CLI) error {
			return c.ConfigureState(ctx, "enc", client.StateConfig{RequireClientEncryption: ptr(false)})
		}); err != nil {
			t.Fatal(err)
		}
		if st, err := h.backend.API().Status(ctx, "enc"); err != nil || st.RequireClientEncryption {
			t.Errorf("after --require-client-encryption=false: %+v, %v", st, err)
		}
	})
}

// writes are statements kl query must refuse, leaving the store as it was.
var writes = []string{
	"DELETE FROM states",
	"INSERT INTO states (name, created_at) VALUES ('intruder', '2026-01-01T00:00:00.000000Z')",
	"UPDATE states SET lineage = 'x'",
	"DROP TABLE locks",
}

// checkWritesRefused runs every write through the CLI on b and checks that
// each fails as read-only with a clear message and changes nothing.
func checkWritesRefused(t *testing.T, b *klcli.Conn) {
	ctx := context.Background()
	before, err := states(b)
	if err != nil {
		t.Fatal(err)
	}
	hist, err := versions(b, "prod")
	if err != nil {
		t.Fatal(err)
	}
	for _, sql := range writes {
		t.Run(strings.Fields(sql)[0], func(t *testing.T) {
			var out strings.Builder
			err := (&klcli.CLI{Conn: b, Out: &out}).Query(ctx, sql)
			if !errors.Is(err, kilolock.ErrReadOnly) {
				t.Fatalf("%s: err = %v, want ErrReadOnly", sql, err)
			}
			if out.Len() > 0 {
				t.Errorf("output: %q", out.String())
			}
			if code := klcli.ExitCode(err); code != klcli.ExitError {
				t.Errorf("exit code %d, want %d", code, klcli.ExitError)
			}
			var report strings.Builder
			klcli.Report(&report, err)
			t.Logf("%s", report.String())
			if msg := report.String(); !strings.Contains(msg, "nothing was changed") || !strings.Contains(msg, "hint: ") {
				t.Errorf("report:\n%s", msg)
			}
		})
	}
	after, err := states(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Fatalf("states: %d before, %d after", len(before), len(after))
	}
	for i := range before {
		if before[i].Name != after[i].Name || before[i].Lineage != after[i].Lineage || before[i].Current != after[i].Current || len(before[i].Locks) != len(after[i].Locks) {
			t.Errorf("state changed: %+v -> %+v", before[i], after[i])
		}
	}
	if h2, err := versions(b, "prod"); err != nil || len(h2) != len(hist) {
		t.Errorf("history of prod: %d versions before, %d after (%v)", len(hist), len(h2), err)
	}
}

func TestQueryRefusesWrites(t *testing.T) {
	forEachBackend(t, func(t *testing.T, h *harness) {
		checkWritesRefused(t, h.raw)
	})
}

// TestQueryRefusesWritesPostgres runs the in-process refusal on PostgreSQL
// (a throwaway cluster, or KL_TEST_DATABASE_URL).
func TestQueryRefusesWritesPostgres(t *testing.T) {
	e := seededEngine(t, testpg.URL(t))
	checkWritesRefused(t, klcli.NewDatabaseConn(e, klcli.HTTPOptions{}))
}

// states lists b's states.
func states(b *klcli.Conn) ([]kilolock.State, error) {
	l, err := b.API().States(context.Background())
	if err != nil {
		return nil, err
	}
	return l.States, nil
}

// versions lists the newest versions of state name on b.
func versions(b *klcli.Conn, name string) ([]kilolock.Version, error) {
	l, err := b.API().History(context.Background(), name, client.HistoryOptions{})
	if err != nil {
		return nil, err
	}
	return l.Versions, nil
}

// TestSearch: kl search answers the same through a server and on the
// database: hits with state, version, address and matched paths, pages
// read until --limit, bad filters refused as invalid input, duplicates.
func TestSearch(t *testing.T) {
	forEachBackend(t, func(t *testing.T, h *harness) {
		ctx := context.Background()
		run := func(json bool, f func(*klcli.CLI) error) (string, error) {
			var out bytes.Buffer
			err := f(&klcli.CLI{Conn: h.raw, Out: &out, JSON: json})
			return out.String(), err
		}
		out, err := run(false, func(c *klcli.CLI) error {
			return c.Search(ctx, inventory.Filters{Type: "terraform_data", Attr: []string{"input.value=v2"}}, 100)
		})
		if err != nil {
			t.Fatal(err)
		}
		want := "STATE  VERSION  ADDRESS           MATCHED\nprod   3        terraform_data.a  input.value\n(1 hit)\n"
		if out != want {
			t.Errorf("kl search --type terraform_data --attr input.value=v2:\n%s\nwant:\n%s", out, want)
		}

		out, err = run(true, func(c *klcli.CLI) error {
			return c.Search(ctx, inventory.Filters{Address: "terraform_data.c[0]"}, 100)
		})
		var page inventory.Page
		if err != nil || json.Unmarshal([]byte(out), &page) != nil || len(page.Hits) != 1 || page.Hits[0].State != "prod" || page.Hits[0].Version != 3 {
			t.Errorf("kl search --address terraform_data.c[0] --json: %v\n%s", err, out)
		}

		// Pages: --limit 2 of 4 instances says more follow; --limit 3 reads
		// pages of 3 at most; the JSON's next resumes.
		out, _ = run(false, func(c *klcli.CLI) error { return c.Search(ctx, inventory.Filters{}, 2) })
		if !strings.Contains(out, "(2 hits; more follow") {
			t.Errorf("kl search --limit 2:\n%s", out)
		}
		out, _ = run(false, func(c *klcli.CLI) error { return c.Search(ctx, inventory.Filters{Text: "5B0D7F3C"}, 100) })
		if strings.Count(out, "prod ") != 3 || !strings.Contains(out, "(3 hits)") {
			t.Errorf("kl search --text 5B0D7F3C:\n%s", out)
		}

		_, err = run(false, func(c *klcli.CLI) error { return c.Search(ctx, inventory.Filters{Attr: []string{"nope"}}, 100) })
		var report strings.Builder
		klcli.Report(&report, err)
		if !errors.Is(err, kilolock.ErrInvalid) || !strings.Contains(report.String(), "PATH=VALUE") || !strings.Contains(report.String(), "hint: ") {
			t.Errorf("kl search --attr nope: %v\n%s", err, report.String())
		}

		out, err = run(false, func(c *klcli.CLI) error { return c.Duplicates(ctx, "") })
		if err != nil || !strings.HasSuffix(out, "(0 objects managed by more than one state)\n") {
			t.Errorf("kl search --duplicates: %v\n%s", err, out)
		}
	})
}

// TestStatusRunsAndAbort: kl status lists a run in flight with its
// reservations and lease left; kl apply abort ends it; aborting it again,
// or --latest with none in flight, is an error — through a server and on
// the database alike.
func TestStatusRunsAndAbort(t *testing.T) {
	forEachBackend(t, func(t *testing.T, h *harness) {
		ctx := t.Context()
		run, err := applyrun.StartRun(ctx, h.engine, "staging", kilolock.RunRequest{
			Actor: "alice@laptop", Info: "kl apply --orchestrated -f slow_a.tf", Lease: 10 * time.Minute,
			Reservations: []kilolock.Reservation{
				{Pattern: reserve.MustParse("time_sleep.slow_a"), Mode: reserve.Write},
				{Pattern: reserve.MustParse("terraform_data.base"), Mode: reserve.Read},
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, bs, err := applyrun.AcquireRun(ctx, h.engine, run.ID); err != nil || len(bs) > 0 {
			t.Fatalf("acquire: %v %v", bs, err)
		}
		var out bytes.Buffer
		cli := &klcli.CLI{Conn: h.raw, Out: &out}
		if err := cli.Status(ctx, "staging"); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"APPLY RUN", run.ID, "alice@laptop", "active", "2 (1 write, 1 read)", "time_sleep.slow_a", "terraform_data.base"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("kl status does not show %q:\n%s", want, out.String())
			}
		}
		if !strings.Contains(out.String(), "  9m5") && !strings.Contains(out.String(), "  10m0s") {
			t.Errorf("kl status does not show the lease left (about 10m):\n%s", out.String())
		}

		out.Reset()
		if err := cli.Abort(ctx, "", "staging"); err != nil {
			t.Fatalf("abort --latest: %v", err)
		}
		if !strings.Contains(out.String(), "aborted apply run "+run.ID) {
			t.Errorf("kl apply abort says:\n%s", out.String())
		}
		got, err := applyrun.Run(ctx, h.engine, run.ID)
		if err != nil || got.Status != kilolock.RunAborted {
			t.Fatalf("the run after abort: %+v, %v", got, err)
		}
		err = cli.Abort(ctx, run.ID, "")
		if !errors.As(err, new(*kilolock.RunEndedError)) || klcli.ExitCode(err) != klcli.ExitConflict {
			t.Errorf("aborting an aborted run: %v (exit %d), want a RunEndedError (exit 4)", err, klcli.ExitCode(err))
		}
		err = cli.Abort(ctx, "", "staging")
		if klcli.ExitCode(err) != klcli.ExitNotFound || !strings.Contains(err.Error(), "no apply run in flight") {
			t.Errorf("--latest with none in flight: %v (exit %d), want exit 3", err, klcli.ExitCode(err))
		}
	})
}

// seedApp writes prod's three seed versions to state "app", unlocked, so
// that it can be rolled back and edited.
func seedApp(t *testing.T, h *harness) {
	t.Helper()
	for _, doc := range []string{"prod-1", "prod-2", "prod-3"} {
		if _, err := h.engine.Write(context.Background(), "app", seedDoc(t, doc), kilolock.WriteOptions{Actor: "alice"}); err != nil {
			t.Fatal(err)
		}
	}
}

func ref(t testing.TB, s string) kilolock.VersionRef {
	t.Helper()
	r, err := kilolock.ParseVersionRef(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestStateOpsGolden checks the human output of history --address, diff
// and the rollback dry run (warning included) on every backend.
func TestStateOpsGolden(t *testing.T) {
	ctx := context.Background()
	cases := []goldenCase{
		{"history_address", func(c *klcli.CLI) error { return c.AddressHistory(ctx, "app", "terraform_data.a") }},
		{"history_address_resource", func(c *klcli.CLI) error { return c.AddressHistory(ctx, "app", "terraform_data.c") }},
		{"diff_app", func(c *klcli.CLI) error { return c.Diff(ctx, "app", ref(t, "@1"), ref(t, "@3")) }},
		{"rollback_dry_run", func(c *klcli.CLI) error {
			return c.Rollback(ctx, "app", client.RollbackRequest{To: "@1"}, false)
		}},
		{"rollback_resource_dry_run", func(c *klcli.CLI) error {
			return c.Rollback(ctx, "app", client.RollbackRequest{To: "@1", Address: "terraform_data.a"}, false)
		}},
		{"show_instance", func(c *klcli.CLI) error { return c.Show(ctx, "app", ref(t, "@3"), "terraform_data.a") }},
		{"show_app", func(c *klcli.CLI) error { return c.Show(ctx, "app", kilolock.Latest, "") }},
	}
	eachGolden(t, func(t *testing.T, h *harness) { seedApp(t, h) }, cases)
}

func TestRollbackApply(t *testing.T) {
	ctx := context.Background()
	forEachBackend(t, func(t *testing.T, h *harness) {
		seedApp(t, h)
		_, err := h.run(t, false, func(c *klcli.CLI) error {
			return c.Rollback(ctx, "app", client.RollbackRequest{To: "@1", Apply: true}, false)
		})
		var ue *klcli.UsageError
		if !errors.As(err, &ue) || klcli.ExitCode(err) != klcli.ExitUsage {
			t.Fatalf("--apply without --yes = %v", err)
		}
		out, err := h.run(t, false, func(c *klcli.CLI) error {
			return c.Rollback(ctx, "app", client.RollbackRequest{To: "@1", Apply: true}, true)
		})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, history.RollbackWarning[:40]) || !strings.Contains(out, "new version @4 (serial 4)") {
			t.Errorf("rollback output:\n%s", out)
		}
		// The new version has @1's content; @3 stays in the history.
		d, err := h.backend.API().Diff(ctx, "app", "@1", "@latest")
		if err != nil || !d.Empty() || d.To.Source != kilolock.SourceRollback || d.To.Serial != 4 {
			t.Errorf("diff @1 @latest = %+v, %v", d, err)
		}
		if _, err := h.backend.API().Show(ctx, "app", "@3"); err != nil {
			t.Errorf("@3 after rollback: %v", err)
		}
	})
}

func TestStateOpsErrors(t *testing.T) {
	ctx := context.Background()
	forEachBackend(t, func(t *testing.T, h *harness) {
		seedApp(t, h)
		for _, tc := range []struct {
			name string
			cmd  func(*klcli.CLI) error
			code int
			msg  string
		}{
			{"missing version", func(c *klcli.CLI) error { return c.Show(ctx, "app", ref(t, "@9"), "") }, klcli.ExitNotFound, "@1…@3"},
			{"missing serial", func(c *klcli.CLI) error { return c.Diff(ctx, "app", ref(t, "serial:42"), kilolock.Latest) }, klcli.ExitNotFound, "serials 1…3"},
			{"missing state", func(c *klcli.CLI) error { return c.Diff(ctx, "nope", ref(t, "@1"), kilolock.Latest) }, klcli.ExitNotFound, "nope"},
			{"never held", func(c *klcli.CLI) error { return c.AddressHistory(ctx, "app", "terraform_data.zz") }, klcli.ExitNotFound, "terraform_data.zz"},
			{"locked rollback", func(c *klcli.CLI) error {
				return c.Rollback(ctx, "prod", client.RollbackRequest{To: "@1"}, false)
			}, klcli.ExitConflict, "carol"},
			{"locked rm", func(c *klcli.CLI) error { return c.StateRm(ctx, "prod", []string{"terraform_data.a"}, false) }, klcli.ExitConflict, "carol"},
			{"mv onto taken", func(c *klcli.CLI) error {
				return c.StateMv(ctx, "app", "terraform_data.a", "terraform_data.b", false)
			}, klcli.ExitUsage, "terraform_data.b"},
			{"rm unknown", func(c *klcli.CLI) error { return c.StateRm(ctx, "app", []string{"x.y"}, false) }, klcli.ExitUsage, "x.y"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, err := h.run(t, false, tc.cmd)
				if klcli.ExitCode(err) != tc.code || err == nil || !strings.Contains(err.Error(), tc.msg) {
					t.Errorf("err = %v (exit %d), want exit %d naming %q", err, klcli.ExitCode(err), tc.code, tc.msg)
				}
			})
		}
	})
}

func TestStateRmMv(t *testing.T) {
	ctx := context.Background()
	forEachBackend(t, func(t *testing.T, h *harness) {
		seedApp(t, h)
		list := func() string {
			out, err := h.run(t, false, func(c *klcli.CLI) error { return c.StateList(ctx, "app", "") })
			if err != nil {
				t.Fatal(err)
			}
			return out
		}
		before := list()
		out, err := h.run(t, false, func(c *klcli.CLI) error { return c.StateRm(ctx, "app", []string{"terraform_data.b"}, true) })
		if err != nil || !strings.Contains(out, "- terraform_data.b") || !strings.Contains(out, "Dry run") || list() != before {
			t.Fatalf("rm --dry-run: %v\n%s", err, out)
		}
		if _, err := h.run(t, false, func(c *klcli.CLI) error { return c.StateRm(ctx, "app", []string{"terraform_data.b"}, false) }); err != nil {
			t.Fatal(err)
		}
		if got := list(); got != "terraform_data.a\nterraform_data.c[0]\n" {
			t.Errorf("after rm: %q", got)
		}
		out, err = h.run(t, false, func(c *klcli.CLI) error {
			return c.StateMv(ctx, "app", "terraform_data.a", "module.demo.terraform_data.a", false)
		})
		if err != nil || !strings.Contains(out, "(source state-op)") {
			t.Fatalf("mv: %v\n%s", err, out)
		}
		if got := list(); got != "terraform_data.c[0]\nmodule.demo.terraform_data.a\n" {
			t.Errorf("after mv: %q", got)
		}
		out, err = h.run(t, true, func(c *klcli.CLI) error { return c.StateList(ctx, "app", "module.demo") })
		var js struct{ Instances []history.InstanceSummary }
		if err != nil || json.Unmarshal([]byte(out), &js) != nil || len(js.Instances) != 1 || js.Instances[0].Module != "module.demo" {
			t.Errorf("list --json module.demo: %v %s", err, out)
		}
		vs, err := versions(h.backend, "app")
		if err != nil || vs[0].Source != kilolock.SourceStateOp || vs[0].Actor != "kl" {
			t.Errorf("latest version = %+v, %v", vs, err)
		}
	})
}

func TestExportImport(t *testing.T) {
	ctx := context.Background()
	forEachBackend(t, func(t *testing.T, h *harness) {
		seedApp(t, h)
		var buf bytes.Buffer
		c := h.cli(&buf, false)
		if err := c.Export(ctx, "app", ref(t, "@2")); err != nil {
			t.Fatal(err)
		}
		g, err := graph.Parse(buf.Bytes())
		if err != nil || g.Serial != 2 {
			t.Fatalf("export @2: serial %v, %v", g, err)
		}
		out, err := h.run(t, false, func(c *klcli.CLI) error { return c.Import(ctx, "copy", "app-2.tfstate", buf.Bytes(), false) })
		if err != nil || !strings.Contains(out, "as version @1 (serial 2)") {
			t.Fatalf("import: %v\n%s", err, out)
		}
		d, err := h.backend.API().Diff(ctx, "copy", "@latest", "@latest")
		if err != nil || d.To.Source != kilolock.SourceImport {
			t.Errorf("copy = %+v, %v", d, err)
		}
		// Onto another lineage: refused unless forced.
		_, err = h.run(t, false, func(c *klcli.CLI) error { return c.Import(ctx, "staging", "app-2.tfstate", buf.Bytes(), false) })
		if klcli.ExitCode(err) != klcli.ExitConflict {
			t.Errorf("import onto another lineage = %v", err)
		}
		if _, err := h.run(t, false, func(c *klcli.CLI) error { return c.Import(ctx, "staging", "app-2.tfstate", buf.Bytes(), true) }); err != nil {
			t.Errorf("forced import: %v", err)
		}
	})
}

// TestRollbackEncryptedState: kl rolls a client-side encrypted state back
// on every backend, saying it cannot list what changes.
func TestRollbackEncryptedState(t *testing.T) {
	ctx := context.Background()
	blob := []byte(`{"serial":9,"lineage":"7d1c7a0e-2f6a-4b8e-9c3d-5e4f3a2b1c0d","meta":{"key_provider.pbkdf2.k":"e30="},"encrypted_data":"c2VjcmV0","encryption_version":"v0"}` + "\n")
	forEachBackend(t, func(t *testing.T, h *harness) {
		seedApp(t, h)
		if _, err := h.engine.Write(ctx, "app", blob, kilolock.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		out, err := h.run(t, false, func(c *klcli.CLI) error {
			return c.Rollback(ctx, "app", client.RollbackRequest{To: "@3", Apply: true}, true)
		})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, "client-side encrypted") || !strings.Contains(out, "new version @5") || !strings.Contains(out, history.RollbackWarning[:40]) {
			t.Errorf("rollback output:\n%s", out)
		}
		d, err := h.backend.API().Diff(ctx, "app", "@3", "@latest")
		if err != nil || !d.Empty() || d.To.Source != kilolock.SourceRollback {
			t.Errorf("diff @3 @latest = %+v, %v; want @3's content in a rollback version", d, err)
		}
	})
}

// TestMoveStates: kl state mv --to-state, split and merge, through kld and
// in-process: what moved, the versions, and what each configuration must
// do; --json for scripts; refusals as errors.
func TestMoveStates(t *testing.T) {
	ctx := context.Background()
	forEachBackend(t, func(t *testing.T, h *harness) {
		seedApp(t, h)
		run := func(json bool, req httpbackend.MoveRequest) (string, error) {
			t.Helper()
			c := h.cli(nil, json)
			c.Conn = h.raw
			var out strings.Builder
			c.Out = &out
			err := c.MoveStates(ctx, req)
			return out.String(), err
		}
		out, err := run(false, httpbackend.MoveRequest{Operation: history.OperationSplit, From: "app", To: "app-net", Addresses: []history.MovePair{{From: "terraform_data.a"}}, DryRun: true})
		if err != nil || !strings.Contains(out, "Would move 1 instance(s) from app to app-net") || !strings.Contains(out, "Dry run: nothing was changed. To do it: run the same command without --dry-run.") {
			t.Fatalf("split dry run: %v\n%s", err, out)
		}
		out, err = run(false, httpbackend.MoveRequest{Operation: history.OperationSplit, From: "app", To: "app-net", Addresses: []history.MovePair{{From: "terraform_data.a"}}})
		if err != nil || !strings.Contains(out, "Written in one transaction: app @4 (source move: 1 instance(s) to app-net @1)") || !strings.Contains(out, "try to create the objects again") {
			t.Fatalf("split: %v\n%s", err, out)
		}
		out, err = run(true, httpbackend.MoveRequest{From: "app-net", To: "app", Addresses: []history.MovePair{{From: "terraform_data.a", To: "terraform_data.a2"}}})
		var res history.MoveResult
		if err != nil || json.Unmarshal([]byte(out), &res) != nil || res.Versions == nil || res.Moved[0].To != "terraform_data.a2" {
			t.Fatalf("mv --json: %v\n%s", err, out)
		}
		_, err = run(false, httpbackend.MoveRequest{From: "app", To: "app-net", Addresses: []history.MovePair{{From: "terraform_data.nope"}}})
		if err == nil || !errors.Is(err, kilolock.ErrInvalid) || klcli.ExitCode(err) != klcli.ExitUsage {
			t.Errorf("unknown address: %v", err)
		}
		// kl history names the other side of each move.
		c := h.cli(nil, false)
		c.Conn = h.raw
		var hist strings.Builder
		c.Out = &hist
		if err := c.History(ctx, "app", kilolock.HistoryOptions{}); err != nil || !strings.Contains(hist.String(), "(1 instance(s) to app-net @1)") || !strings.Contains(hist.String(), "(1 instance(s) from app-net @2)") {
			t.Errorf("kl history app: %v\n%s", err, hist.String())
		}
		out, err = run(false, httpbackend.MoveRequest{Operation: history.OperationMerge, From: "app-net", To: "app", DryRun: true})
		if err == nil {
			t.Errorf("merging an empty state: %s", out)
		}
	})
}

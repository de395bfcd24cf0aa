package klcli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/client"
	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/history"
	"github.com/kilolock/kilolock/httpbackend"
	"github.com/kilolock/kilolock/internal/klcli"
)

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

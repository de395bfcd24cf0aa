package klcli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/client"
	"github.com/kilolock/kilolock/internal/klcli"
	"github.com/kilolock/kilolock/retention"
)

// opsCLI is a CLI on h's backend as it answers (stableTimes hides the
// Operations methods).
func opsCLI(h *harness, out *bytes.Buffer, json bool) *klcli.CLI {
	return &klcli.CLI{Conn: h.raw, Out: out, JSON: json}
}

// TestRetentionCommands sets a policy, prunes with a dry run and for real
// on both backends, and finds the marker in kl history and kl retention
// pruned, by whom; bad input is refused and changes nothing.
func TestRetentionCommands(t *testing.T) {
	ctx := context.Background()
	forEachBackend(t, func(t *testing.T, h *harness) {
		var out bytes.Buffer
		c := opsCLI(h, &out, false)
		run := func(f func() error) string {
			t.Helper()
			out.Reset()
			if err := f(); err != nil {
				t.Fatal(err)
			}
			return out.String()
		}
		if got := run(func() error { return c.RetentionPolicies(ctx) }); !strings.Contains(got, "every version is kept") {
			t.Errorf("no policies: %q", got)
		}
		// Refused: a negative limit, an unknown state, a policy not set.
		for _, tt := range []struct {
			name string
			err  error
			want error
		}{
			{"negative", c.SetRetentionPolicy(ctx, retention.RetentionPolicy{Scope: retention.RetentionState, Target: "prod", KeepLast: -1}), kilolock.ErrInvalid},
			{"unknown scope", c.SetRetentionPolicy(ctx, retention.RetentionPolicy{Scope: "galaxy", KeepLast: 1}), kilolock.ErrInvalid},
			{"unset", c.UnsetRetentionPolicy(ctx, retention.RetentionServer, ""), kilolock.ErrNotFound},
			{"unknown state", c.ApplyRetention(ctx, false, "nope", 0), kilolock.ErrNotFound},
		} {
			if !errors.Is(tt.err, tt.want) {
				t.Errorf("%s: %v, want %v", tt.name, tt.err, tt.want)
			}
		}
		run(func() error {
			return c.SetRetentionPolicy(ctx, retention.RetentionPolicy{Scope: retention.RetentionState, Target: "prod", KeepLast: 1})
		})
		if got := run(func() error { return c.RetentionPolicies(ctx) }); !strings.Contains(got, "prod") {
			t.Errorf("policies: %q", got)
		}
		dry := run(func() error { return c.ApplyRetention(ctx, true, "", 0) })
		if !strings.Contains(dry, "@1-@2") || !strings.Contains(dry, "nothing was changed") ||
			!strings.Contains(dry, "prod keeps:\n  @3 current: the state's current version\n  @3 keep_last: state:prod keep_last=1: the newest 1\n") {
			t.Errorf("dry run:\n%s", dry)
		}
		if _, err := h.engine.ReadVersion(ctx, "prod", 1); err != nil {
			t.Fatalf("the dry run pruned @1: %v", err)
		}
		got := run(func() error { return c.ApplyRetention(ctx, false, "", 0) })
		if !strings.Contains(got, "Pruned 2 versions") {
			t.Errorf("apply:\n%s", got)
		}
		var nf *kilolock.VersionNotFoundError
		if _, err := h.engine.ReadVersion(ctx, "prod", 1); !errors.As(err, &nf) || nf.Pruned == nil || nf.First != 3 || !strings.Contains(err.Error(), "retention pruned @1…@2") {
			t.Errorf("@1 after pruning: %v; want it said pruned, @3 the first", err)
		}
		// kl show of a pruned version, on each lane: not found, said
		// pruned, under which policy, with the nearest version kept.
		if err := c.Show(ctx, "prod", kilolock.VersionRef{Kind: kilolock.RefNumber, N: 2}, ""); !errors.Is(err, kilolock.ErrNotFound) ||
			!strings.Contains(err.Error(), "retention pruned @1…@2") || !strings.Contains(err.Error(), "state:prod keep_last=1") ||
			!strings.Contains(err.Error(), "nearest kept are @3") {
			t.Errorf("kl show of a pruned version: %v", err)
		}
		if doc, err := h.engine.ReadVersion(ctx, "prod", 3); err != nil || !bytes.Equal(doc.Bytes, seedDoc(t, "prod-3")) {
			t.Errorf("the current version after pruning: %v", err)
		}
		hist := run(func() error { return c.History(ctx, "prod", kilolock.HistoryOptions{}) })
		if !strings.Contains(hist, "1-2") || !strings.Contains(hist, "pruned") {
			t.Errorf("kl history shows no marker:\n%s", hist)
		}
		pruned := run(func() error { return c.Pruned(ctx, "prod", 0, 50) })
		if !strings.Contains(pruned, "@1-@2") || !strings.Contains(pruned, "state:prod keep_last=1") {
			t.Errorf("kl retention pruned:\n%s", pruned)
		}
		var js bytes.Buffer
		if err := opsCLI(h, &js, true).History(ctx, "prod", kilolock.HistoryOptions{}); err != nil {
			t.Fatal(err)
		}
		var hj klcli.HistoryJSON
		if err := json.Unmarshal(js.Bytes(), &hj); err != nil || len(hj.Pruned) != 1 || hj.Pruned[0].From != 1 || hj.Pruned[0].To != 2 {
			t.Errorf("kl history --json pruned = %+v, %v", hj.Pruned, err)
		}
		run(func() error { return c.UnsetRetentionPolicy(ctx, retention.RetentionState, "prod") })
	})
}

// TestBackupCommand backs a store up with kl backup through the database
// and restores it with kl restore into a new one, whose history is the
// same; an open server refuses to serve a backup, a restore into a store
// that holds states is refused, and a cut file is refused and written
// nowhere.
func TestBackupCommand(t *testing.T) {
	ctx := context.Background()
	forEachBackend(t, func(t *testing.T, h *harness) {
		dir := t.TempDir()
		file := filepath.Join(dir, "b.json.gz")
		var out bytes.Buffer
		err := opsCLI(h, &out, false).Backup(ctx, file)
		if h.url != "" {
			var he *client.Error
			if !errors.As(err, &he) || he.Status != 403 || he.Code() != "backup_closed" {
				t.Fatalf("kl backup from an open server: %v", err)
			}
			if _, err := os.Stat(file); !os.IsNotExist(err) {
				t.Errorf("a refused backup left a file: %v", err)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), "Left out: 4 rows of locks") {
			t.Errorf("kl backup:\n%s", out.String())
		}
		target := sqliteURL(t)
		out.Reset()
		if err := klcli.Restore(ctx, &out, false, target, file, retention.RestoreLimits{}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), "Restored") {
			t.Errorf("kl restore:\n%s", out.String())
		}
		restored := klcli.NewDatabaseConn(openEngine(t, target), klcli.HTTPOptions{})
		for _, name := range []string{"prod", "staging"} {
			w, _ := h.raw.API().History(ctx, name, client.HistoryOptions{})
			g, err := restored.API().History(ctx, name, client.HistoryOptions{})
			if err != nil || len(g.Versions) != len(w.Versions) {
				t.Fatalf("%s: restored history %d versions, %v; want %d", name, len(g.Versions), err, len(w.Versions))
			}
			want, got := w.Versions, g.Versions
			for i := range want {
				if !want[i].Created.Equal(got[i].Created) || want[i].ID != got[i].ID || want[i].Serial != got[i].Serial {
					t.Errorf("%s: version %+v restored as %+v", name, want[i], got[i])
				}
			}
		}
		if err := klcli.Restore(ctx, &out, false, target, file, retention.RestoreLimits{}); !errors.Is(err, kilolock.ErrConflict) {
			t.Errorf("a restore into a store that is not empty: %v", err)
		}
		whole, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		cut := filepath.Join(dir, "cut.json.gz")
		if err := os.WriteFile(cut, whole[:len(whole)/2], 0o600); err != nil {
			t.Fatal(err)
		}
		empty := sqliteURL(t)
		if err := klcli.Restore(ctx, &out, false, empty, cut, retention.RestoreLimits{}); !errors.Is(err, kilolock.ErrInvalid) {
			t.Errorf("a restore of a cut file: %v", err)
		}
		if sts, err := openEngine(t, empty).Store().States(ctx); err != nil || len(sts) != 0 {
			t.Errorf("a refused restore wrote states %+v, %v", sts, err)
		}
	})
}

package e2e_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kilolock/kilolock/internal/tofu"
)

// driftConfig drifts without a cloud: time_rotating.short reads as gone
// once its rotation time (var.rotate_at) has passed; long does not for a
// year; after_short rests on short.
const driftConfig = `
terraform {
  required_providers {
    time = { source = "hashicorp/time" }
  }
}
variable "rotate_at" { type = string }
resource "time_rotating" "short" { rotation_rfc3339 = var.rotate_at }
resource "time_rotating" "long" { rotation_years = 1 }
resource "terraform_data" "after_short" { input = time_rotating.short.id }
`

// mustKLIn runs kl with the environment tofu runs with in wd (its CLI
// configuration) and the tofu binary, as kl drift check needs.
func mustKLIn(t *testing.T, wd *tofu.Workdir, args ...string) string {
	t.Helper()
	env := append(wd.Env(), "KL_TF_BIN="+tofu.Binary(t))
	out, errOut, code := klEnv(t, env, tofu.CommandTimeout, args...)
	if code != 0 {
		t.Fatalf("kl %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// TestDriftCheck: the real CLI's refresh-only plan finds time_rotating.short
// gone; kl records it against the version the plan read and writes no
// version; the drift shows in kl drift list, kl status, resource_drift and
// /metrics; a cone check elsewhere leaves it open; --accept writes the
// refresh as a version of source refresh, which closes it.
func TestDriftCheck(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, databaseURL string) {
		srv := setup(t, databaseURL)
		wd := tofu.NewWorkdir(t, srv.Backend("drifty")+driftConfig)
		wd.Setenv("TF_VAR_rotate_at", time.Now().Add(3*time.Second).UTC().Format(time.RFC3339))
		wd.Must("init", "-no-color")
		wd.Must("apply", "-auto-approve", "-no-color")
		time.Sleep(time.Until(time.Now().Add(4 * time.Second)))

		out := mustKLIn(t, wd, "--server", srv.URL, "drift", "check", wd.Dir)
		if !strings.Contains(out, "checked @1 of drifty, the whole state: 1 instance drifted") || !strings.Contains(out, "time_rotating.short") || !strings.Contains(out, "gone") {
			t.Fatalf("kl drift check:\n%s", out)
		}
		if h := history(t, srv, "drifty"); len(h) != 1 {
			t.Fatalf("a drift check wrote a version: %d versions", len(h))
		}
		var list struct {
			Drift []struct {
				Address string `json:"address"`
				Kind    string `json:"kind"`
				Version int64  `json:"version"`
			} `json:"drift"`
		}
		for _, target := range [][]string{{"--server", srv.URL}, {"--database", databaseURL}} {
			js := mustKL(t, append(target, "drift", "list", "drifty", "--json")...)
			if err := json.Unmarshal([]byte(js), &list); err != nil || len(list.Drift) != 1 || list.Drift[0].Address != "time_rotating.short" || list.Drift[0].Kind != "deleted" || list.Drift[0].Version != 1 {
				t.Fatalf("kl %s drift list: %v\n%s", target[0], err, js)
			}
		}
		if st := mustKL(t, "--server", srv.URL, "status", "drifty"); !strings.Contains(st, "drift:      1 instance differs from the real infrastructure") {
			t.Errorf("kl status does not count the drift:\n%s", st)
		}
		if q := mustKL(t, "--server", srv.URL, "query", "SELECT address, kind FROM resource_drift"); !strings.Contains(q, "time_rotating.short  deleted") {
			t.Errorf("resource_drift:\n%s", q)
		}
		if m := string(metrics(t, srv)); !strings.Contains(m, `kl_drifted_instances{state="drifty"} 1`) {
			t.Errorf("/metrics lacks the drifted instance")
		}

		// A cone check of long (nothing rests on it) refreshes long alone:
		// clean, and short's record stays open.
		out = mustKLIn(t, wd, "--server", srv.URL, "drift", "check", wd.Dir, "--state", "drifty", "--address", "time_rotating.long", "--cone")
		if !strings.Contains(out, "1 address (time_rotating.long): 0 instances drifted") {
			t.Fatalf("a cone check of long:\n%s", out)
		}
		if js := mustKL(t, "--server", srv.URL, "drift", "list", "drifty", "--json"); !strings.Contains(js, "time_rotating.short") {
			t.Fatalf("a check of long closed short's drift:\n%s", js)
		}

		// --accept on short's cone writes the refresh as a version.
		out = mustKLIn(t, wd, "--server", srv.URL, "drift", "check", wd.Dir, "--address", "time_rotating.short", "--cone", "--accept")
		if !strings.Contains(out, "2 addresses (time_rotating.short, terraform_data.after_short)") || !strings.Contains(out, "accepted: @2 (serial 2, source refresh)") {
			t.Fatalf("kl drift check --accept:\n%s", out)
		}
		h := history(t, srv, "drifty")
		if len(h) != 2 || h[0].Source != "refresh" {
			t.Fatalf("history after --accept: %+v", h)
		}
		if got := stateList(t, wd); strings.Contains(strings.Join(got, " "), "time_rotating.short") {
			t.Errorf("the accepted refresh still holds short: %v", got)
		}
		if js := mustKL(t, "--server", srv.URL, "drift", "list", "drifty", "--json"); strings.Contains(js, "time_rotating.short") {
			t.Errorf("the accepted refresh left short's drift open:\n%s", js)
		}
		if m := string(metrics(t, srv)); !strings.Contains(m, `kl_drifted_instances{state="drifty"} 0`) {
			t.Errorf("/metrics still counts drift after --accept")
		}

		// A tag names the version before the refresh, through kld and on
		// the database alike, and audited.
		mustKL(t, "--server", srv.URL, "tag", "set", "drifty", "before-refresh", "@1", "--description", "short still there")
		if out := mustKL(t, "--database", databaseURL, "tag", "list", "drifty"); !strings.Contains(out, "before-refresh  @1") {
			t.Errorf("kl tag list:\n%s", out)
		}
		if out := mustKL(t, "--server", srv.URL, "diff", "drifty", "before-refresh"); !strings.Contains(out, "time_rotating.short") {
			t.Errorf("kl diff from a tag:\n%s", out)
		}
		mustKL(t, "--database", databaseURL, "tag", "unset", "drifty", "before-refresh")
		if out := mustKL(t, "--database", databaseURL, "audit"); !strings.Contains(out, "tag.unset") || !strings.Contains(out, "db:kl") {
			t.Errorf("kl audit lacks the tag changes:\n%s", out)
		}
	})
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kilolock/kilolock/applyrun"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/internal/tofu"
	"github.com/kilolock/kilolock/store"
)

// TestRun drives the example with the real OpenTofu: both scoped applies
// hold their reservations at the same time and both land in the state.
func TestRun(t *testing.T) {
	bin := tofu.Binary(t) // skips without tofu, fails in CI
	t.Setenv("TF_CLI_CONFIG_FILE", tofu.CLIConfigFile(t))
	t.Setenv("TF_IN_AUTOMATION", "1")
	dir := t.TempDir()
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	if err := run(ctx, config{Tofu: bin, Dir: dir, Sleep: 3 * time.Second, Out: &out}); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	t.Log(out.String())
	if !strings.Contains(out.String(), "two orchestrated applies of 3s each took") {
		t.Errorf("the example does not report its timing:\n%s", out.String())
	}

	s, err := store.Open(ctx, filepath.Join(dir, "kilolock.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	e := kilolock.NewEngine(s, kilolock.Options{})
	runs, err := applyrun.Runs(ctx, e, kilolock.RunFilter{State: state})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 {
		t.Fatalf("%d runs, want 2", len(runs))
	}
	x, y := runs[0], runs[1]
	for _, r := range runs {
		if r.Status != kilolock.RunSucceeded {
			t.Errorf("run %s is %s, want succeeded", r.ID, r.Status)
		}
	}
	if !x.Acquired.Before(y.Ended) || !y.Acquired.Before(x.Ended) {
		t.Errorf("the runs did not overlap: %s %s–%s, %s %s–%s", x.ID, x.Acquired, x.Ended, y.ID, y.Acquired, y.Ended)
	}
	doc, err := e.Read(ctx, state)
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Resources []struct {
			Name      string `json:"name"`
			Instances []struct {
				Attributes struct {
					Triggers map[string]string `json:"triggers"`
				} `json:"attributes"`
			} `json:"instances"`
		} `json:"resources"`
	}
	if err := json.Unmarshal(doc.Bytes, &st); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range st.Resources {
		got[r.Name] = r.Instances[0].Attributes.Triggers["v"]
	}
	if got["slow_a"] != "v2" || got["slow_b"] != "v2" {
		t.Errorf("state triggers = %v, want both v2", got)
	}
}

package e2e_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kilolock/kilolock/internal/tofu"
)

// TestLineageMismatch pushes the state of another configuration (another
// lineage) over a KiloLock state: tofu refuses it without -force, KiloLock
// refuses it with -force, and the history is untouched either way.
func TestLineageMismatch(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, databaseURL string) {
		srv := setup(t, databaseURL)
		wd := tofu.NewWorkdir(t, srv.Backend("example")+smallConfig("v1"))
		wd.Must("init", "-no-color")
		wd.Must("apply", "-auto-approve", "-no-color")
		ours := getState(t, srv, "example")
		before := history(t, srv, "example")

		other := tofu.NewWorkdir(t, `
resource "terraform_data" "other_team" {
  count = 2
  input = count.index
}
`)
		other.Must("init", "-no-color")
		other.Must("apply", "-auto-approve", "-no-color")
		// A serial above ours, so only the lineage is wrong.
		var doc map[string]any
		if err := json.Unmarshal([]byte(other.ReadFile("terraform.tfstate")), &doc); err != nil {
			t.Fatal(err)
		}
		if doc["lineage"] == parseState(t, ours).Lineage {
			t.Fatal("two applies produced the same lineage")
		}
		doc["serial"] = parseState(t, ours).Serial + 5
		foreign, err := json.MarshalIndent(doc, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		wd.WriteFile("foreign.tfstate", string(foreign)+"\n")

		stdout, stderr, code := wd.Run("state", "push", "-no-color", "foreign.tfstate")
		if code == 0 {
			t.Errorf("state push of another lineage succeeded:\n%s", stdout)
		}
		t.Logf("state push (no -force): exit %d: %s", code, firstLines(stderr, 3))

		stdout, stderr, code = wd.Run("state", "push", "-force", "foreign.tfstate")
		if code == 0 {
			t.Errorf("state push -force of another lineage was accepted by kld:\n%s", stdout)
		}
		t.Logf("state push -force: exit %d: %s", code, firstLines(stderr, 3))
		// tofu shows only the status; the reason is in kld's log.
		if !strings.Contains(stderr, "409") {
			t.Errorf("state push -force: tofu does not show the 409:\n%s", stderr)
		}
		if !srv.WaitLog(t.Context(), "lineage_mismatch", 5*time.Second) {
			t.Errorf("kld did not log the refused write as lineage_mismatch:\n%s", srv.Log())
		}

		if got := getState(t, srv, "example"); !bytes.Equal(got, ours) {
			t.Errorf("the state changed:\nbefore: %.300s\nafter:  %.300s", ours, got)
		}
		if after := history(t, srv, "example"); len(after) != len(before) {
			t.Errorf("history has %d versions after the refused pushes, want %d", len(after), len(before))
		}
		if got := stateList(t, wd); !equalLists(got, smallAddresses) {
			t.Errorf("state list = %q, want %q", got, smallAddresses)
		}
		// The refused push left no lock behind.
		if code, body := lock(t, srv, "example", newLock("after@e2e")); code != http.StatusOK {
			t.Errorf("LOCK after the refused push: %d %s", code, body)
		}
	})
}

func firstLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, " | ")
}

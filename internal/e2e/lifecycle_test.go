package e2e_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kilolock/kilolock/internal/tofu"
)

// TestLifecycle is the quick start: init, apply, plan with no changes,
// state list, state pull equal to what a GET answers, and state push.
func TestLifecycle(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, databaseURL string) {
		srv := setup(t, databaseURL)
		wd := tofu.NewWorkdir(t, srv.Backend("example")+smallConfig("v1"))

		var out string
		timed(t, "init", func() { out = wd.Must("init", "-no-color") })
		if !strings.Contains(out, `Successfully configured the backend "http"`) {
			t.Errorf("init did not configure the http backend:\n%s", out)
		}
		timed(t, "apply", func() { out = wd.Must("apply", "-auto-approve", "-no-color") })
		if !strings.Contains(out, "Apply complete! Resources: 6 added, 0 changed, 0 destroyed.") {
			t.Errorf("apply:\n%s", out)
		}
		timed(t, "plan", func() {
			if stdout, stderr, code := wd.Run("plan", "-detailed-exitcode", "-no-color"); code != 0 {
				t.Errorf("plan -detailed-exitcode after apply: exit %d, want 0 (no changes)\n%s\n%s", code, stdout, stderr)
			}
		})
		if got := stateList(t, wd); !equalLists(got, smallAddresses) {
			t.Errorf("state list = %q, want %q", got, smallAddresses)
		}

		// state pull prints the state tofu reads, re-serialized, plus a
		// newline; tofu serializes deterministically, so it is the GET
		// answer byte for byte when kld serves what tofu wrote.
		var pulled string
		timed(t, "state pull", func() { pulled = wd.Must("state", "pull") })
		got := getState(t, srv, "example")
		if pulled != string(got)+"\n" {
			t.Errorf("state pull is not the GET answer plus a newline:\npull (%d bytes): %.300q\nGET (%d bytes): %.300q", len(pulled), pulled, len(got), got)
		}
		st := parseState(t, []byte(pulled))
		if !semanticEqual(t, []byte(pulled), got) {
			t.Errorf("state pull and GET hold different states")
		}
		if st.Serial == 0 || st.instances() != len(smallAddresses) {
			t.Errorf("pulled state: serial %d, %d instances; want serial > 0, %d instances", st.Serial, st.instances(), len(smallAddresses))
		}
		if _, ok := st.Outputs["named"]; !ok {
			t.Errorf("pulled state has no output \"named\": %v", st.Outputs)
		}
		before := len(history(t, srv, "example"))

		// state push of the pulled state, one serial on, with a new output.
		var doc map[string]any
		if err := json.Unmarshal([]byte(pulled), &doc); err != nil {
			t.Fatal(err)
		}
		doc["serial"] = st.Serial + 1
		doc["outputs"].(map[string]any)["pushed"] = map[string]any{"value": "by-e2e", "type": "string"}
		b, err := json.MarshalIndent(doc, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		wd.WriteFile("pushed.tfstate", string(b)+"\n")
		timed(t, "state push", func() { wd.Must("state", "push", "pushed.tfstate") })

		// tofu writes the pushed state with its serial one on again (it
		// differs from the state it last read), so compare without it.
		repulled := wd.Must("state", "pull")
		st2 := parseState(t, []byte(repulled))
		if st2.Serial <= st.Serial || st2.Lineage != st.Lineage {
			t.Errorf("after push: serial %d lineage %s, want serial above %d, lineage %s", st2.Serial, st2.Lineage, st.Serial, st.Lineage)
		}
		if !semanticEqual(t, withoutSerial(t, []byte(repulled)), withoutSerial(t, b)) {
			t.Errorf("pulled state differs from the pushed one:\npushed: %.400s\npulled: %.400s", b, repulled)
		}
		if got := getState(t, srv, "example"); repulled != string(got)+"\n" {
			t.Errorf("after push, state pull is not the GET answer plus a newline")
		}
		if out := wd.Must("output", "-raw", "pushed"); out != "by-e2e" {
			t.Errorf("tofu output -raw pushed = %q, want by-e2e", out)
		}
		h := history(t, srv, "example")
		if len(h) != before+1 {
			t.Errorf("history has %d versions after the push, want %d", len(h), before+1)
		} else if h[0].Serial != st2.Serial {
			t.Errorf("newest version has serial %d, want %d", h[0].Serial, st2.Serial)
		}
	})
}

// withoutSerial returns the state document b without its serial.
func withoutSerial(t *testing.T, b []byte) []byte {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	delete(doc, "serial")
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

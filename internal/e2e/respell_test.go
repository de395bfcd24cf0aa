package e2e_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/kilolock/kilolock/graph/graphtest"
	"github.com/kilolock/kilolock/internal/tofu"
)

// escapesConfig adds to smallConfig values that each JSON writer spells its
// own way: HTML-safe escapes, non-ASCII, a line separator, a fraction.
const escapesConfig = `
resource "terraform_data" "escapes" {
  input = {
    html  = "<b>&amp;</b>"
    text  = "café \u2028 done"
    ratio = 42.5
  }
}
`

// TestRespelledStateIsUnchanged: a state the real tofu wrote, re-serialized
// by Python, jq and Go and POSTed back under a lock as a script would,
// changes no instance and writes at most 3 rows; GET answers the posted
// bytes; tofu reads the re-serialized state and plans no change; and the
// next tofu apply goes on from it.
func TestRespelledStateIsUnchanged(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, databaseURL string) {
		srv := setup(t, databaseURL)
		backend := srv.Backend("respelled")
		wd := tofu.NewWorkdir(t, backend+smallConfig("v1")+escapesConfig)
		wd.Must("init", "-no-color")
		wd.Must("apply", "-auto-approve", "-no-color")

		for _, rs := range graphtest.Respellings {
			written := getState(t, srv, "respelled")
			body := rs.Apply(t, graphtest.BumpSerial(t, written))
			l := newLock("respell-" + rs.Name)
			if code, b := lock(t, srv, "respelled", l); code != http.StatusOK {
				t.Fatalf("LOCK: %d %s", code, b)
			}
			code, b := request(t, http.MethodPost, srv.StateURL("respelled")+"?ID="+l.ID, body)
			if code != http.StatusOK {
				t.Fatalf("POST of the %s re-serialization: %d %s", rs.Name, code, b)
			}
			var ans struct {
				Added, Changed, Removed, Rows int
			}
			if err := json.Unmarshal(b, &ans); err != nil {
				t.Fatal(err)
			}
			if ans.Added+ans.Changed+ans.Removed != 0 || ans.Rows > 3 {
				t.Fatalf("re-serialized by %s: %s; want no change and at most 3 rows", rs.Name, b)
			}
			t.Logf("tofu's state re-serialized by %s and POSTed: %s", rs.Name, bytes.TrimSpace(b))
			if code, b := unlock(t, srv, "respelled", l); code != http.StatusOK {
				t.Fatalf("UNLOCK: %d %s", code, b)
			}
			if got := getState(t, srv, "respelled"); !bytes.Equal(got, body) {
				t.Fatalf("GET after the %s re-serialization is not what was posted", rs.Name)
			}
			if _, errOut, code := wd.Run("plan", "-detailed-exitcode", "-no-color"); code != 0 {
				t.Fatalf("tofu plan on the %s re-serialization: exit %d (2 means changes)\n%s", rs.Name, code, errOut)
			}
		}

		wd.WriteFile("main.tf", backend+smallConfig("v2")+escapesConfig)
		wd.Must("apply", "-auto-approve", "-no-color")
		if _, errOut, code := wd.Run("plan", "-detailed-exitcode", "-no-color"); code != 0 {
			t.Fatalf("tofu plan after the next apply: exit %d\n%s", code, errOut)
		}
	})
}

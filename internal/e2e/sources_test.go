package e2e_test

import (
	"encoding/json"
	"testing"

	"github.com/kilolock/kilolock/internal/tofu"
)

// TestHistorySourcesPushMigrate: history records what the CLI's lock says
// it wrote: tofu init -migrate-state's write as migrate, tofu state push's
// as push (both take a lock, as an apply does), an apply as apply. Both
// stores.
func TestHistorySourcesPushMigrate(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, databaseURL string) {
		srv := setup(t, databaseURL)
		wd := tofu.NewWorkdir(t, smallConfig("v1"))
		wd.Must("init", "-no-color")
		wd.Must("apply", "-auto-approve", "-no-color")
		wd.WriteFile("main.tf", srv.Backend("sources")+smallConfig("v1"))
		wd.Must("init", "-migrate-state", "-force-copy", "-no-color")

		wd.WriteFile("main.tf", srv.Backend("sources")+smallConfig("v2"))
		wd.Must("apply", "-auto-approve", "-no-color")

		var doc map[string]any
		if err := json.Unmarshal([]byte(wd.Must("state", "pull")), &doc); err != nil {
			t.Fatal(err)
		}
		doc["serial"] = doc["serial"].(float64) + 1
		b, _ := json.Marshal(doc)
		wd.WriteFile("pushed.tfstate", string(b))
		wd.Must("state", "push", "-no-color", "pushed.tfstate")

		h := history(t, srv, "sources")
		var got []string
		for i := len(h) - 1; i >= 0; i-- {
			got = append(got, h[i].Source)
		}
		if want := []string{"migrate", "apply", "push"}; !equalLists(got, want) {
			t.Errorf("sources, oldest first = %q, want %q", got, want)
		}
		for _, v := range h {
			if v.LockID == "" {
				t.Errorf("version %d has no lock ID: the CLI wrote it under a lock", v.Number)
			}
		}
	})
}

package e2e_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/kilolock/kilolock/internal/tofu"
)

// TestMigrateState moves a local state into KiloLock with
// `tofu init -migrate-state -force-copy`, changes it there, and moves it
// back out to a local state; with OpenTofu and with Terraform.
func TestMigrateState(t *testing.T) {
	t.Parallel()
	for _, cli := range []tofu.Kind{tofu.OpenTofu, tofu.Terraform} {
		t.Run(cli.String(), func(t *testing.T) {
			t.Parallel()
			eachStoreWith(t, cli, func(t *testing.T, databaseURL string) { migrateState(t, cli, databaseURL) })
		})
	}
}

// migrateState is TestMigrateState with cli on a new database.
func migrateState(t *testing.T, cli tofu.Kind, databaseURL string) {
	t.Helper()
	srv := setup(t, databaseURL)
	wd := cli.NewWorkdir(t, smallConfig("v1"))
	wd.Must("init", "-no-color")
	wd.Must("apply", "-auto-approve", "-no-color")
	localBytes := []byte(wd.ReadFile("terraform.tfstate"))
	want := stateList(t, wd)
	if !equalLists(want, smallAddresses) {
		t.Fatalf("local state list = %q", want)
	}

	// In.
	wd.WriteFile("main.tf", srv.Backend("example")+smallConfig("v1"))
	timed(t, "init -migrate-state (local to kilolock)", func() {
		wd.Must("init", "-migrate-state", "-force-copy", "-no-color")
	})
	if got := stateList(t, wd); !equalLists(got, want) {
		t.Errorf("state list in KiloLock = %q, want %q", got, want)
	}
	// tofu copies resources and outputs; into an empty remote state it
	// writes them under a new lineage (its remote state manager drops
	// the source's lineage when it finds no state to update).
	remoteBytes := getState(t, srv, "example")
	remote := parseState(t, remoteBytes)
	for _, key := range []string{"resources", "outputs"} {
		if !semanticEqual(t, field(t, remoteBytes, key), field(t, localBytes, key)) {
			t.Errorf("migrated state: %s differ from the local state's:\nlocal:  %.300s\nremote: %.300s", key, localBytes, remoteBytes)
		}
	}
	if stdout, stderr, code := wd.Run("plan", "-detailed-exitcode", "-no-color"); code != 0 {
		t.Errorf("plan after migrating in: exit %d, want 0\n%s\n%s", code, stdout, stderr)
	}

	// A change made while the state lives in KiloLock.
	extra := `
resource "terraform_data" "added_in_kilolock" {
  input = "x"
}
`
	wd.WriteFile("main.tf", srv.Backend("example")+smallConfig("v1")+extra)
	wd.Must("apply", "-auto-approve", "-no-color")
	want = append(slices.Clone(want), "terraform_data.added_in_kilolock")
	slices.Sort(want)

	// Out.
	wd.WriteFile("main.tf", smallConfig("v1")+extra)
	timed(t, "init -migrate-state (kilolock to local)", func() {
		wd.Must("init", "-migrate-state", "-force-copy", "-no-color")
	})
	if got := stateList(t, wd); !equalLists(got, want) {
		t.Errorf("local state list after migrating out = %q, want %q", got, want)
	}
	back := parseState(t, []byte(wd.ReadFile("terraform.tfstate")))
	if back.Lineage != remote.Lineage || back.instances() != len(want) {
		t.Errorf("migrated-out state: lineage %s with %d instances, want KiloLock's %s with %d", back.Lineage, back.instances(), remote.Lineage, len(want))
	}
	if stdout, stderr, code := wd.Run("plan", "-detailed-exitcode", "-no-color"); code != 0 {
		t.Errorf("plan after migrating out: exit %d, want 0\n%s\n%s", code, stdout, stderr)
	}
	// Migrating out leaves the state in KiloLock as it was, unlocked.
	if code, body := lock(t, srv, "example", newLock("after@e2e")); code != http.StatusOK {
		t.Errorf("LOCK after migrating out: %d %s", code, body)
	}
}

// field returns the JSON of one top-level field of a state document.
func field(t *testing.T, doc []byte, key string) []byte {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(doc, &m); err != nil {
		t.Fatal(err)
	}
	return m[key]
}

package e2e_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/kilolock/kilolock/internal/tofu"
)

// TestDriftConeAgainstFull measures what --cone saves on a large state: a
// herd of KL_DRIFT_HERD instances (unset: the test skips, it takes
// minutes) in which time_rotating.hub has 20 dependents, checked whole and
// then as hub's cone. The timings are logged (TIMING lines), never
// asserted; both checks must find the same (nothing drifted).
//
//	KL_DRIFT_HERD=10000 go test ./internal/e2e -run DriftConeAgainstFull -v
func TestDriftConeAgainstFull(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("KL_DRIFT_HERD"))
	if n < 100 {
		t.Skip("set KL_DRIFT_HERD=10000 to measure a cone refresh against a full one")
	}
	srv := setup(t, stores[0].url(t))
	config := fmt.Sprintf(`
terraform {
  required_providers {
    time = { source = "hashicorp/time" }
  }
}
resource "time_rotating" "hub" { rotation_years = 1 }
resource "terraform_data" "leaf" {
  count = 20
  input = "${time_rotating.hub.id}-${count.index}"
}
resource "terraform_data" "herd" {
  count = %d
  input = count.index
}
`, n-21)
	wd := tofu.NewWorkdir(t, srv.Backend("herd")+config)
	wd.Must("init", "-no-color")
	timed(t, fmt.Sprintf("apply of %d instances", n), func() { wd.Must("apply", "-auto-approve", "-no-color", "-parallelism=20") })
	var full, cone string
	timed(t, fmt.Sprintf("full drift check of %d instances", n), func() {
		full = mustKLIn(t, wd, "--server", srv.URL, "drift", "check", wd.Dir)
	})
	timed(t, "cone drift check of time_rotating.hub (21 instances)", func() {
		cone = mustKLIn(t, wd, "--server", srv.URL, "drift", "check", wd.Dir, "--address", "time_rotating.hub", "--cone")
	})
	if !strings.Contains(full, "0 instances drifted") || !strings.Contains(cone, "21 addresses") || !strings.Contains(cone, "0 instances drifted") {
		t.Errorf("full check:\n%s\ncone check:\n%s", full, cone)
	}
}

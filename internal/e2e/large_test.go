package e2e_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kilolock/kilolock/internal/tofu"
)

// largeCount is the number of instances of the large state.
const largeCount = 2000

// TestLargeState applies 2,000 instances and plans again with no changes.
// The timings are logged (TIMING lines), never asserted.
func TestLargeState(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the 2,000-instance apply")
	}
	t.Parallel()
	eachStore(t, func(t *testing.T, databaseURL string) {
		srv := setup(t, databaseURL)
		wd := tofu.NewWorkdir(t, srv.Backend("example")+fmt.Sprintf(`
resource "terraform_data" "n" {
  count = %d
  input = {
    index = count.index
    name  = "instance-${count.index}"
  }
}

output "count" {
  value = length(terraform_data.n)
}
`, largeCount))
		wd.Must("init", "-no-color")

		var out string
		timed(t, fmt.Sprintf("apply %d instances -parallelism=50", largeCount), func() {
			out = wd.Must("apply", "-auto-approve", "-no-color", "-parallelism=50")
		})
		if want := fmt.Sprintf("Apply complete! Resources: %d added", largeCount); !strings.Contains(out, want) {
			t.Errorf("apply does not say %q:\n%s", want, tail(out, 10))
		}
		timed(t, fmt.Sprintf("plan %d instances -parallelism=50", largeCount), func() {
			stdout, stderr, code := wd.Run("plan", "-detailed-exitcode", "-no-color", "-parallelism=50")
			if code != 0 {
				t.Errorf("plan after apply: exit %d, want 0 (no changes)\n%s\n%s", code, tail(stdout, 20), stderr)
			}
		})
		// What the writes cost kld, as it logs them.
		for _, line := range strings.Split(srv.Log(), "\n") {
			if strings.Contains(line, "method=POST") {
				t.Logf("kld: %s", line)
			}
		}
		var body []byte
		timed(t, "GET", func() { body = getState(t, srv, "example") })
		st := parseState(t, body)
		t.Logf("state: %d bytes, %d instances, serial %d", len(body), st.instances(), st.Serial)
		if st.instances() != largeCount {
			t.Errorf("GET: %d instances, want %d", st.instances(), largeCount)
		}
		var pulled string
		timed(t, "state pull", func() { pulled = wd.Must("state", "pull") })
		if pulled != string(body)+"\n" {
			t.Errorf("state pull is not the GET answer plus a newline (%d vs %d bytes)", len(pulled), len(body))
		}
		var list []string
		timed(t, "state list", func() { list = stateList(t, wd) })
		if len(list) != largeCount {
			t.Errorf("state list: %d addresses, want %d", len(list), largeCount)
		}
	})
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

package e2e_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kilolock/kilolock/internal/tofu"
)

// pipeConfig reads two remote states from the test's own server, b after
// a: a plan of it holds its state lock while the server keeps a waiting.
const pipeConfig = `
data "terraform_remote_state" "a" {
  backend = "http"
  config  = { address = "%[1]s/a" }
}
data "terraform_remote_state" "b" {
  backend = "http"
  config  = { address = "%[1]s/b?after=${data.terraform_remote_state.a.outputs.v}" }
}
resource "terraform_data" "d" {
  input = "x"
}
`

// TestDriftCheckReaderGone: a kl drift check whose reader goes away
// mid-plan (its output piped to a program that exits, as `| head` does)
// stops the CLI gracefully, which releases the state's plan lock, instead
// of dying by SIGPIPE and leaving the lock held forever.
func TestDriftCheckReaderGone(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, databaseURL string) {
		srv := setup(t, databaseURL)
		var (
			hold    atomic.Bool
			release = make(chan struct{})
		)
		remote := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if hold.Load() {
				if r.URL.Path == "/a" {
					select {
					case <-release:
					case <-r.Context().Done():
						return
					}
				} else {
					time.Sleep(3 * time.Second)
				}
			}
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"version":4,"terraform_version":"1.10.10","serial":1,"lineage":"remote","outputs":{"v":{"value":"1","type":"string"}},"resources":[]}`))
		}))
		t.Cleanup(remote.Close)
		t.Cleanup(func() {
			select {
			case <-release:
			default:
				close(release)
			}
		})
		wd := tofu.NewWorkdir(t, srv.Backend("pipe")+strings.ReplaceAll(pipeConfig, "%[1]s", remote.URL))
		wd.Must("init", "-no-color")
		wd.Must("apply", "-auto-approve", "-no-color")
		hold.Store(true)

		// kl's stderr, where the CLI's output goes at debug level, is a
		// pipe whose reader leaves after the plan's first data source.
		rd, wr, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		r := startKLPiped(t, wd, []string{"KL_LOG_LEVEL=debug"}, wr, "drift", "check")
		wr.Close()
		lines := bufio.NewScanner(rd)
		for !strings.Contains(lines.Text(), "data.terraform_remote_state.a: Reading...") {
			if !lines.Scan() {
				rd.Close()
				t.Fatalf("kl drift check ended its output before the plan read a: %v", lines.Err())
			}
		}
		rd.Close()
		close(release) // a answers: the CLI writes to the closed pipe

		select {
		case <-r.done:
		case <-time.After(time.Minute):
			t.Fatalf("kl drift check still runs a minute after its reader left\n%s", r.output())
		}
		if r.cmd.ProcessState.ExitCode() < 0 {
			t.Errorf("kl drift check died by a signal (%s)", r.cmd.ProcessState)
		}
		var st struct {
			Locks []json.RawMessage `json:"locks"`
		}
		out := mustKL(t, "--server", srv.URL, "status", "pipe", "--json")
		if err := json.Unmarshal([]byte(out), &st); err != nil || len(st.Locks) != 0 {
			t.Fatalf("after kl drift check lost its reader, state pipe holds %d lock(s) (%v): the CLI's plan lock was left behind\n%s", len(st.Locks), err, out)
		}
	})
}

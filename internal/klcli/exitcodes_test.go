package klcli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/orchestrate"
	"github.com/kilolock/kilolock/reserve"
)

// TestApplyExitCodes: the exit codes kl apply documents, and the hint each
// failure reports.
func TestApplyExitCodes(t *testing.T) {
	blocker := reserve.Blocker{Hold: reserve.Hold{
		Reservation: reserve.Reservation{Pattern: reserve.MustParse("time_sleep.slow_a"), Mode: reserve.Write},
		Run:         "run_7c3a91d2e4f5a6b7", Holder: "alice@laptop",
	}}
	aborted := &kilolock.ApplyRun{ID: "run_7c3a91d2e4f5a6b7", State: "big-state", Status: kilolock.RunAborted, EndedBy: "ops"}
	killed := &orchestrate.StoppedError{Err: context.Canceled, Grace: 5 * time.Second, Killed: true}
	for _, tc := range []struct {
		name string
		err  error
		code int
		hint string
		msg  string // what the message says beyond the hint
	}{
		{"blocked", fmt.Errorf("wait: %w", &reserve.BlockedError{State: "big-state", Blockers: []reserve.Blocker{blocker}}), ExitBlocked, "kl apply abort --apply-id run_7c3a91d2e4f5a6b7", ""},
		{"aborted, refused write", &orchestrate.AbortedError{Run: aborted, Dir: "/cfg"}, ExitAborted, "`tofu plan` in /cfg shows it",
			"the server refused the apply's write (409 apply_run_ended); nothing of it was committed, and the CLI saved no errored.tfstate"},
		{"aborted, stopped", &orchestrate.AbortedError{Run: aborted, Dir: "/cfg", Stopped: &orchestrate.StoppedError{Err: context.Canceled, Grace: 5 * time.Second}, Errored: "/cfg/errored.tfstate"}, ExitAborted,
			"keep it with `tofu state push errored.tfstate` in /cfg", "stopped on its own); nothing of it was committed, and the CLI saved what it could not write in /cfg/errored.tfstate"},
		{"aborted, killed", &orchestrate.AbortedError{Run: aborted, Dir: "/cfg", Stopped: killed}, ExitAborted, "may be missing from the state", "killed with its provisioners 5s later"},
		{"CLI failed", &orchestrate.CLIError{Command: "apply", Err: errors.New("exit status 1")}, ExitCLI, "", ""},
		{"stale spec", &orchestrate.StaleSpecError{State: "big-state", Serial: 4, Addresses: []string{"time_sleep.slow_a"}}, ExitConflict, "plan again", ""},
		{"outside the scope", &orchestrate.ScopeError{Scope: []string{"-f slow_b.tf"}, Outside: []orchestrate.OutsideWrite{{Change: reserve.Change{Address: "time_sleep.slow_a", Actions: []string{"update"}}, File: "slow_a.tf", Line: 1}}}, ExitConflict, "add -f slow_a.tf", ""},
		{"uncovered re-plan", &orchestrate.UncoveredError{Run: "run_7c3a91d2e4f5a6b7", Addresses: []string{"time_sleep.slow_b"}}, ExitConflict, "again", ""},
		{"run over", &kilolock.RunEndedError{Run: aborted}, ExitConflict, "", ""},
		{"interrupted wait", fmt.Errorf("wait: %w", errors.New("context canceled")), ExitError, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ExitCode(tc.err); got != tc.code {
				t.Errorf("ExitCode(%v) = %d, want %d", tc.err, got, tc.code)
			}
			var out bytes.Buffer
			Report(&out, tc.err)
			_, hint, _ := strings.Cut(out.String(), "\nhint: ")
			if !strings.Contains(hint, tc.hint) {
				t.Errorf("Report does not hint %q:\n%s", tc.hint, out.String())
			}
			if !strings.Contains(out.String(), tc.msg) {
				t.Errorf("Report does not say %q:\n%s", tc.msg, out.String())
			}
		})
	}
}

// TestRunErrorFromServer: the server's 409 run_ended is the
// *kilolock.RunEndedError it stands for, with the run.
func TestRunErrorFromServer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusConflict)
		w.Write([]byte(`{"error":"run_ended","message":"…","hint":"stop","run":{"id":"run_7c3a91d2e4f5a6b7","state":"s","status":"aborted","ended_by":"ops"}}`))
	}))
	defer srv.Close()
	b, err := NewConn(srv.URL, HTTPOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var ended *kilolock.RunEndedError
	_, err = b.api.RenewRun(context.Background(), "run_7c3a91d2e4f5a6b7")
	if !errors.As(err, &ended) || ended.Run.Status != kilolock.RunAborted || ended.Run.EndedBy != "ops" {
		t.Fatalf("renew = %#v, want a RunEndedError of the aborted run", err)
	}
	if ExitCode(err) != ExitConflict {
		t.Errorf("exit code %d", ExitCode(err))
	}
	// kl's own hint on a server's error is the one shown.
	if h := Hint(withHint(err, "only a waiting or active run can be aborted")); h != "only a waiting or active run can be aborted" {
		t.Errorf("hint %q, want kl's", h)
	}
	if h := Hint(err); h != "stop" {
		t.Errorf("hint %q, want the server's", h)
	}
}

// TestExitCodesDocumented: docs/cli.md and kl --help list every exit code
// with the meaning ExitCodes gives it, so neither drifts from the other.
func TestExitCodesDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "cli.md"))
	if err != nil {
		t.Fatal(err)
	}
	help := strings.Join(strings.Fields(Description()), " ")
	for _, e := range ExitCodes {
		if row := fmt.Sprintf("| `%d` | %s |", e.Code, e.Meaning); !strings.Contains(string(doc), row) {
			t.Errorf("docs/cli.md lacks the row %s", row)
		}
		if !strings.Contains(help, fmt.Sprintf("%d %s", e.Code, e.Meaning)) {
			t.Errorf("kl --help lacks exit code %d: %s", e.Code, e.Meaning)
		}
	}
}

package klcli_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/history"
	"github.com/kilolock/kilolock/httpbackend"
	"github.com/kilolock/kilolock/internal/klcli"
)

// TestMoveStates: kl state mv --to-state, split and merge, through kld and
// in-process: what moved, the versions, and what each configuration must
// do; --json for scripts; refusals as errors.
func TestMoveStates(t *testing.T) {
	ctx := context.Background()
	forEachBackend(t, func(t *testing.T, h *harness) {
		seedApp(t, h)
		run := func(json bool, req httpbackend.MoveRequest) (string, error) {
			t.Helper()
			c := h.cli(nil, json)
			c.Conn = h.raw
			var out strings.Builder
			c.Out = &out
			err := c.MoveStates(ctx, req)
			return out.String(), err
		}
		out, err := run(false, httpbackend.MoveRequest{Operation: history.OperationSplit, From: "app", To: "app-net", Addresses: []history.MovePair{{From: "terraform_data.a"}}, DryRun: true})
		if err != nil || !strings.Contains(out, "Would move 1 instance(s) from app to app-net") || !strings.Contains(out, "Dry run: nothing was changed. To do it: run the same command without --dry-run.") {
			t.Fatalf("split dry run: %v\n%s", err, out)
		}
		out, err = run(false, httpbackend.MoveRequest{Operation: history.OperationSplit, From: "app", To: "app-net", Addresses: []history.MovePair{{From: "terraform_data.a"}}})
		if err != nil || !strings.Contains(out, "Written in one transaction: app @4 (source move: 1 instance(s) to app-net @1)") || !strings.Contains(out, "try to create the objects again") {
			t.Fatalf("split: %v\n%s", err, out)
		}
		out, err = run(true, httpbackend.MoveRequest{From: "app-net", To: "app", Addresses: []history.MovePair{{From: "terraform_data.a", To: "terraform_data.a2"}}})
		var res history.MoveResult
		if err != nil || json.Unmarshal([]byte(out), &res) != nil || res.Versions == nil || res.Moved[0].To != "terraform_data.a2" {
			t.Fatalf("mv --json: %v\n%s", err, out)
		}
		_, err = run(false, httpbackend.MoveRequest{From: "app", To: "app-net", Addresses: []history.MovePair{{From: "terraform_data.nope"}}})
		if err == nil || !errors.Is(err, kilolock.ErrInvalid) || klcli.ExitCode(err) != klcli.ExitUsage {
			t.Errorf("unknown address: %v", err)
		}
		// kl history names the other side of each move.
		c := h.cli(nil, false)
		c.Conn = h.raw
		var hist strings.Builder
		c.Out = &hist
		if err := c.History(ctx, "app", kilolock.HistoryOptions{}); err != nil || !strings.Contains(hist.String(), "(1 instance(s) to app-net @1)") || !strings.Contains(hist.String(), "(1 instance(s) from app-net @2)") {
			t.Errorf("kl history app: %v\n%s", err, hist.String())
		}
		out, err = run(false, httpbackend.MoveRequest{Operation: history.OperationMerge, From: "app-net", To: "app", DryRun: true})
		if err == nil {
			t.Errorf("merging an empty state: %s", out)
		}
	})
}

package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kilolock/kilolock/internal/tofu"
)

// retentionVersions is how many versions TestRetentionKill9 writes; it
// keeps the last retentionKeep and the rollback plan's target, @5.
const (
	retentionVersions = 400
	retentionKeep     = 20
)

// TestRetentionKill9 prunes with a real kl process, one version per
// transaction, and kills it with SIGKILL in the middle: every version that
// must be kept (the last ones, the current one, a rollback plan's target)
// is still served byte for byte, every other is either whole or pruned,
// and a second run finishes the work, recorded in history and the audit
// log. Then kld prunes on its own schedule, as kld:retention.
func TestRetentionKill9(t *testing.T) {
	eachStore(t, func(t *testing.T, databaseURL string) {
		srv := setup(t, databaseURL)
		for n := 1; n <= retentionVersions; n++ {
			if code, body := request(t, "POST", srv.StateURL("app"), retentionDoc(n)); code != 200 {
				t.Fatalf("POST @%d: %d %s", n, code, body)
			}
		}
		before := map[int][]byte{}
		for n := 1; n <= retentionVersions; n++ {
			before[n] = getVersion(t, srv, n)
		}
		mustKL(t, "--server", srv.URL, "rollback", "app", "--to", "@5") // a dry run: pins @5
		mustKL(t, "--server", srv.URL, "retention", "set", "--state", "app", "--keep-last", fmt.Sprint(retentionKeep))
		dry := mustKL(t, "--server", srv.URL, "retention", "apply", "--dry-run")
		if want := fmt.Sprintf("@1-@4, @6-@%d", retentionVersions-retentionKeep); !strings.Contains(dry, want) {
			t.Errorf("kl retention apply --dry-run lists:\n%s\nwant %s", dry, want)
		}
		current := before[retentionVersions]
		mustKeep := func(n int) bool { return n == 5 || n > retentionVersions-retentionKeep }

		// kill -9 once the first transactions are committed.
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, tofu.BuildKL(t), "--database", databaseURL, "--actor", "pruner", "retention", "apply", "--batch", "1")
		cmd.Env = tofu.CleanEnv("KL_")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
	poll:
		for prunedCount(t, srv) < 3 {
			select {
			case <-exited:
				break poll
			case <-time.After(2 * time.Millisecond):
			}
		}
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-exited
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
			t.Fatalf("kl retention apply ended before it was killed (%v):\n%s", cmd.ProcessState, out.String())
		}
		cut := settledPrunedCount(t, srv)
		t.Logf("killed kl retention apply after it pruned %d of %d versions", cut, retentionVersions-retentionKeep-1)
		if cut >= retentionVersions-retentionKeep-1 {
			t.Fatalf("kl pruned everything (%d) before it was killed", cut)
		}
		checkKept := func(when string) int {
			t.Helper()
			pruned := 0
			for n := 1; n <= retentionVersions; n++ {
				code, body := request(t, "GET", fmt.Sprintf("%s/v1/api/states/app/versions/%d", srv.URL, n), nil)
				switch {
				case code == 200 && bytes.Equal(body, before[n]):
				case code == 200:
					t.Errorf("%s: @%d changed", when, n)
				case mustKeep(n):
					t.Errorf("%s: @%d, which must be kept, answers %d %s", when, n, code, body)
				case !strings.Contains(string(body), "pruned"):
					t.Errorf("%s: @%d answers %d %s; want it whole or pruned", when, n, code, body)
				default:
					pruned++
				}
			}
			if code, body := request(t, "GET", srv.StateURL("app"), nil); code != 200 || !bytes.Equal(body, current) {
				t.Errorf("%s: the current version's GET differs: %d", when, code)
			}
			return pruned
		}
		if got := checkKept("after kill -9"); got != cut {
			t.Errorf("after kill -9: %d versions answer pruned, %d markers", got, cut)
		}

		// The state still takes writes; a second run finishes.
		if code, body := request(t, "POST", srv.StateURL("app"), retentionDoc(retentionVersions+1)); code != 200 {
			t.Fatalf("POST after the kill: %d %s", code, body)
		}
		current = retentionDoc(retentionVersions + 1)
		mustKL(t, "--database", databaseURL, "--actor", "pruner", "retention", "apply", "--batch", "7")
		// @401 is the newest now: @381 falls out of the last 20.
		keptBefore := mustKeep
		mustKeep = func(n int) bool { return n != retentionVersions-retentionKeep+1 && keptBefore(n) }
		if got, want := checkKept("after the second run"), retentionVersions-retentionKeep; got != want {
			t.Errorf("after the second run %d versions are pruned; want %d", got, want)
		}
		hist := mustKL(t, "--server", srv.URL, "history", "app", "--limit", "30")
		if !strings.Contains(hist, "pruned") || !strings.Contains(hist, "db:pruner") {
			t.Errorf("kl history shows no marker of the pruned versions:\n%s", hist)
		}
		var audit []struct{ Actor, Action, Target, Reason string }
		if err := json.Unmarshal([]byte(mustKL(t, "--database", databaseURL, "audit", "--json", "--limit", "1000")), &audit); err != nil {
			t.Fatal(err)
		}
		prunes := 0
		for _, a := range audit {
			if a.Action == "retention.prune" && a.Actor == "db:pruner" && a.Target == "app" {
				prunes++
			}
		}
		if prunes < cut {
			t.Errorf("the audit log has %d retention.prune entries by db:pruner; want at least one per batch, %d before the kill", prunes, cut)
		}

		// kld on a schedule.
		if err := srv.Stop(); err != nil {
			t.Fatal(err)
		}
		mustKL(t, "--database", databaseURL, "retention", "set", "--state", "app", "--keep-last", "5")
		sched := tofu.StartKLD(t, databaseURL, "--retention-interval", "1s")
		if !sched.WaitLog(t.Context(), "scheduled retention", time.Minute) {
			t.Fatalf("kld logged no scheduled retention:\n%s", sched.Log())
		}
		var pr struct {
			Pruned []struct {
				From, To int64
				PrunedBy string `json:"pruned_by"`
			}
		}
		if err := json.Unmarshal([]byte(mustKL(t, "--server", sched.URL, "retention", "pruned", "app", "--json")), &pr); err != nil {
			t.Fatal(err)
		}
		if len(pr.Pruned) == 0 || pr.Pruned[0].PrunedBy != "kld:retention" || pr.Pruned[0].To != retentionVersions-4 {
			t.Errorf("kld's scheduled pruning left markers %+v; want the newest pruned by kld:retention up to @%d", pr.Pruned, retentionVersions-4)
		}
	})
}

// retentionDoc is version n of a state of 30 instances, one of which
// changes with each version.
func retentionDoc(n int) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, `{"version":4,"terraform_version":"1.9.0","serial":%d,"lineage":"retention","outputs":{"n":{"value":%d,"type":"number"}},"resources":[{"mode":"managed","type":"terraform_data","name":"r","provider":"provider[\"terraform.io/builtin/terraform\"]","instances":[`, n, n)
	for i := range 30 {
		v := i
		if i == n%30 {
			v = 1000 + n
		}
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"index_key":%d,"schema_version":0,"attributes":{"id":"%d","input":%d},"sensitive_attributes":[]}`, i, i, v)
	}
	b.WriteString(`]}],"check_results":null}` + "\n")
	return []byte(b.String())
}

// getVersion returns the bytes of version n of state app.
func getVersion(t *testing.T, srv *tofu.Server, n int) []byte {
	t.Helper()
	code, body := request(t, "GET", fmt.Sprintf("%s/v1/api/states/app/versions/%d", srv.URL, n), nil)
	if code != 200 {
		t.Fatalf("GET @%d: %d %s", n, code, body)
	}
	return body
}

// prunedCount is how many versions of state app are pruned.
// settledPrunedCount is prunedCount once it stops moving: a COMMIT the
// database received before the client was killed still completes (on
// PostgreSQL the server finishes it whether or not anyone reads the
// answer), so the count read at the moment of the kill may be one batch
// short.
func settledPrunedCount(t *testing.T, srv *tofu.Server) int {
	t.Helper()
	n := prunedCount(t, srv)
	for {
		time.Sleep(time.Second)
		m := prunedCount(t, srv)
		if m == n {
			return n
		}
		n = m
	}
}

func prunedCount(t *testing.T, srv *tofu.Server) int {
	t.Helper()
	code, body := request(t, "GET", srv.URL+"/v1/api/states/app/pruned?limit=1000", nil)
	if code != 200 {
		t.Fatalf("GET pruned: %d %s", code, body)
	}
	var pr struct{ Pruned []struct{ Versions int } }
	if err := json.Unmarshal(body, &pr); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range pr.Pruned {
		n += p.Versions
	}
	return n
}

package klcli_test

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/charmbracelet/log"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/client"
	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/graph/graphtest"
	"github.com/kilolock/kilolock/httpbackend"
	"github.com/kilolock/kilolock/internal/klcli"
	"github.com/kilolock/kilolock/quota"
	"github.com/kilolock/kilolock/tenancy"
)

// sized is a state of n managed instances at serial, of one lineage.
func sized(t testing.TB, n int, serial uint64) []byte {
	t.Helper()
	s, err := graphtest.Decode(graphtest.Generate(n, 200, graph.FormatCompact))
	if err != nil {
		t.Fatal(err)
	}
	s.Serial = serial
	return graphtest.Encode(s, graph.FormatCompact)
}

// planFile is the path of a plan fixture the real OpenTofu CLI made
// (reserve/testdata/plans): "create" creates 5 managed instances,
// "drop_region" deletes one.
func planFile(name string) string {
	return filepath.Join("..", "..", "reserve", "testdata", "plans", name+".json")
}

// TestQuotaCommands drives kl quota set, list, remaining, status and check
// as the operator of a token-mode server and on a database directly
// (SQLite and PostgreSQL): the limits set are the ones writes and plans
// are held to, and the exit codes are 0, 0 with WARN, and 1.
func TestQuotaCommands(t *testing.T) {
	forEachControlTarget(t, func(t *testing.T, s *klSession) {
		ctx := context.Background()
		var ws tenancy.Workspace
		decodeJSON(t, s.kl("workspace", "create", "acme", "--owner", "alice", "--json"), &ws)
		var env tenancy.Environment
		decodeJSON(t, s.kl("env", "create", "--workspace", ws.ID, "prod", "--json"), &env)
		name, _ := tenancy.TenantStateName(ws.ID, env.PublicID, "net")

		s.kl("quota", "set", "--state", "net", "--env", env.PublicID, "--workspace", ws.ID, "--soft", "6", "--hard", "8")
		out := s.kl("quota", "set", "--env", env.PublicID, "--workspace", ws.ID, "--hard", "20")
		if !strings.Contains(out, "The limit of environment "+env.PublicID+" is hard 20.") {
			t.Errorf("kl quota set --env:\n%s", out)
		}
		s.kl("quota", "set", "--workspace", ws.ID, "--default-for", "states", "--unlimited")
		s.kl("quota", "set", "--workspace", ws.ID, "--default-for", "environments", "--hard", "100")
		s.kl("quota", "set", "--workspace", ws.ID, "--default-for", "environments", "--clear")
		var set []kilolock.QuotaSetting
		decodeJSON(t, s.kl("quota", "list", "--json"), &set)
		if len(set) != 3 || set[1].Target != name || set[1].Limit != (quota.Limit{Soft: 6, Hard: 8}) {
			t.Errorf("kl quota list = %+v", set)
		}

		// Writes go through an engine on the same database.
		e := openEngine(t, s.url)
		if _, err := e.Write(ctx, name, sized(t, 5, 1), kilolock.WriteOptions{Actor: "alice"}); err != nil {
			t.Fatal(err)
		}
		var st kilolock.QuotaStatus
		decodeJSON(t, s.kl("quota", "remaining", "--state", name, "--json"), &st)
		if len(st.Counts) != 2 || st.Counts[0].Current != 5 || st.Counts[0].Remaining != 3 || st.Counts[1].Target != env.PublicID || st.Counts[1].Remaining != 15 {
			t.Errorf("kl quota remaining --json = %+v", st)
		}
		out = s.kl("quota", "remaining", "--state", name)
		for _, want := range []string{"SCOPE", "state        " + name + "  5        6     8     3          state", "environment  " + env.PublicID} {
			if !strings.Contains(out, want) {
				t.Errorf("kl quota remaining lacks %q:\n%s", want, out)
			}
		}

		// A plan of +5: 10 of 8, refused; exit 1 with the projected figures.
		out, err := s.run("quota", "check", "--state", name, "--tf-plan-json", planFile("create"))
		if code := klcli.ExitCode(err); code != 1 || !errors.Is(err, kilolock.ErrQuotaExceeded) {
			t.Errorf("kl quota check of +5 at 5 of 8: exit %d (%v), want 1\n%s", code, err, out)
		}
		for _, want := range []string{"creates 5, deletes 0 and replaces 0 managed instance(s) of state " + name + ": +5",
			"FAIL state " + name + ": 10 managed instance(s) would exceed the hard limit of 8 (soft 6) (now 5; limit from state)",
			"OK   environment " + env.PublicID + ": 10 managed instance(s), within hard 20 (10 left)"} {
			if !strings.Contains(out, want) {
				t.Errorf("kl quota check lacks %q:\n%s", want, out)
			}
		}
		if h := klcli.Hint(err); !strings.Contains(h, "kl quota set --state "+name) {
			t.Errorf("hint %q", h)
		}
		// Raised to 12: 10 is past soft 6, a warning, exit 0.
		s.kl("quota", "set", "--state", name, "--soft", "6", "--hard", "12")
		out, err = s.run("quota", "check", "--state", name, "--tf-plan-json", planFile("create"))
		if err != nil || !strings.Contains(out, "WARN state "+name+": 10 managed instance(s) is above the soft limit of 6 (hard 12, 2 left)") {
			t.Errorf("kl quota check past soft: %v\n%s", err, out)
		}
		out, err = s.run("quota", "check", "--state", name, "--tf-plan-json", planFile("drop_region"), "--json")
		decodeJSON(t, out, &st)
		if err != nil || st.Level != quota.Within || st.Delta != -1 || st.Counts[0].Result != 4 {
			t.Errorf("kl quota check --json of -1: %v %+v", err, st)
		}

		// A refused write shows in kl quota status and kl status.
		s.kl("quota", "set", "--state", name, "--hard", "5")
		_, err = e.Write(ctx, name, sized(t, 6, 2), kilolock.WriteOptions{Actor: "bob"})
		if !errors.Is(err, kilolock.ErrQuotaExceeded) {
			t.Fatalf("a write of 6 at a hard limit of 5: %v", err)
		}
		out = s.kl("quota", "status", name)
		if !strings.Contains(out, "latest refusal:") || !strings.Contains(out, "state "+name+": 6 managed instance(s) would exceed the hard limit of 5 (nothing was written, by bob)") {
			t.Errorf("kl quota status:\n%s", out)
		}
		if !strings.Contains(out, "latest warning:  none") {
			t.Errorf("kl quota status shows a warning:\n%s", out)
		}
		if s.target != "server" {
			var cli klcli.CLI
			var b strings.Builder
			cli.Conn, cli.Out = klcli.NewDatabaseConn(e, klcli.HTTPOptions{}), &b
			if err := cli.Status(ctx, name); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(b.String(), "quota refused:") || !strings.Contains(b.String(), "quota:          state "+name+": 5 managed instance(s), within hard 5 (0 left)") {
				t.Errorf("kl status:\n%s", b.String())
			}
		}
	})
}

// TestQuotaSetUsage: kl quota set refuses, before anything is dialed, a
// target or a limit it cannot make sense of.
func TestQuotaSetUsage(t *testing.T) {
	for _, args := range [][]string{
		{"--soft", "1", "--hard", "2"},
		{"--state", "net", "--env", "env_0123456789abcdef", "--hard", "2"},
		{"--state", "net", "--default-for", "states", "--hard", "2"},
		{"--env", "env_0123456789abcdef", "--default-for", "states", "--hard", "2"},
		{"--workspace", "ws_0123456789abcdef", "--hard", "2"},
		{"--workspace", "ws_0123456789abcdef", "--default-for", "modules", "--hard", "2"},
		{"--state", "net"},
		{"--state", "net", "--hard", "2", "--clear"},
		{"--state", "net", "--unlimited", "--clear"},
	} {
		_, err := runKL(t, append([]string{"--server", "http://127.0.0.1:1", "quota", "set"}, args...)...)
		var ue *klcli.UsageError
		if !errors.As(err, &ue) || ue.Hint == "" || klcli.ExitCode(err) != klcli.ExitUsage {
			t.Errorf("kl quota set %v = %v, want a usage error", args, err)
		}
	}
	if _, err := runKL(t, "--server", "http://127.0.0.1:1", "quota", "check", "--state", "x"); klcli.ExitCode(err) != klcli.ExitUsage {
		t.Errorf("kl quota check without a plan = %v", err)
	}
}

// initialized writes dir's .terraform/terraform.tfstate as tofu init does
// for an http backend on address with config's extra attributes.
func initialized(t *testing.T, address, extra string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, ".terraform"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := `{"version":3,"backend":{"type":"http","config":{"address":"` + address + `","lock_address":"` + address + `"` + extra + `},"hash":1}}`
	if err := os.WriteFile(filepath.Join(dir, ".terraform", "terraform.tfstate"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestQuotaCheckFindsTheBackend: without --state, kl quota check asks the
// state of the directory's initialized backend at its own address, with
// the backend's credentials: on an open server, and on the authenticated
// lane with the configuration's automation token.
func TestQuotaCheckFindsTheBackend(t *testing.T) {
	ctx := context.Background()
	t.Run("local lane", func(t *testing.T) {
		e := openEngine(t, sqliteURL(t))
		srv := httptest.NewServer(httpbackend.New(e, httpbackend.Options{Logger: log.New(io.Discard)}))
		t.Cleanup(srv.Close)
		if _, err := e.Write(ctx, "demo", sized(t, 2, 1), kilolock.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := runKL(t, "--server", srv.URL, "quota", "set", "--state", "demo", "--hard", "6"); err != nil {
			t.Fatal(err)
		}
		dir := initialized(t, srv.URL+"/v1/states/demo", "")
		out, err := runKL(t, "quota", "check", "--dir", dir, "--tf-plan-json", planFile("create"))
		if klcli.ExitCode(err) != 1 || !strings.Contains(out, "FAIL state demo: 7 managed instance(s) would exceed the hard limit of 6 (now 2; limit from state)") {
			t.Errorf("kl quota check in an initialized directory: %v\n%s", err, out)
		}
		out, err = runKL(t, "quota", "remaining", "--dir", dir)
		if err != nil || !strings.Contains(out, "demo    2        -     6     4          state") {
			t.Errorf("kl quota remaining in an initialized directory: %v\n%s", err, out)
		}
	})
	t.Run("authenticated lane", func(t *testing.T) {
		url := sqliteURL(t)
		e := openEngine(t, url)
		srv := httptest.NewServer(httpbackend.New(e, httpbackend.Options{Logger: log.New(io.Discard), Auth: httpbackend.AuthToken, OperatorToken: testOperator}))
		t.Cleanup(srv.Close)
		op := []string{"--server", srv.URL, "--token", testOperator}
		var ws tenancy.Workspace
		out, err := runKL(t, append(op, "workspace", "create", "acme", "--owner", "alice", "--json")...)
		if err != nil {
			t.Fatal(err)
		}
		decodeJSON(t, out, &ws)
		var env tenancy.Environment
		out, _ = runKL(t, append(op, "env", "create", "--workspace", ws.ID, "prod", "--json")...)
		decodeJSON(t, out, &env)
		var tok client.IssuedToken
		out, _ = runKL(t, append(op, "token", "issue", "--env", env.PublicID, "--scope", "read", "--json")...)
		decodeJSON(t, out, &tok)
		if _, err := runKL(t, append(op, "quota", "set", "--env", env.PublicID, "--workspace", ws.ID, "--soft", "3", "--hard", "9")...); err != nil {
			t.Fatal(err)
		}
		dir := initialized(t, srv.URL+"/v1/states/"+ws.ID+"/"+env.PublicID+"/net", `,"username":"`+ws.ID+`","password":"`+tok.Secret+`"`)
		out, err = runKL(t, "quota", "check", "--dir", dir, "--tf-plan-json", planFile("create"))
		if err != nil || !strings.Contains(out, "WARN environment "+env.PublicID+": 5 managed instance(s) is above the soft limit of 3 (hard 9, 4 left) (now 0; limit from environment)") {
			t.Errorf("kl quota check with the backend's read token: %v\n%s", err, out)
		}
		t.Setenv("TF_HTTP_PASSWORD", "klt_not-a-token")
		dir = initialized(t, srv.URL+"/v1/states/"+ws.ID+"/"+env.PublicID+"/net", `,"username":"`+ws.ID+`"`)
		if _, err := runKL(t, "quota", "check", "--dir", dir, "--tf-plan-json", planFile("create")); !strings.Contains(err.Error(), "credentials_invalid") && !strings.Contains(err.Error(), "unknown or revoked") {
			t.Errorf("kl quota check with TF_HTTP_PASSWORD of no token: %v, want the lane's refusal", err)
		}
	})
}

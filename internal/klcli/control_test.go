package klcli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
	"github.com/charmbracelet/log"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/httpbackend"
	"github.com/kilolock/kilolock/internal/klcli"
)

const testOperator = "klo_kl-test-operator"

// runKL parses args as kl does and runs the command, returning its output.
func runKL(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var app klcli.App
	var out bytes.Buffer
	app.Out = &out
	ctx := context.Background()
	parser, err := kong.New(&app, kong.Vars{"default_server": "http://127.0.0.1:1"}, kong.BindTo(ctx, (*context.Context)(nil)))
	if err != nil {
		t.Fatal(err)
	}
	kctx, err := parser.Parse(args)
	if err != nil {
		t.Fatalf("parse %v: %v", args, err)
	}
	app.Out = &out
	err = kctx.Run(&app.Globals)
	return out.String(), err
}

// TestControlCommands drives the tenancy commands against a server in
// token mode, as the operator.
func TestControlCommands(t *testing.T) {
	e := openEngine(t, sqliteURL(t))
	srv := httptest.NewServer(httpbackend.New(e, httpbackend.Options{
		Logger:        log.New(io.Discard),
		Auth:          httpbackend.AuthToken,
		OperatorToken: testOperator,
	}))
	t.Cleanup(srv.Close)
	kl := func(args ...string) string {
		t.Helper()
		out, err := runKL(t, append([]string{"--server", srv.URL, "--token", testOperator}, args...)...)
		if err != nil {
			t.Fatalf("kl %v: %v", args, err)
		}
		return out
	}
	decode := func(out string, v any) {
		t.Helper()
		if err := json.Unmarshal([]byte(out), v); err != nil {
			t.Fatalf("output is not JSON: %v\n%s", err, out)
		}
	}

	var ws kilolock.Workspace
	decode(kl("workspace", "create", "acme", "--owner", "alice", "--json"), &ws)
	if !strings.HasPrefix(ws.ID, "ws_") || ws.Name != "acme" {
		t.Fatalf("workspace = %+v", ws)
	}
	if out := kl("workspace", "list"); !strings.Contains(out, ws.ID) {
		t.Errorf("workspace list:\n%s", out)
	}
	var env kilolock.Environment
	decode(kl("env", "create", "--workspace", ws.ID, "prod", "--json"), &env)
	if !strings.HasPrefix(env.PublicID, "env_") || env.Slug != "prod" {
		t.Fatalf("environment = %+v", env)
	}
	var envs []kilolock.Environment
	decode(kl("env", "list", "--workspace", ws.ID, "--json"), &envs)
	if len(envs) != 1 || envs[0].PublicID != env.PublicID {
		t.Errorf("env list = %+v", envs)
	}

	out := kl("token", "issue", "--env", env.PublicID, "--name", "ci")
	if !strings.Contains(out, "klt_") || !strings.Contains(out, "will not be shown again") {
		t.Errorf("token issue:\n%s", out)
	}
	var tokens []kilolock.Token
	decode(kl("token", "list", "--json"), &tokens)
	if len(tokens) != 1 || tokens[0].Name != "ci" {
		t.Errorf("token list = %+v", tokens)
	}
	if out := kl("token", "list"); strings.Contains(out, "klt_") {
		t.Errorf("token list shows a secret:\n%s", out)
	}

	var pat struct {
		ID     string `json:"id"`
		Kind   string `json:"kind"`
		Secret string `json:"secret"`
	}
	decode(kl("pat", "create", "--user", "alice", "--json"), &pat)
	if !strings.HasPrefix(pat.Secret, "klp_") || pat.Kind != "personal" {
		t.Fatalf("pat = %+v", pat)
	}
	var grant kilolock.Grant
	decode(kl("grant", "add", pat.ID, env.PublicID, "--json"), &grant)
	if grant.TokenID != pat.ID || grant.EnvironmentID != env.PublicID {
		t.Errorf("grant = %+v", grant)
	}
	var grants []kilolock.Grant
	decode(kl("grant", "list", pat.ID, "--json"), &grants)
	if len(grants) != 1 || grants[0].EnvironmentID != env.PublicID {
		t.Errorf("grant list = %+v", grants)
	}
	if out := kl("grant", "list", pat.ID); !strings.Contains(out, env.PublicID) {
		t.Errorf("grant list:\n%s", out)
	}
	var members []kilolock.Member
	decode(kl("member", "list", "--workspace", ws.ID, "--json"), &members)
	if len(members) != 1 || members[0].UserID != "alice" {
		t.Errorf("member list = %+v", members)
	}

	// A request with a wrong token is refused, and audited as denied.
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1/api/workspaces", nil)
	req.Header.Set("Authorization", "Bearer klo_wrong")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode < 400 {
		t.Fatalf("wrong token answered %d", resp.StatusCode)
	}
	var denied []kilolock.AuditEntry
	decode(kl("audit", "--denied", "--json"), &denied)
	if len(denied) == 0 {
		t.Fatal("audit --denied lists nothing after a denied request")
	}
	for _, a := range denied {
		if !a.Denied {
			t.Errorf("audit --denied lists an allowed entry: %+v", a)
		}
	}
	var all []kilolock.AuditEntry
	decode(kl("audit", "--json"), &all)
	if len(all) <= len(denied) {
		t.Errorf("audit lists %d entries, denied %d", len(all), len(denied))
	}
	if out := kl("audit", "--denied"); !strings.Contains(out, "denied") {
		t.Errorf("audit --denied:\n%s", out)
	}
	if out := kl("pat", "delete", pat.ID); !strings.Contains(out, pat.ID) {
		t.Errorf("pat delete:\n%s", out)
	}
}

// TestControlCommandsNeedServer: with --database the tenancy commands say
// they need a server.
func TestControlCommandsNeedServer(t *testing.T) {
	for _, args := range [][]string{
		{"workspace", "list"},
		{"token", "issue", "--env", "env_x"},
		{"audit", "--denied"},
		{"state", "archive", "--workspace", "ws_x", "--env", "env_x", "app"},
	} {
		_, err := runKL(t, append([]string{"--database", sqliteURL(t)}, args...)...)
		var ue *klcli.UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "needs a server") {
			t.Errorf("kl %v with --database: %v", args, err)
		}
	}
}

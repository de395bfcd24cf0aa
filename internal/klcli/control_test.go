package klcli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
	"github.com/charmbracelet/log"
	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/client"
	"github.com/kilolock/kilolock/httpbackend"
	"github.com/kilolock/kilolock/internal/klcli"
	"github.com/kilolock/kilolock/internal/testpg"
	"github.com/kilolock/kilolock/store"
	"github.com/kilolock/kilolock/tenancy"
	"github.com/kilolock/kilolock/tenancy/trust"
)

const testOperator = "klo_kl-test-operator"

// runKL parses args as kl does and runs the command, returning its output.
func runKL(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var app klcli.App
	var out bytes.Buffer
	app.Out = &out
	ctx := context.Background()
	parser, err := kong.New(&app, klcli.Vars(), kong.BindTo(ctx, (*context.Context)(nil)))
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

// klSession is kl pointed at one control target.
type klSession struct {
	t      *testing.T
	target string   // "server", "sqlite" or "postgres"
	global []string // kl's global flags
	url    string   // the store's URL
}

// run runs one kl command there.
func (s *klSession) run(args ...string) (string, error) {
	s.t.Helper()
	return runKL(s.t, append(slices.Clone(s.global), args...)...)
}

// kl runs one kl command there and fails the test on an error.
func (s *klSession) kl(args ...string) string {
	s.t.Helper()
	out, err := s.run(args...)
	if err != nil {
		s.t.Fatalf("kl %v: %v", args, err)
	}
	return out
}

// controlTargets are the ways every tenancy command must work alike, each
// on a store of its own: a token-mode server (on SQLite) as its operator,
// and a database directly, SQLite and PostgreSQL.
var controlTargets = []struct {
	name string
	open func(t *testing.T) (global []string, url string)
}{
	{"server", func(t *testing.T) ([]string, string) {
		url := sqliteURL(t)
		srv := httptest.NewServer(httpbackend.New(openEngine(t, url), httpbackend.Options{
			Logger:        log.New(io.Discard),
			Auth:          httpbackend.AuthToken,
			OperatorToken: testOperator,
		}))
		t.Cleanup(srv.Close)
		return []string{"--server", srv.URL, "--token", testOperator}, url
	}},
	{"sqlite", func(t *testing.T) ([]string, string) {
		url := sqliteURL(t)
		return []string{"--database", url}, url
	}},
	{"postgres", func(t *testing.T) ([]string, string) {
		url := testpg.URL(t)
		return []string{"--database", url}, url
	}},
}

// forEachControlTarget runs f once per control target.
func forEachControlTarget(t *testing.T, f func(t *testing.T, s *klSession)) {
	for _, ct := range controlTargets {
		t.Run(ct.name, func(t *testing.T) {
			global, url := ct.open(t)
			f(t, &klSession{t: t, target: ct.name, global: global, url: url})
		})
	}
}

func decodeJSON(t *testing.T, out string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
}

// TestControlCommands drives the tenancy commands with --json as the
// operator of a token-mode server and on a database directly (SQLite and
// PostgreSQL).
func TestControlCommands(t *testing.T) {
	forEachControlTarget(t, func(t *testing.T, s *klSession) {
		var ws tenancy.Workspace
		decodeJSON(t, s.kl("workspace", "create", "acme", "--owner", "alice", "--json"), &ws)
		if !strings.HasPrefix(ws.ID, "ws_") || ws.Name != "acme" {
			t.Fatalf("workspace = %+v", ws)
		}
		if out := s.kl("workspace", "list"); !strings.Contains(out, ws.ID) {
			t.Errorf("workspace list:\n%s", out)
		}
		var env tenancy.Environment
		decodeJSON(t, s.kl("env", "create", "--workspace", ws.ID, "prod", "--json"), &env)
		if !strings.HasPrefix(env.PublicID, "env_") || env.Slug != "prod" {
			t.Fatalf("environment = %+v", env)
		}
		var envs []tenancy.Environment
		decodeJSON(t, s.kl("env", "list", "--workspace", ws.ID, "--json"), &envs)
		if len(envs) != 1 || envs[0].PublicID != env.PublicID {
			t.Errorf("env list = %+v", envs)
		}

		var auto client.IssuedToken
		decodeJSON(t, s.kl("token", "issue", "--env", env.PublicID, "--name", "ci", "--json"), &auto)
		if !strings.HasPrefix(auto.Secret, "klt_") || auto.Scope != tenancy.ScopeReadWrite || auto.EnvironmentID != env.PublicID {
			t.Errorf("token issue = %+v", auto)
		}
		var tokens []tenancy.Token
		decodeJSON(t, s.kl("token", "list", "--json"), &tokens)
		if len(tokens) != 1 || tokens[0].Name != "ci" {
			t.Errorf("token list = %+v", tokens)
		}
		if out := s.kl("token", "list"); strings.Contains(out, "klt_") {
			t.Errorf("token list shows a secret:\n%s", out)
		}

		var pat client.IssuedToken
		decodeJSON(t, s.kl("pat", "create", "--user", "alice", "--json"), &pat)
		if !strings.HasPrefix(pat.Secret, "klp_") || pat.Kind != tenancy.TokenPersonal {
			t.Fatalf("pat = %+v", pat)
		}
		var grant tenancy.Grant
		decodeJSON(t, s.kl("grant", "add", pat.ID, env.PublicID, "--json"), &grant)
		if grant.TokenID != pat.ID || grant.EnvironmentID != env.PublicID {
			t.Errorf("grant = %+v", grant)
		}
		var grants []tenancy.Grant
		decodeJSON(t, s.kl("grant", "list", pat.ID, "--json"), &grants)
		if len(grants) != 1 || grants[0].EnvironmentID != env.PublicID {
			t.Errorf("grant list = %+v", grants)
		}
		if out := s.kl("grant", "list", pat.ID); !strings.Contains(out, env.PublicID) {
			t.Errorf("grant list:\n%s", out)
		}
		var members []tenancy.Member
		decodeJSON(t, s.kl("member", "list", "--workspace", ws.ID, "--json"), &members)
		if len(members) != 1 || members[0] != (tenancy.Member{UserID: "alice", Role: tenancy.RoleOwner}) {
			t.Errorf("member list = %+v", members)
		}
		var held map[string]string
		decodeJSON(t, s.kl("state", "archive", "--workspace", ws.ID, "--env", env.PublicID, "app", "--json"), &held)
		if held["state"] != "app" || held["lifecycle"] != "archived" {
			t.Errorf("state archive = %v", held)
		}

		// The store keeps the tokens' hashes, by which their secrets find
		// them.
		st, err := store.Open(context.Background(), s.url)
		if err != nil {
			t.Fatal(err)
		}
		for _, tok := range []client.IssuedToken{auto, pat} {
			got, err := st.(tenancy.TenantStore).TokenByHash(context.Background(), tenancy.HashSecret(tok.Secret))
			if err != nil || got.ID != tok.ID {
				t.Errorf("the secret of %s finds %+v, %v", tok.ID, got, err)
			}
		}
		st.Close()

		var all []kilolock.AuditEntry
		decodeJSON(t, s.kl("audit", "--json"), &all)
		wantActor := "operator"
		if s.target != "server" {
			wantActor = "db:kl"
		}
		if len(all) != 6 {
			t.Errorf("audit lists %d entries, want 6: %+v", len(all), all)
		}
		for _, a := range all {
			if a.Actor != wantActor || a.Denied || a.From == "" {
				t.Errorf("audit entry %+v, want by %s", a, wantActor)
			}
		}
		if out := s.kl("pat", "delete", pat.ID); !strings.Contains(out, pat.ID) {
			t.Errorf("pat delete:\n%s", out)
		}
	})
}

// TestControlCommandsAuditDenials: a request refused by a server is
// audited as denied, and kl audit --denied lists only such.
func TestControlCommandsAuditDenials(t *testing.T) {
	global, url := controlTargets[0].open(t)
	s := &klSession{t: t, target: "server", global: global, url: url}
	req, _ := http.NewRequest(http.MethodGet, global[1]+"/v1/api/workspaces", nil)
	req.Header.Set("Authorization", "Bearer klo_wrong")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode < 400 {
		t.Fatalf("wrong token answered %d", resp.StatusCode)
	}
	s.kl("workspace", "create", "acme")
	var denied []kilolock.AuditEntry
	decodeJSON(t, s.kl("audit", "--denied", "--json"), &denied)
	if len(denied) == 0 {
		t.Fatal("audit --denied lists nothing after a denied request")
	}
	for _, a := range denied {
		if !a.Denied {
			t.Errorf("audit --denied lists an allowed entry: %+v", a)
		}
	}
	var all []kilolock.AuditEntry
	decodeJSON(t, s.kl("audit", "--json"), &all)
	if len(all) != len(denied)+1 {
		t.Errorf("audit lists %d entries, denied %d", len(all), len(denied))
	}
	if out := s.kl("audit", "--denied"); !strings.Contains(out, "denied") {
		t.Errorf("audit --denied:\n%s", out)
	}
}

// TestControlCommandsDatabaseActor: on a database, a change is audited as
// "db:" and --actor (KL_ACTOR), from kl on this host.
func TestControlCommandsDatabaseActor(t *testing.T) {
	db := sqliteURL(t)
	if _, err := runKL(t, "--database", db, "--actor", "alice", "workspace", "create", "acme"); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KL_ACTOR", "bob")
	if _, err := runKL(t, "--database", db, "workspace", "create", "globex"); err != nil {
		t.Fatal(err)
	}
	out, err := runKL(t, "--database", db, "audit", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var all []kilolock.AuditEntry
	decodeJSON(t, out, &all)
	if len(all) != 2 || all[1].Actor != "db:alice" || all[0].Actor != "db:bob" || !strings.HasPrefix(all[0].From, "kl") {
		t.Errorf("audit = %+v", all)
	}
}

// TestControlCommandsBothTargets: naming a server and a database is
// refused before anything is dialed or opened.
func TestControlCommandsBothTargets(t *testing.T) {
	_, err := runKL(t, "--server", "http://127.0.0.1:1", "--database", sqliteURL(t), "workspace", "list")
	if klcli.ExitCode(err) != klcli.ExitUsage {
		t.Errorf("err = %v, want a usage error", err)
	}
}

var (
	transcriptID     = regexp.MustCompile(`\b(ws|env|tok)_[0-9a-f]{16}\b`)
	transcriptSecret = regexp.MustCompile(`\b(kl[tp]_)[0-9a-f]{64}\b`)
	transcriptTime   = regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ|"\d{4}-\d\d-\d\dT[0-9:.]+(Z|[+-]\d\d:\d\d)"`)
)

// normalizeTranscript replaces what differs from run to run by what has
// the same width: the n-th id of a kind by ws_000…n, secrets by zeros,
// times by the year 2000.
func normalizeTranscript(s string) string {
	ids := map[string]string{}
	s = transcriptID.ReplaceAllStringFunc(s, func(id string) string {
		if _, ok := ids[id]; !ok {
			prefix, _, _ := strings.Cut(id, "_")
			n := 1
			for _, v := range ids {
				if strings.HasPrefix(v, prefix+"_") {
					n++
				}
			}
			ids[id] = fmt.Sprintf("%s_%016x", prefix, n)
		}
		return ids[id]
	})
	s = transcriptSecret.ReplaceAllString(s, "${1}"+strings.Repeat("0", 64))
	return transcriptTime.ReplaceAllStringFunc(s, func(t string) string {
		if strings.HasPrefix(t, `"`) {
			return `"2000-01-01T00:00:00Z"`
		}
		return "2000-01-01 00:00:00Z"
	})
}

// auditRows drops who and where from of an audit table, which differ by
// design (the operator from an address; db:kl from kl on this host), and
// the alignment that depends on them.
func auditRows(out string) string {
	var b strings.Builder
	for i, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		f := strings.Fields(line)
		if i > 0 && len(f) == 7 { // AT is two fields
			f[2], f[6] = "<actor>", "<from>"
		}
		b.WriteString(strings.Join(f, " ") + "\n")
	}
	return b.String()
}

// TestControlTranscript tells one story in text on every control target:
// set a tenant up, use every command, take it down. Each target prints the
// same (testdata/control_transcript.golden), but for generated ids, secrets
// and times, and the audit log's actor and address.
func TestControlTranscript(t *testing.T) {
	first := true
	forEachControlTarget(t, func(t *testing.T, s *klSession) {
		// -update writes the file from the first target; the others are
		// still compared with it.
		defer func(u bool) { *update = u }(*update)
		if !first {
			*update = false
		}
		first = false

		var b strings.Builder
		kl := func(args ...string) string {
			t.Helper()
			out, err := s.run(args...)
			if args[0] == "audit" && err == nil && !slices.Contains(args, "--json") {
				out = auditRows(out)
			}
			fmt.Fprintf(&b, "$ kl %s\n%s", strings.Join(args, " "), out)
			switch code := klcli.ExitCode(err); code {
			case klcli.ExitOK:
			default:
				var rep bytes.Buffer
				klcli.Report(&rep, err)
				msg, _, _ := strings.Cut(rep.String(), "\n")
				fmt.Fprintf(&b, "exit %d: %s\n", code, msg)
			}
			return out
		}
		find := func(out, prefix string) string {
			t.Helper()
			id := regexp.MustCompile(prefix + `_[0-9a-f]{16}`).FindString(out)
			if id == "" {
				t.Fatalf("no %s… id in:\n%s", prefix, out)
			}
			return id
		}

		ws := find(kl("workspace", "create", "acme", "--owner", "alice"), "ws")
		kl("workspace", "create", "")
		kl("workspace", "list") // before the second: it lists by random id
		kl("workspace", "create", "alice", "--kind", "personal", "--json")
		env := find(kl("env", "create", "--workspace", ws, "prod"), "env")
		kl("env", "create", "--workspace", ws, "prod")
		kl("env", "create", "--workspace", ws, "no/slash")
		kl("env", "create", "--workspace", "ws_missing", "prod")
		kl("env", "list", "--workspace", ws)
		kl("env", "list", "--workspace", ws, "--json")
		kl("env", "config", "--workspace", ws, env, "--require-client-encryption")
		kl("env", "config", "--workspace", ws, env)
		kl("env", "config", "--workspace", ws, "env_missing", "--require-client-encryption")
		kl("env", "list", "--workspace", ws)
		kl("env", "config", "--workspace", ws, env, "--no-require-client-encryption", "--json")

		tok := find(kl("token", "issue", "--env", env, "--name", "ci", "--scope", "read"), "tok")
		kl("token", "issue", "--env", "env_missing")
		kl("token", "list")
		// Tokens list by their random ids: the one that expires comes after
		// the first listing, and the last listing shows only it.
		kl("token", "issue", "--env", env, "--name", "quarter", "--expires-in", "90d")
		kl("token", "issue", "--env", env, "--expires-in", "soon")
		kl("token", "issue", "--env", env, "--expires-in", "213503983d")
		kl("pat", "create", "--user", "alice", "--expires-in", "99999999999d")
		pat := find(kl("pat", "create", "--user", "alice", "--name", "laptop"), "tok")
		kl("pat", "list")
		kl("pat", "list", "--json")
		kl("grant", "add", pat, env)
		kl("grant", "add", tok, env)
		kl("grant", "list", pat)

		kl("member", "add", "--workspace", ws, "bob", "--role", "admin")
		kl("member", "add", "--workspace", ws, "carol")
		kl("member", "list", "--workspace", ws)
		kl("member", "remove", "--workspace", ws, "bob")
		kl("member", "remove", "--workspace", ws, "bob")
		kl("member", "list", "--workspace", ws, "--json")

		kl("workspace", "suspend", ws)
		kl("workspace", "resume", ws, "--json")
		kl("workspace", "suspend", "ws_missing")
		kl("state", "archive", "--workspace", ws, "--env", env, "app")
		kl("state", "restore", "--workspace", ws, "--env", env, "app", "--json")
		kl("state", "archive", "--workspace", "ws_missing", "--env", env, "app")

		kl("grant", "revoke", pat, env)
		kl("grant", "revoke", pat, env)
		kl("grant", "list", pat)
		kl("token", "revoke", tok)
		kl("pat", "delete", pat, "--json")
		kl("pat", "delete", pat)
		kl("token", "list")
		kl("audit")
		kl("audit", "--limit", "2")
		kl("audit", "--denied")

		golden(t, "control_transcript", normalizeTranscript(b.String()))
	})
}

// TestWhoami: kl whoami tells a token's holder what it reaches, alike on
// a server (GET /v1/whoami, authenticated by the token itself) and on a
// database: the environments with their backend paths and access, the
// grants that reach nothing and why, and the expiry.
func TestWhoami(t *testing.T) {
	forEachControlTarget(t, func(t *testing.T, s *klSession) {
		var ws, other tenancy.Workspace
		decodeJSON(t, s.kl("workspace", "create", "acme", "--owner", "alice", "--json"), &ws)
		decodeJSON(t, s.kl("workspace", "create", "globex", "--owner", "bob", "--json"), &other)
		var env, theirs tenancy.Environment
		decodeJSON(t, s.kl("env", "create", "--workspace", ws.ID, "prod", "--json"), &env)
		decodeJSON(t, s.kl("env", "create", "--workspace", other.ID, "prod", "--json"), &theirs)
		var pat, auto client.IssuedToken
		decodeJSON(t, s.kl("pat", "create", "--user", "alice", "--expires-in", "30d", "--json"), &pat)
		decodeJSON(t, s.kl("token", "issue", "--env", env.PublicID, "--scope", "read", "--json"), &auto)
		s.kl("grant", "add", pat.ID, env.PublicID)
		s.kl("grant", "add", pat.ID, theirs.PublicID) // alice is no member of globex

		out := s.kl("--token", pat.Secret, "whoami")
		for _, want := range []string{
			"Token " + pat.ID + " (personal access token of alice); expires ",
			env.PublicID, "read-write", "/v1/states/" + ws.ID + "/" + env.PublicID + "/{state_name}",
			"Its grant to " + theirs.PublicID + " reaches nothing: alice is not a member",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("kl whoami (PAT) lacks %q:\n%s", want, out)
			}
		}
		if strings.Contains(out, "/v1/states/"+other.ID) || strings.Contains(out, pat.Secret) {
			t.Errorf("kl whoami shows a path it cannot use, or the secret:\n%s", out)
		}
		var r tenancy.Reach
		decodeJSON(t, s.kl("--token", auto.Secret, "whoami", "--json"), &r)
		if r.Token.ID != auto.ID || len(r.Environments) != 1 || r.Environments[0].Writable || r.Expired {
			t.Errorf("kl whoami --json (read token) = %+v", r)
		}
		// An outputs token is told the outputs-only address it may read.
		var outputs client.IssuedToken
		decodeJSON(t, s.kl("token", "issue", "--env", env.PublicID, "--scope", "outputs", "--json"), &outputs)
		out = s.kl("--token", outputs.Secret, "whoami")
		for _, want := range []string{"(automation token, outputs)", "outputs ", "/v1/states/" + ws.ID + "/" + env.PublicID + "/{state_name}/outputs"} {
			if !strings.Contains(out, want) {
				t.Errorf("kl whoami (outputs token) lacks %q:\n%s", want, out)
			}
		}
		if _, err := s.run("--token", "klt_nope", "whoami"); klcli.ExitCode(err) == klcli.ExitOK {
			t.Error("kl whoami with an unknown token succeeded")
		}
	})
}

// TestTrustCommands drives kl trust add|list|remove as the operator of a
// token-mode server and on a database directly (SQLite and PostgreSQL):
// add prints the id, list shows the policy as given, remove takes it away,
// each change audited; bad input is refused, nothing stored.
func TestTrustCommands(t *testing.T) {
	forEachControlTarget(t, func(t *testing.T, s *klSession) {
		var ws tenancy.Workspace
		decodeJSON(t, s.kl("workspace", "create", "acme", "--json"), &ws)
		var env tenancy.Environment
		decodeJSON(t, s.kl("env", "create", "--workspace", ws.ID, "prod", "--json"), &env)

		out := s.kl("trust", "add", "--env", env.PublicID, "--issuer", "https://token.actions.githubusercontent.com",
			"--audience", "https://kl.example.com", "--claim", "repository=org/app", "--claim", "environment=prod,eu",
			"--claim-glob", "ref=refs/heads/*", "--scope", "read-write", "--state", "app-*", "--max-ttl", "15m")
		id, _, _ := strings.Cut(out, "\n")
		if !regexp.MustCompile(`^trs_[0-9a-f]{16}$`).MatchString(id) {
			t.Fatalf("kl trust add printed %q first, want the policy's id:\n%s", id, out)
		}
		var got []trust.Policy
		decodeJSON(t, s.kl("trust", "list", "--json"), &got)
		if len(got) != 1 || got[0].ID != id || got[0].Claims["environment"] != "prod,eu" || got[0].ClaimGlobs["ref"] != "refs/heads/*" ||
			got[0].Scope != tenancy.ScopeReadWrite || got[0].StatePattern != "app-*" || got[0].MaxTTL.String() != "15m0s" {
			t.Errorf("trust list = %+v", got)
		}
		if out := s.kl("trust", "list", "--env", env.PublicID); !strings.Contains(out, id) || !strings.Contains(out, "repository=org/app") || !strings.Contains(out, "ref~refs/heads/*") {
			t.Errorf("trust list:\n%s", out)
		}
		for _, bad := range [][]string{
			{"--issuer", "http://insecure.example.com", "--claim", "repository=org/app"},
			{"--issuer", "https://gitlab.com"}, // no claim: every job of the issuer
			{"--issuer", "https://gitlab.com", "--claim", "project_path"},
			{"--issuer", "https://gitlab.com", "--claim", "project_path=g/app", "--max-ttl", "2d"},
		} {
			args := append([]string{"trust", "add", "--env", env.PublicID, "--audience", "a", "--scope", "read"}, bad...)
			if _, err := s.run(args...); err == nil {
				t.Errorf("kl %v succeeded", args)
			}
		}
		if _, err := s.run("trust", "add", "--env", "env_0123456789abcdef", "--issuer", "https://gitlab.com", "--audience", "a",
			"--claim", "project_path=g/app", "--scope", "read"); err == nil || !strings.Contains(err.Error(), "no environment") {
			t.Errorf("a policy of a missing environment: %v", err)
		}
		if out := s.kl("trust", "remove", id); !strings.Contains(out, "Removed trust policy "+id) {
			t.Errorf("kl trust remove: %s", out)
		}
		if _, err := s.run("trust", "remove", id); err == nil {
			t.Error("removing it again succeeded")
		}
		decodeJSON(t, s.kl("trust", "list", "--json"), &got)
		if len(got) != 0 {
			t.Errorf("trust list after the removal = %+v", got)
		}
		var audit []kilolock.AuditEntry
		decodeJSON(t, s.kl("audit", "--json"), &audit)
		actions := map[string]bool{}
		for _, e := range audit {
			if strings.HasPrefix(e.Target, id) {
				actions[e.Action] = true
			}
		}
		if !actions["trust.add"] || !actions["trust.remove"] || len(actions) != 2 {
			t.Errorf("audit of %s: %v, want trust.add and trust.remove", id, actions)
		}
	})
}

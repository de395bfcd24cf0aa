package e2e_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kilolock/kilolock/internal/tofu"
	"github.com/kilolock/kilolock/tenancy"
)

// The checklist of the authenticated lane: one test per scenario, each
// driving the real OpenTofu CLI against kld --auth=token on both stores and
// asserting tofu's exit code and the reason kld logs for every refusal.
//
// What OpenTofu (v1.10) does with the lane's answers, which the tests rely
// on (internal/backend/remote-state/http/client.go):
//
//   - it never retries a 4xx: a refusal fails the command at once;
//   - 401 and 403 print no number: "HTTP remote state endpoint requires
//     auth" and "… invalid auth", on GET (init, refresh) and LOCK alike;
//   - a 404 on GET is "no state yet": tofu init exits 0 against a
//     workspace or environment kld does not serve, and the refusal shows
//     only in kld's log until the first LOCK, which prints "Unexpected HTTP
//     response code 404";
//   - a refused state upload prints "HTTP error: NNN", a refused UNLOCK
//     "Unexpected HTTP response code NNN";
//   - a 423 prints the holder's lock info.
//
// A 409 (an optimistic write refused) is covered by TestParallelOverlap.

// denialStatus is the status kld answers each refusal reason with.
var denialStatus = map[string]int{
	"credentials_missing":     http.StatusUnauthorized,
	"credentials_invalid":     http.StatusUnauthorized,
	"grant_missing":           http.StatusForbidden,
	"membership_missing":      http.StatusForbidden,
	"scope_mismatch":          http.StatusForbidden,
	"token_read_only":         http.StatusForbidden,
	"token_outputs_only":      http.StatusForbidden,
	"workspace_suspended":     http.StatusForbidden,
	"state_archived":          http.StatusForbidden,
	"workspace_not_found":     http.StatusNotFound,
	"environment_not_found":   http.StatusNotFound,
	"quota_exceeded":          http.StatusForbidden,    // quota_test.go
	"operator_token_on_state": http.StatusUnauthorized, // operator_test.go
}

// tofuSays is what tofu prints when kld refuses its GET or LOCK with a
// status.
var tofuSays = map[int]string{
	http.StatusUnauthorized: "HTTP remote state endpoint requires auth",
	http.StatusForbidden:    "HTTP remote state endpoint invalid auth",
	http.StatusNotFound:     "Unexpected HTTP response code 404",
}

// checklist is a kld in --auth=token mode with workspace acme (owner
// alice), its environment prod and a read-write automation token for prod:
// where every scenario starts.
type checklist struct {
	srv  *tofu.Server
	ws   string // the workspace id
	env  string // prod's public id
	slug string // prod
	auto credential
}

// credential is an issued token and its secret, shown only at issue.
type credential struct{ ID, Secret string }

func startChecklist(t *testing.T, databaseURL string) *checklist {
	t.Helper()
	srv := tofu.StartKLD(t, databaseURL, "--auth=token", "--operator-token="+operatorSecret)
	return startChecklistOn(t, srv, "acme")
}

// startChecklistOn makes workspace name (owned by alice) with environment
// prod and a read-write token for it on srv.
func startChecklistOn(t *testing.T, srv *tofu.Server, name string) *checklist {
	t.Helper()
	c := &checklist{srv: srv, slug: "prod"}
	var ws struct{ ID string }
	operator(t, srv, "POST", "/v1/api/workspaces", `{"name":"`+name+`","kind":"organization","owner":"alice"}`, http.StatusCreated, &ws)
	var env struct {
		PublicID string `json:"public_id"`
	}
	operator(t, srv, "POST", "/v1/api/workspaces/"+ws.ID+"/environments", `{"slug":"`+c.slug+`"}`, http.StatusCreated, &env)
	c.ws, c.env = ws.ID, env.PublicID
	c.auto = c.automation(t, "read-write")
	return c
}

// automation issues an automation token for prod with scope.
func (c *checklist) automation(t *testing.T, scope string) credential {
	t.Helper()
	var tok credential
	operator(t, c.srv, "POST", "/v1/api/tokens", `{"kind":"automation","environment_id":"`+c.env+`","scope":"`+scope+`"}`, http.StatusCreated, &tok)
	return tok
}

// pat issues a personal access token of user, granted prod when grant.
func (c *checklist) pat(t *testing.T, user string, grant bool) credential {
	t.Helper()
	var tok credential
	operator(t, c.srv, "POST", "/v1/api/tokens", `{"kind":"personal","user_id":"`+user+`"}`, http.StatusCreated, &tok)
	if grant {
		operator(t, c.srv, "PUT", "/v1/api/tokens/"+tok.ID+"/grants/"+c.env, "", http.StatusOK, nil)
	}
	return tok
}

// path is state's path in prod: ws_…/env_…/state.
func (c *checklist) path(state string) string { return c.ws + "/" + c.env + "/" + state }

// internalPath is the path kld's request log shows for state in prod.
func (c *checklist) internalPath(t *testing.T, state string) string {
	t.Helper()
	name, err := tenancy.TenantStateName(c.ws, c.env, state)
	if err != nil {
		t.Fatal(err)
	}
	return "/v1/states/" + name
}

// backendBlock is the http backend block for path with attrs
// (credentials, headers) added.
func (c *checklist) backendBlock(path, attrs string) string { return c.srv.BackendWith(path, attrs) }

// tfdir is a tofu working directory whose main.tf is its backend block and
// a configuration.
type tfdir struct {
	*tofu.Workdir
	backend string
}

func newTFDir(t *testing.T, backend string) *tfdir {
	t.Helper()
	return &tfdir{Workdir: tofu.NewWorkdir(t, backend+smallConfig("v1")), backend: backend}
}

// rev rewrites main.tf with smallConfig(rev), an update of every instance.
func (d *tfdir) rev(rev string) { d.config(smallConfig(rev)) }

// config rewrites main.tf with body after the backend block.
func (d *tfdir) config(body string) { d.WriteFile("main.tf", d.backend+body) }

// withEnv is a directory on path with credentials from TF_HTTP_USERNAME
// and TF_HTTP_PASSWORD; an empty user or secret is not set.
func (c *checklist) withEnv(t *testing.T, path, user, secret string) *tfdir {
	t.Helper()
	d := newTFDir(t, c.backendBlock(path, ""))
	if user != "" {
		d.Setenv("TF_HTTP_USERNAME", user)
	}
	if secret != "" {
		d.Setenv("TF_HTTP_PASSWORD", secret)
	}
	return d
}

// withBlock is a directory on path with the credentials in the backend
// block's username and password.
func (c *checklist) withBlock(t *testing.T, path, user, secret string) *tfdir {
	t.Helper()
	return newTFDir(t, c.backendBlock(path, fmt.Sprintf("    username       = %q\n    password       = %q\n", user, secret)))
}

// withBearer is a directory on path that sends Authorization: Bearer
// secret through the backend block's headers.
func (c *checklist) withBearer(t *testing.T, path, secret string) *tfdir {
	t.Helper()
	return newTFDir(t, c.backendBlock(path, fmt.Sprintf("    headers = {\n      Authorization = %q\n    }\n", "Bearer "+secret)))
}

// pulledSerial is the serial of the state d's backend holds, by tofu state pull.
func pulledSerial(t *testing.T, d *tfdir) uint64 {
	t.Helper()
	return parseState(t, []byte(d.Must("state", "pull"))).Serial
}

// serial is the serial of state in prod, read with the automation token.
func (c *checklist) serial(t *testing.T, state string) uint64 {
	t.Helper()
	code, body := c.stateRequest(t, http.MethodGet, c.path(state), c.ws, c.auto.Secret, "", nil)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", c.path(state), code, body)
	}
	return parseState(t, body).Serial
}

// logEntry is one line of kld's log: its message and logfmt fields.
type logEntry struct {
	line   string
	msg    string // "request denied", "request", …
	fields map[string]string
}

var (
	logHead  = regexp.MustCompile(`^\S+ (?:DEBU|INFO|WARN|ERRO|FATA)\w* ([^=]*?)(?: (\w+=.*))?$`)
	logField = regexp.MustCompile(`(\w+)=("(?:[^"\\]|\\.)*"|\S*)`)
)

// logSince returns the lines kld logged from byte offset mark on.
func logSince(srv *tofu.Server, mark int) []logEntry {
	var out []logEntry
	for line := range strings.Lines(srv.Log()[mark:]) {
		line = strings.TrimRight(line, "\n")
		m := logHead.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		e := logEntry{line: line, msg: m[1], fields: map[string]string{}}
		for _, f := range logField.FindAllStringSubmatch(m[2], -1) {
			v := f[2]
			if u, err := strconv.Unquote(v); err == nil && strings.HasPrefix(v, `"`) {
				v = u
			}
			e.fields[f[1]] = v
		}
		out = append(out, e)
	}
	return out
}

// loggedWithin reports whether kld logs an entry matching match after mark
// within 5 s: kld writes a request's line after its answer, so the line
// may reach the log a moment after the client has the answer.
func loggedWithin(srv *tofu.Server, mark int, match func(logEntry) bool) bool {
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		for _, e := range logSince(srv, mark) {
			if match(e) {
				return true
			}
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// denial is a refusal as kld logged it: its "request denied" line and the
// status of its request line.
type denial struct {
	line      string
	requestID string
	reason    string
	method    string
	status    int
}

// denials returns the refusals kld logged from mark on, whose request line
// is logged too.
func denials(srv *tofu.Server, mark int) []denial {
	entries := logSince(srv, mark)
	status := map[string]int{}
	for _, e := range entries {
		if e.msg == "request" {
			status[e.fields["request_id"]], _ = strconv.Atoi(e.fields["status"])
		}
	}
	var out []denial
	for _, e := range entries {
		if e.msg != "request denied" {
			continue
		}
		id := e.fields["request_id"]
		if st, ok := status[id]; ok {
			out = append(out, denial{line: e.line, requestID: id, reason: e.fields["reason"], method: e.fields["method"], status: st})
		}
	}
	return out
}

// expectDenial waits for kld to log a refusal with reason from mark on
// and checks its status; it fails t when none comes.
func expectDenial(t *testing.T, srv *tofu.Server, mark int, reason string) denial {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := denials(srv, mark)
		for _, d := range got {
			if d.reason == reason {
				if want := denialStatus[reason]; d.status != want {
					t.Errorf("kld refused %s %s with %d, want %d:\n%s", d.method, reason, d.status, want, d.line)
				}
				return d
			}
		}
		if time.Now().After(deadline) {
			var seen []string
			for _, d := range got {
				seen = append(seen, fmt.Sprintf("%s %d reason=%s", d.method, d.status, d.reason))
			}
			t.Errorf("kld logged no refusal with reason=%s; it logged %v", reason, seen)
			return denial{}
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// flat is s with every run of white space one space: tofu wraps its
// diagnostics.
func flat(s string) string { return strings.Join(strings.Fields(s), " ") }

// refused runs tofu with args in d and expects it to exit 1 while kld
// refuses one of its requests with reason; tofu must print what it prints
// for that status. It returns tofu's stderr and the refusal.
func (c *checklist) refused(t *testing.T, d *tfdir, reason string, args ...string) (string, denial) {
	t.Helper()
	mark := len(c.srv.Log())
	_, stderr, code := d.Run(args...)
	if code != 1 {
		t.Errorf("tofu %s: exit %d, want 1 (refused: %s)\n%s", strings.Join(args, " "), code, reason, stderr)
	}
	den := expectDenial(t, c.srv, mark, reason)
	if says := tofuSays[denialStatus[reason]]; !strings.Contains(flat(stderr), says) {
		t.Errorf("tofu %s (refused: %s) does not print %q:\n%s", strings.Join(args, " "), reason, says, stderr)
	}
	return stderr, den
}

// initOn404 runs tofu init in d, whose path kld answers 404 with reason.
// tofu reads a 404 on GET as "no state yet" and exits 0: the refusal shows
// only in kld's log, and the first command that locks fails.
func (c *checklist) initOn404(t *testing.T, d *tfdir, reason string) denial {
	t.Helper()
	mark := len(c.srv.Log())
	if _, stderr, code := d.Run("init", "-no-color"); code != 0 {
		t.Errorf("tofu init: exit %d; want 0 (tofu reads a 404 on GET as no state yet)\n%s", code, stderr)
	}
	den := expectDenial(t, c.srv, mark, reason)
	if den.method != "" && den.method != http.MethodGet {
		t.Errorf("init's refused request is %s, want GET", den.method)
	}
	return den
}

// errorAnswer is the JSON body of a refusal.
type errorAnswer struct {
	Error     string `json:"error"`
	Message   string `json:"message"`
	Hint      string `json:"hint"`
	RequestID string `json:"request_id"`
}

// stateRequest sends method to path of the authenticated lane with basic
// auth and requestID as X-Request-Id, and returns the status and body.
func (c *checklist) stateRequest(t *testing.T, method, path, user, secret, requestID string, body []byte) (int, []byte) {
	t.Helper()
	return send(t, method, c.srv.StateURL(path), body, func(r *http.Request) {
		r.SetBasicAuth(user, secret)
		if requestID != "" {
			r.Header.Set("X-Request-Id", requestID)
		}
	})
}

// control calls the control API with the operator token and returns the
// status and body, whatever the status.
func (c *checklist) control(t *testing.T, method, path string) (int, []byte) {
	t.Helper()
	return send(t, method, c.srv.URL+path, nil, asOperator)
}

// TestAuthChecklist1HappyPath: an automation token and a PAT with a grant
// run init, plan and apply, credentials in the backend block; kld names
// the PAT-backed requests. The Bearer form (the backend's headers) applies
// too.
func TestAuthChecklist1HappyPath(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, databaseURL string) {
		c := startChecklist(t, databaseURL)

		ci := c.withBlock(t, c.path("network"), c.ws, c.auto.Secret)
		ci.Must("init", "-no-color")
		ci.Must("plan", "-no-color")
		if out := ci.Must("apply", "-auto-approve", "-no-color"); !strings.Contains(out, "Apply complete! Resources: 6 added") {
			t.Errorf("apply with an automation token:\n%s", out)
		}
		if got := stateList(t, ci.Workdir); !equalLists(got, smallAddresses) {
			t.Errorf("state list = %q, want %q", got, smallAddresses)
		}

		pat := c.pat(t, "alice", true)
		mark := len(c.srv.Log())
		dev := c.withBlock(t, c.path("app"), c.ws, pat.Secret)
		dev.Must("init", "-no-color")
		dev.Must("plan", "-no-color")
		if out := dev.Must("apply", "-auto-approve", "-no-color"); !strings.Contains(out, "Apply complete! Resources: 6 added") {
			t.Errorf("apply with a granted PAT:\n%s", out)
		}
		if got := pulledSerial(t, dev); got != 1 {
			t.Errorf("serial after the PAT's apply = %d, want 1", got)
		}
		var served int
		for _, e := range logSince(c.srv, mark) {
			if e.msg != "request" || e.fields["path"] != c.internalPath(t, "app") {
				continue
			}
			served++
			if !strings.Contains(e.fields["actor"], "pat:"+pat.ID) {
				t.Errorf("kld does not name the PAT-backed request as pat:%s:\n%s", pat.ID, e.line)
			}
		}
		if served == 0 {
			t.Errorf("kld logged no request for the PAT's state %s", c.internalPath(t, "app"))
		}
		if d := denials(c.srv, mark); len(d) != 0 {
			t.Errorf("kld refused requests on the happy path: %+v", d)
		}

		// Authorization: Bearer through the backend's headers, no username.
		bearer := c.withBearer(t, c.path("bearer"), c.auto.Secret)
		bearer.Must("init", "-no-color")
		bearer.Must("plan", "-no-color")
		bearer.Must("apply", "-auto-approve", "-no-color")
		if got := stateList(t, bearer.Workdir); !equalLists(got, smallAddresses) {
			t.Errorf("state list with the Bearer form = %q, want %q", got, smallAddresses)
		}
	})
}

// TestAuthChecklist2NegativeAuth: a PAT without a grant, a workspace or
// environment that is not the token's, and a revoked PAT are refused with
// their reasons; the revocation takes effect on the very next request and
// touches nothing else.
func TestAuthChecklist2NegativeAuth(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, databaseURL string) {
		c := startChecklist(t, databaseURL)

		ungranted := c.pat(t, "alice", false)
		c.refused(t, c.withEnv(t, c.path("app"), c.ws, ungranted.Secret), "grant_missing", "init", "-no-color")

		const otherWS = "ws_0000000000000000"
		wrongWS := c.withEnv(t, otherWS+"/"+c.env+"/app", otherWS, c.auto.Secret)
		c.initOn404(t, wrongWS, "workspace_not_found")
		c.refused(t, wrongWS, "workspace_not_found", "plan", "-no-color")

		wrongEnv := c.withEnv(t, c.ws+"/env_0000000000000000/app", c.ws, c.auto.Secret)
		c.initOn404(t, wrongEnv, "environment_not_found")
		c.refused(t, wrongEnv, "environment_not_found", "plan", "-no-color")

		// A revoked PAT fails on its very next request: apply's LOCK.
		pat := c.pat(t, "alice", true)
		dev := c.withEnv(t, c.path("shared"), c.ws, pat.Secret)
		dev.Must("init", "-no-color")
		dev.Must("apply", "-auto-approve", "-no-color")
		operator(t, c.srv, "DELETE", "/v1/api/tokens/"+pat.ID, "", http.StatusOK, nil)
		dev.rev("v2")
		if _, den := c.refused(t, dev, "credentials_invalid", "apply", "-auto-approve", "-no-color"); den.method != "" && den.method != "LOCK" {
			t.Errorf("the revoked PAT's first refused request is %s, want apply's LOCK", den.method)
		}

		// The operator and the environment's automation token are untouched.
		var workspaces []struct{ ID string }
		operator(t, c.srv, "GET", "/v1/api/workspaces", "", http.StatusOK, &workspaces)
		if !slices.ContainsFunc(workspaces, func(w struct{ ID string }) bool { return w.ID == c.ws }) {
			t.Errorf("GET /v1/api/workspaces after the revocation does not list %s: %+v", c.ws, workspaces)
		}
		ci := c.withEnv(t, c.path("shared"), c.ws, c.auto.Secret)
		ci.rev("v2")
		ci.Must("init", "-no-color")
		ci.Must("apply", "-auto-approve", "-no-color")
		if got := pulledSerial(t, ci); got != 2 {
			t.Errorf("serial after the automation token's apply = %d, want 2", got)
		}
	})
}

// TestAuthChecklist3Offboarding: removing bob from the workspace refuses
// his PAT at once with membership_missing; adding him back restores it;
// deleting the PAT deletes its grants.
func TestAuthChecklist3Offboarding(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, databaseURL string) {
		c := startChecklist(t, databaseURL)
		members := "/v1/api/workspaces/" + c.ws + "/members/bob"
		operator(t, c.srv, "PUT", members, `{"role":"member"}`, http.StatusOK, nil)
		bob := c.pat(t, "bob", true)
		d := c.withEnv(t, c.path("bob"), c.ws, bob.Secret)
		d.Must("init", "-no-color")
		d.Must("apply", "-auto-approve", "-no-color")

		operator(t, c.srv, "DELETE", members, "", http.StatusOK, nil)
		d.rev("v2")
		c.refused(t, d, "membership_missing", "plan", "-no-color")
		c.refused(t, d, "membership_missing", "apply", "-auto-approve", "-no-color")
		if got := c.serial(t, "bob"); got != 1 {
			t.Errorf("serial after bob's refused apply = %d, want 1", got)
		}

		operator(t, c.srv, "PUT", members, `{"role":"member"}`, http.StatusOK, nil)
		d.Must("plan", "-no-color")
		d.Must("apply", "-auto-approve", "-no-color")

		grants := "/v1/api/tokens/" + bob.ID + "/grants"
		var before []struct {
			EnvironmentID string `json:"environment_id"`
		}
		operator(t, c.srv, "GET", grants, "", http.StatusOK, &before)
		if len(before) != 1 || before[0].EnvironmentID != c.env {
			t.Errorf("GET %s before the deletion = %+v, want one grant to %s", grants, before, c.env)
		}
		operator(t, c.srv, "DELETE", "/v1/api/tokens/"+bob.ID, "", http.StatusOK, nil)
		switch code, body := c.control(t, "GET", grants); code {
		case http.StatusOK:
			var after []json.RawMessage
			if err := json.Unmarshal(body, &after); err != nil || len(after) != 0 {
				t.Errorf("GET %s after deleting the PAT = %s (%v), want no grants", grants, body, err)
			}
			t.Logf("GET %s after deleting the PAT: 200 %s", grants, body)
		case http.StatusNotFound:
			t.Logf("GET %s after deleting the PAT: 404 %s", grants, body)
		default:
			t.Errorf("GET %s after deleting the PAT = %d %s, want 200 with no grants or 404", grants, code, body)
		}
		c.refused(t, d, "credentials_invalid", "plan", "-no-color")
	})
}

// TestAuthChecklist4StatePaths: the environment's slug in place of its
// public id is a 404 environment_not_found whose hint names the public id,
// for a caller that may use the environment only.
func TestAuthChecklist4StatePaths(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, databaseURL string) {
		c := startChecklist(t, databaseURL)
		good := c.withBlock(t, c.path("network"), c.ws, c.auto.Secret)
		good.Must("init", "-no-color")
		good.Must("apply", "-auto-approve", "-no-color")

		slugPath := c.ws + "/" + c.slug + "/network"
		bySlug := c.withBlock(t, slugPath, c.ws, c.auto.Secret)
		c.initOn404(t, bySlug, "environment_not_found")
		if _, den := c.refused(t, bySlug, "environment_not_found", "plan", "-no-color"); den.line != "" && !strings.Contains(den.line, c.env) {
			t.Errorf("kld's refusal of the slug does not name the public id %s:\n%s", c.env, den.line)
		}

		// The answer itself, with the same basic auth.
		code, body := c.stateRequest(t, http.MethodGet, slugPath, c.ws, c.auto.Secret, "e2e-slug-automation", nil)
		var a errorAnswer
		if err := json.Unmarshal(body, &a); err != nil {
			t.Fatalf("GET %s: %d %s: %v", slugPath, code, body, err)
		}
		if code != http.StatusNotFound || a.Error != "environment_not_found" || !strings.Contains(a.Hint, c.env) {
			t.Errorf("GET %s with the automation token = %d %s; want 404 environment_not_found with a hint naming %s", slugPath, code, body, c.env)
		}
		if a.Error == "auth_required" || a.Error == "credentials_missing" {
			t.Errorf("GET %s with credentials answers %s", slugPath, a.Error)
		}

		// A caller with no access to prod learns nothing about it.
		pat := c.pat(t, "alice", false)
		code, body = c.stateRequest(t, http.MethodGet, slugPath, c.ws, pat.Secret, "e2e-slug-ungranted", nil)
		a = errorAnswer{}
		if err := json.Unmarshal(body, &a); err != nil {
			t.Fatalf("GET %s: %d %s: %v", slugPath, code, body, err)
		}
		if code != http.StatusNotFound || a.Error != "environment_not_found" {
			t.Errorf("GET %s with an ungranted PAT = %d %s; want 404 environment_not_found", slugPath, code, body)
		}
		if strings.Contains(string(body), c.env) {
			t.Errorf("GET %s with an ungranted PAT names the public id %s: %s", slugPath, c.env, body)
		}
		ungranted := c.withBlock(t, slugPath, c.ws, pat.Secret)
		c.initOn404(t, ungranted, "environment_not_found")
		if _, den := c.refused(t, ungranted, "environment_not_found", "plan", "-no-color"); strings.Contains(den.line, c.env) {
			t.Errorf("kld's refusal of an ungranted PAT names the public id %s:\n%s", c.env, den.line)
		}
	})
}

// TestAuthChecklist5Lifecycle: a suspended workspace and an archived state
// refuse apply before any change while plan and state pull work; resume
// and restore bring apply back. A hold that lands mid-apply refuses the
// upload but lets tofu release its lock.
func TestAuthChecklist5Lifecycle(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, databaseURL string) {
		c := startChecklist(t, databaseURL)
		d := c.withEnv(t, c.path("network"), c.ws, c.auto.Secret)
		d.Must("init", "-no-color")
		d.Must("apply", "-auto-approve", "-no-color")
		wsPath := "/v1/api/workspaces/" + c.ws
		statePath := wsPath + "/environments/" + c.env + "/states/network"

		holds := []struct {
			reason, hold, release, rev string
		}{
			{"workspace_suspended", wsPath + "/suspend", wsPath + "/resume", "v2"},
			{"state_archived", statePath + "/archive", statePath + "/restore", "v3"},
		}
		for _, h := range holds {
			before := pulledSerial(t, d)
			operator(t, c.srv, "POST", h.hold, "", http.StatusOK, nil)
			d.rev(h.rev)
			if _, den := c.refused(t, d, h.reason, "apply", "-auto-approve", "-no-color"); den.method != "" && den.method != "LOCK" {
				t.Errorf("%s: apply's refused request is %s, want its LOCK", h.reason, den.method)
			}
			if got := pulledSerial(t, d); got != before {
				t.Errorf("%s: serial after the refused apply = %d, want %d", h.reason, got, before)
			}
			mark := len(c.srv.Log())
			if _, stderr, code := d.Run("plan", "-no-color"); code != 0 {
				t.Errorf("%s: tofu plan: exit %d, want 0 (a plan's LOCK and the UNLOCK pass a hold)\n%s", h.reason, code, stderr)
			}
			if den := denials(c.srv, mark); len(den) != 0 {
				t.Errorf("%s: kld refused plan's requests: %+v", h.reason, den)
			}
			operator(t, c.srv, "POST", h.release, "", http.StatusOK, nil)
			d.Must("apply", "-auto-approve", "-no-color")
			if got := pulledSerial(t, d); got != before+1 {
				t.Errorf("%s: serial after the released apply = %d, want %d", h.reason, got, before+1)
			}
		}

		// A suspension that lands while apply runs: the upload is refused
		// (tofu keeps errored.tfstate), the UNLOCK is not, so after resume
		// the saved state can be pushed without a force-unlock.
		slow := c.withEnv(t, c.path("slow"), c.ws, c.auto.Secret)
		slow.config(`
resource "terraform_data" "slow" {
  input = "v1"
  provisioner "local-exec" {
    command = "sleep 3"
  }
}
`)
		slow.Must("init", "-no-color")
		mark := len(c.srv.Log())
		type result struct {
			stderr string
			code   int
		}
		done := make(chan result, 1)
		go func() {
			_, stderr, code := slow.Run("apply", "-auto-approve", "-no-color")
			done <- result{stderr, code}
		}()
		lockLine := "method=LOCK path=" + c.internalPath(t, "slow") + " status=200"
		if !c.srv.WaitLog(t.Context(), lockLine, 30*time.Second) {
			t.Fatalf("kld did not log %q", lockLine)
		}
		operator(t, c.srv, "POST", wsPath+"/suspend", "", http.StatusOK, nil)
		r := <-done
		if r.code != 1 || !strings.Contains(flat(r.stderr), "HTTP error: 403") {
			t.Errorf("apply suspended mid-run: exit %d, want 1 and tofu printing \"HTTP error: 403\"\n%s", r.code, r.stderr)
		}
		if den := expectDenial(t, c.srv, mark, "workspace_suspended"); den.method != "" && den.method != http.MethodPost {
			t.Errorf("the mid-apply refusal is %s, want the state upload (POST)", den.method)
		}
		for _, den := range denials(c.srv, mark) {
			if den.method == "UNLOCK" {
				t.Errorf("kld refused the UNLOCK of a held apply under a hold: %s", den.line)
			}
		}
		if strings.Contains(r.stderr, "Error releasing the state lock") {
			t.Errorf("tofu could not release its lock under the hold:\n%s", r.stderr)
		}
		if _, err := os.Stat(filepath.Join(slow.Dir, "errored.tfstate")); err != nil {
			t.Errorf("tofu kept no errored.tfstate: %v", err)
		}
		operator(t, c.srv, "POST", wsPath+"/resume", "", http.StatusOK, nil)
		if _, stderr, code := slow.Run("state", "push", "-lock-timeout=0s", "errored.tfstate"); code != 0 {
			t.Errorf("tofu state push errored.tfstate after resume: exit %d\n%s", code, stderr)
		} else if got := strings.Fields(slow.Must("state", "list")); !slices.Equal(got, []string{"terraform_data.slow"}) {
			t.Errorf("state list after the push = %q, want terraform_data.slow", got)
		}
	})
}

// TestAuthChecklist6ErrorSurface drives each refusal class through tofu:
// its status, what tofu prints for it, kld's reason, and the audit log
// (kl audit --denied --json) listing every refusal with its reason and
// request id; and a 423, where tofu shows the lock holder.
func TestAuthChecklist6ErrorSurface(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, databaseURL string) {
		c := startChecklist(t, databaseURL)
		start := len(c.srv.Log())
		read := c.automation(t, "read")
		ungranted := c.pat(t, "alice", false)
		const otherWS = "ws_0000000000000000"
		classes := []struct {
			reason string
			dir    func() *tfdir
			// on404 says init passes (tofu reads the GET's 404 as no
			// state); lock says only a command that locks is refused.
			on404, lock bool
		}{
			{reason: "credentials_missing", dir: func() *tfdir { return c.withEnv(t, c.path("s1"), "", "") }},
			{reason: "credentials_invalid", dir: func() *tfdir {
				return c.withEnv(t, c.path("s2"), c.ws, "klt_"+strings.Repeat("0", 64))
			}},
			{reason: "scope_mismatch", dir: func() *tfdir { return c.withEnv(t, c.path("s3"), otherWS, c.auto.Secret) }},
			{reason: "grant_missing", dir: func() *tfdir { return c.withEnv(t, c.path("s4"), c.ws, ungranted.Secret) }},
			{reason: "token_read_only", lock: true, dir: func() *tfdir { return c.withEnv(t, c.path("s5"), c.ws, read.Secret) }},
			{reason: "workspace_not_found", on404: true, dir: func() *tfdir {
				return c.withEnv(t, otherWS+"/"+c.env+"/s6", otherWS, c.auto.Secret)
			}},
			{reason: "environment_not_found", on404: true, dir: func() *tfdir {
				return c.withEnv(t, c.ws+"/env_0000000000000000/s7", c.ws, c.auto.Secret)
			}},
		}
		for _, cl := range classes {
			d := cl.dir()
			var stderr string
			switch {
			case cl.on404:
				c.initOn404(t, d, cl.reason)
				stderr, _ = c.refused(t, d, cl.reason, "plan", "-no-color")
			case cl.lock:
				d.Must("init", "-no-color")
				stderr, _ = c.refused(t, d, cl.reason, "apply", "-auto-approve", "-no-color")
			default:
				stderr, _ = c.refused(t, d, cl.reason, "init", "-no-color")
			}
			t.Logf("%s (%d): tofu printed: %s", cl.reason, denialStatus[cl.reason], firstError(stderr))
		}

		// kl audit lists every refusal kld logged, with its reason and
		// request id.
		logged := denials(c.srv, start)
		out := mustKL(t, "--server", c.srv.URL, "--token", operatorSecret, "audit", "--denied", "--json", "--limit", "1000")
		var audit []struct {
			Denied    bool   `json:"denied"`
			Reason    string `json:"reason"`
			RequestID string `json:"request_id"`
		}
		if err := json.Unmarshal([]byte(out), &audit); err != nil {
			t.Fatalf("kl audit --denied --json: %v\n%s", err, out)
		}
		audited := map[string]string{}
		for _, e := range audit {
			if !e.Denied {
				t.Errorf("kl audit --denied lists an entry that is not a refusal: %+v", e)
			}
			audited[e.RequestID] = e.Reason
		}
		reasons := map[string]bool{}
		for _, d := range logged {
			reasons[d.reason] = true
			if got, ok := audited[d.requestID]; !ok {
				t.Errorf("kl audit --denied does not list request %s (%s)", d.requestID, d.reason)
			} else if got != d.reason {
				t.Errorf("kl audit --denied lists request %s as %s; kld logged %s", d.requestID, got, d.reason)
			}
		}
		for _, cl := range classes {
			if !reasons[cl.reason] {
				t.Errorf("kld logged no %s refusal", cl.reason)
			}
		}

		// 423: another holder's exclusive lock; apply fails at once and
		// tofu shows who holds it.
		ci := c.withEnv(t, c.path("locked"), c.ws, c.auto.Secret)
		ci.Must("init", "-no-color")
		holder := newLock("ci-runner@build-42")
		if code, body := c.stateRequest(t, "LOCK", c.path("locked"), c.ws, c.auto.Secret, "", holder.body()); code != http.StatusOK {
			t.Fatalf("LOCK %s: %d %s", c.path("locked"), code, body)
		}
		mark := len(c.srv.Log())
		began := time.Now()
		_, stderr, code := ci.Run("apply", "-auto-approve", "-no-color", "-lock-timeout=0s")
		took := time.Since(began)
		if code != 1 || took > 20*time.Second {
			t.Errorf("apply against a held lock: exit %d in %s, want 1 at once\n%s", code, took, stderr)
		}
		for _, want := range []string{"Lock Info:", "ID: " + holder.ID, "Who: " + holder.Who, "Operation: OperationTypeApply"} {
			if !strings.Contains(flat(stderr), want) {
				t.Errorf("tofu does not show the holder (%q):\n%s", want, stderr)
			}
		}
		t.Logf("423: tofu printed: %s", firstError(stderr))
		locked := loggedWithin(c.srv, mark, func(e logEntry) bool {
			return e.msg == "request" && e.fields["method"] == "LOCK" && e.fields["status"] == "423" && e.fields["error"] == "locked"
		})
		if !locked {
			t.Error("kld logged no LOCK answered 423 locked")
		}
		if code, body := c.stateRequest(t, "UNLOCK", c.path("locked"), c.ws, c.auto.Secret, "", holder.body()); code != http.StatusOK {
			t.Fatalf("UNLOCK %s: %d %s", c.path("locked"), code, body)
		}
		ci.Must("apply", "-auto-approve", "-no-color", "-lock-timeout=0s")
	})
}

// firstError is the first "Error…" line of tofu's stderr and its message
// line, for the test log.
func firstError(stderr string) string {
	lines := strings.Split(stderr, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "Error") {
			out := strings.TrimSpace(l)
			for _, next := range lines[i+1:] {
				if next = strings.TrimSpace(next); next != "" {
					return out + " / " + next
				}
			}
			return out
		}
	}
	return flat(stderr)
}

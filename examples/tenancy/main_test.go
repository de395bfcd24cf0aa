package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/log"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/store"
	"github.com/kilolock/kilolock/tenancy"
)

// printed is what a team member copies from the service's output.
type printed struct {
	Address, Username, Password string
	Block                       string
}

var (
	addressRe  = regexp.MustCompile(`(?m)^\s+address\s+= "([^"]+)"$`)
	usernameRe = regexp.MustCompile(`(?m)^\s+username\s+= "([^"]+)"$`)
	passwordRe = regexp.MustCompile(`(?m)^export TF_HTTP_PASSWORD=(\S+)$`)
)

// startRun runs the program on a free port over the SQLite file db and
// returns what it printed; the program is stopped, and must shut down
// cleanly, when the test ends.
func startRun(t *testing.T, db string) printed {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	errc := make(chan error, 1)
	go func() {
		err := run(ctx, config{Addr: "127.0.0.1:0", Database: db, Team: "platform", Owner: "alice"}, log.New(io.Discard), pw)
		pw.CloseWithError(err)
		errc <- err
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("run after cancel: %v", err)
		}
	})

	var block strings.Builder
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		block.WriteString(sc.Text() + "\n")
		if strings.HasPrefix(sc.Text(), "export ") {
			break
		}
	}
	go io.Copy(io.Discard, pr) // nothing more is printed; never block run
	var p printed
	p.Block = block.String()
	for _, f := range []struct {
		re  *regexp.Regexp
		dst *string
	}{{addressRe, &p.Address}, {usernameRe, &p.Username}, {passwordRe, &p.Password}} {
		m := f.re.FindStringSubmatch(p.Block)
		if m == nil {
			t.Fatalf("output has no match for %s (scan err %v):\n%s", f.re, sc.Err(), p.Block)
		}
		*f.dst = m[1]
	}
	return p
}

// call sends one request with basic auth (user, password), or a bearer
// token when user is "bearer", or no credentials when password is empty.
func call(t *testing.T, method, url, user, password string, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case password == "":
	case user == "bearer":
		req.Header.Set("Authorization", "Bearer "+password)
	default:
		req.SetBasicAuth(user, password)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, data
}

// errorCode returns the "error" field of a JSON error body.
func errorCode(t *testing.T, body []byte) string {
	t.Helper()
	var e struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatalf("error body is not JSON: %v: %s", err, body)
	}
	return e.Error
}

const stateDoc = `{"version":4,"terraform_version":"1.10.0","serial":1,"lineage":"5d0c8a9e-2b7f-4c1e-9a3d-7e6f5a4b3c21","outputs":{},"resources":[],"check_results":null}`

func TestServe(t *testing.T) {
	p := startRun(t, filepath.Join(t.TempDir(), "tenancy.db"))
	base, _, _ := strings.Cut(p.Address, "/v1/")
	parts := strings.Split(strings.TrimPrefix(p.Address, base+"/v1/states/"), "/")
	if len(parts) != 3 || parts[0] != p.Username || !strings.HasPrefix(parts[0], "ws_") || !strings.HasPrefix(parts[1], "env_") || parts[2] != stateName {
		t.Fatalf("address %s is not %s/v1/states/<username>/env_…/%s", p.Address, base, stateName)
	}
	envID := parts[1]
	for _, want := range []string{`lock_address   = "` + p.Address + `"`, `unlock_address = "` + p.Address + `"`, `lock_method    = "LOCK"`, `unlock_method  = "UNLOCK"`} {
		if !strings.Contains(p.Block, want) {
			t.Errorf("backend block lacks %s:\n%s", want, p.Block)
		}
	}
	if !strings.HasPrefix(p.Password, "klt_") {
		t.Errorf("password %q is not an automation token (klt_…)", p.Password)
	}

	t.Run("the token writes and reads its state", func(t *testing.T) {
		if code, body := call(t, "GET", p.Address, p.Username, p.Password, nil); code != http.StatusNotFound {
			t.Fatalf("GET before the first write: %d, want 404: %s", code, body)
		}
		if code, body := call(t, "POST", p.Address, p.Username, p.Password, []byte(stateDoc)); code != http.StatusOK {
			t.Fatalf("POST: %d %s", code, body)
		}
		if code, body := call(t, "GET", p.Address, p.Username, p.Password, nil); code != http.StatusOK || string(body) != stateDoc {
			t.Fatalf("GET: %d, want 200 and the posted bytes: %s", code, body)
		}
	})

	t.Run("refusals", func(t *testing.T) {
		for _, tc := range []struct {
			name, method, url, user, password string
			status                            int
			code                              string
		}{
			{"wrong password", "GET", p.Address, p.Username, "klt_" + strings.Repeat("0", 64), http.StatusUnauthorized, "credentials_invalid"},
			{"local lane", "GET", base + "/v1/states/" + stateName, p.Username, p.Password, http.StatusUnauthorized, "auth_required"},
			{"no credentials", "POST", p.Address, "", "", http.StatusUnauthorized, "credentials_missing"},
			{"control API with a state token (no operator token set)", "GET", base + "/v1/api/states", "bearer", p.Password, http.StatusForbidden, "control_api_closed"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				code, body := call(t, tc.method, tc.url, tc.user, tc.password, []byte(stateDoc))
				if code != tc.status || errorCode(t, body) != tc.code {
					t.Errorf("%s %s: %d %s, want %d %q", tc.method, tc.url, code, body, tc.status, tc.code)
				}
			})
		}
	})

	t.Run("whoami lists prod", func(t *testing.T) {
		code, body := call(t, "GET", base+"/v1/whoami", "bearer", p.Password, nil)
		if code != http.StatusOK {
			t.Fatalf("whoami: %d %s", code, body)
		}
		var reach tenancy.Reach
		if err := json.Unmarshal(body, &reach); err != nil {
			t.Fatal(err)
		}
		want := "/v1/states/" + p.Username + "/" + envID + "/{state_name}"
		if reach.Expired || len(reach.Environments) != 1 {
			t.Fatalf("whoami: %s", body)
		}
		if e := reach.Environments[0]; e.PublicID != envID || e.Slug != "prod" || e.Path != want || !e.Writable {
			t.Errorf("whoami reaches %+v, want prod (%s) at %s, writable", e, envID, want)
		}
		if left := time.Until(reach.Token.Expires); left < 23*time.Hour || left > 24*time.Hour {
			t.Errorf("token expires in %s, want 24h", left)
		}
	})
}

func TestProvisionTwice(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "tenancy.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ts, ok := st.(tenancy.TenantStore)
	if !ok {
		t.Fatalf("%T is not a tenancy.TenantStore", st)
	}
	ctl := tenancy.NewControl(ts)
	by := kilolock.Caller{Actor: "ci-provisioner", From: "test"}

	first, err := provision(ctx, ctl, by, "platform", "alice")
	if err != nil {
		t.Fatal(err)
	}
	second, err := provision(ctx, ctl, by, "platform", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if first.Workspace.ID != second.Workspace.ID || first.Env.PublicID != second.Env.PublicID {
		t.Errorf("second run provisioned %s/%s, want the first's %s/%s", second.Workspace.ID, second.Env.PublicID, first.Workspace.ID, first.Env.PublicID)
	}
	if first.Secret == second.Secret || first.TokenID == second.TokenID {
		t.Errorf("second run reused token %s: each run issues a fresh one", first.TokenID)
	}
	wss, err := ctl.Workspaces(ctx)
	if err != nil {
		t.Fatal(err)
	}
	envs, err := ctl.Environments(ctx, first.Workspace.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(wss) != 1 || len(envs) != 1 {
		t.Errorf("%d workspaces and %d environments, want one of each", len(wss), len(envs))
	}
	members, err := ctl.Members(ctx, first.Workspace.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(members) != 1 || members[0] != (tenancy.Member{UserID: "alice", Role: tenancy.RoleOwner}) {
		t.Errorf("members %+v, want alice as owner", members)
	}

	entries, err := ctl.Audit(ctx, kilolock.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, e := range entries {
		if e.Actor != by.Actor || e.From != by.From || e.Denied {
			t.Errorf("audit entry %+v is not by %s from %s", e, by.Actor, by.From)
		}
		got[e.Action+" "+e.Target]++
	}
	want := map[string]int{
		"workspace.create " + first.Workspace.ID:   1,
		"environment.create " + first.Env.PublicID: 1,
		"token.issue " + first.TokenID:             1,
		"token.issue " + second.TokenID:            1,
	}
	if len(got) != len(want) || len(entries) != 4 {
		t.Errorf("audit log %v, want %v", got, want)
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("audit log has %s %d times, want %d", k, got[k], n)
		}
	}
}

package e2e_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/internal/tofu"
	"github.com/kilolock/kilolock/tenancy"
)

// The execution-plane checklist's section 7, quotas: one test per item,
// each driving the real OpenTofu CLI (and kl) against a real kld on both
// stores.

// countConfig is var.n terraform_data instances.
const countConfig = `
variable "n" {
  type = number
}

resource "terraform_data" "r" {
  count = var.n
  input = "r-${count.index}"
}
`

// cbdConfig is var.n terraform_data instances replaced, new object first,
// whenever var.rev changes; creating one sleeps var.sleep seconds in a
// provisioner, which OpenTofu runs before it destroys the deposed old
// object. terraform_data.tick, updated in place at once, starts OpenTofu's
// checkpoint clock (its first state update during the apply): the
// replacements' own updates, var.sleep later, are then checkpointed.
const cbdConfig = `
variable "n" {
  type = number
}

variable "rev" {
  type = string
}

variable "sleep" {
  type    = number
  default = 0
}

resource "terraform_data" "tick" {
  input = var.rev
}

resource "terraform_data" "r" {
  count            = var.n
  input            = "r-${count.index}-${var.rev}"
  triggers_replace = var.rev

  lifecycle {
    create_before_destroy = true
  }

  provisioner "local-exec" {
    command = "sleep ${var.sleep}"
  }
}
`

// asOp are kl's flags of the operator of c's server.
func (c *checklist) asOp(args ...string) []string {
	return append([]string{"--server", c.srv.URL, "--token", operatorSecret}, args...)
}

// internal is the internal name of state in prod.
func (c *checklist) internal(t *testing.T, state string) string {
	t.Helper()
	name, err := tenancy.TenantStateName(c.ws, c.env, state)
	if err != nil {
		t.Fatal(err)
	}
	return name
}

// quotaVersion is a version as the API lists it, with its counts.
type quotaVersion struct {
	Number    int64  `json:"number"`
	Serial    uint64 `json:"serial"`
	Instances int    `json:"instances"`
	Managed   int    `json:"managed"`
}

// stateVersions lists a state's versions, newest first, as the operator
// (asOperator) or on an open server.
func stateVersions(t *testing.T, srv *tofu.Server, name string, with ...func(*http.Request)) []quotaVersion {
	t.Helper()
	url := srv.URL + "/v1/api/states/" + name + "/versions?limit=1000"
	code, body := send(t, http.MethodGet, url, nil, with...)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, code, body)
	}
	var v struct {
		Versions []quotaVersion `json:"versions"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return v.Versions
}

// klIn runs kl in wd (its tofu environment) and returns its output and
// exit code.
func klIn(t *testing.T, wd *tofu.Workdir, args ...string) (string, int) {
	t.Helper()
	r := startKL(t, wd, args...)
	code := r.wait()
	return r.output(), code
}

// quotaDenial waits for kld to log a quota's refusal from mark on and
// returns its fields; it fails t when none comes.
func quotaDenial(t *testing.T, srv *tofu.Server, mark int) map[string]string {
	t.Helper()
	d := expectDenial(t, srv, mark, "quota_exceeded")
	for _, e := range logSince(srv, mark) {
		if e.msg == "request denied" && e.fields["request_id"] == d.requestID {
			return e.fields
		}
	}
	t.Fatalf("no quota refusal logged")
	return nil
}

// TestQuotaChecklist7Preflight: kl quota remaining reports the headroom of
// the state and its environment; kl quota check of a saved plan warns past
// the soft limit (exit 0) and fails past the hard one (exit 1), with the
// projected figures; kl plan and kl apply, finding the backend in the
// initialized directory, do the same, and a refused kl apply applies
// nothing.
func TestQuotaChecklist7Preflight(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, databaseURL string) {
		c := startChecklist(t, databaseURL)
		net := c.internal(t, "net")
		mustKL(t, c.asOp("quota", "set", "--state", "net", "--env", c.env, "--workspace", c.ws, "--soft", "4", "--hard", "6")...)
		mustKL(t, c.asOp("quota", "set", "--env", c.env, "--workspace", c.ws, "--hard", "50")...)
		d := c.withBlock(t, c.path("net"), c.ws, c.auto.Secret)
		d.config(countConfig)
		d.Must("init", "-no-color")
		d.Must("apply", "-auto-approve", "-no-color", "-var=n=3")

		out, code := klIn(t, d.Workdir, "quota", "remaining")
		if code != 0 || !strings.Contains(flat(out), "state "+net+" 3 4 6 3 state") || !strings.Contains(flat(out), "environment "+c.env+" 3 - 50 47 environment") {
			t.Errorf("kl quota remaining (exit %d):\n%s", code, out)
		}
		t.Logf("kl quota remaining:\n%s", out)

		d.Must("plan", "-out=plan.tfplan", "-no-color", "-var=n=5")
		out, code = klIn(t, d.Workdir, "quota", "check", "--tf-plan", "plan.tfplan")
		if code != 0 || !strings.Contains(out, "+2") || !strings.Contains(out, "WARN state "+net+": 5 managed instance(s) is above the soft limit of 4 (hard 6, 1 left) (now 3; limit from state)") {
			t.Errorf("kl quota check of a plan to 5 of soft 4: exit %d, want 0 with WARN\n%s", code, out)
		}
		t.Logf("kl quota check --tf-plan (5 of soft 4, hard 6):\n%s", out)
		d.Must("plan", "-out=plan.tfplan", "-no-color", "-var=n=7")
		out, code = klIn(t, d.Workdir, "quota", "check", "--tf-plan", "plan.tfplan")
		if code != 1 || !strings.Contains(out, "FAIL state "+net+": 7 managed instance(s) would exceed the hard limit of 6 (soft 4) (now 3; limit from state)") ||
			!strings.Contains(out, "kl quota set --state "+net) {
			t.Errorf("kl quota check of a plan to 7 of hard 6: exit %d, want 1 with FAIL and a hint\n%s", code, out)
		}
		t.Logf("kl quota check --tf-plan (7 of hard 6):\n%s", out)

		out, code = klIn(t, d.Workdir, "plan", "--var", "n=5")
		if code != 0 || !strings.Contains(out, "WARN state "+net+": 5 managed instance(s)") {
			t.Errorf("kl plan to 5: exit %d, want 0 with WARN\n%s", code, out)
		}
		out, code = klIn(t, d.Workdir, "plan", "--var", "n=7")
		if code != 1 || !strings.Contains(out, "FAIL state "+net+": 7 managed instance(s) would exceed the hard limit of 6") {
			t.Errorf("kl plan to 7: exit %d, want 1 with FAIL\n%s", code, out)
		}
		before := c.serial(t, "net")
		out, code = klIn(t, d.Workdir, "apply", "--var", "n=7")
		if code != 1 || !strings.Contains(out, "kl: FAIL state "+net) || strings.Contains(out, "Apply complete") {
			t.Errorf("kl apply to 7: exit %d, want 1 before anything is applied\n%s", code, out)
		}
		if got := c.serial(t, "net"); got != before {
			t.Errorf("a refused kl apply moved the state from serial %d to %d", before, got)
		}
		out, code = klIn(t, d.Workdir, "apply", "--var", "n=5")
		if code != 0 || !strings.Contains(out, "kl: WARN state "+net) || !strings.Contains(out, "applied in state \""+net+"\": 2 added") {
			t.Errorf("kl apply to 5: exit %d, want 0 with WARN\n%s", code, out)
		}
	})
}

// TestQuotaChecklist7AExactBoundary: with kld --default-state-quota 4,6 a
// state of exactly 6 applies (a warning, logged); a seventh resource is
// refused with 403 quota_exceeded, the stored history unchanged, and kl
// quota status says why.
func TestQuotaChecklist7AExactBoundary(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, databaseURL string) {
		srv := tofu.StartKLD(t, databaseURL, "--default-state-quota", "4,6")
		const state = "boundary"
		wd := tofu.NewWorkdir(t, srv.Backend(state)+countConfig)
		wd.Must("init", "-no-color")
		mark := len(srv.Log())
		if out := wd.Must("apply", "-auto-approve", "-no-color", "-var=n=6"); !strings.Contains(out, "Apply complete! Resources: 6 added") {
			t.Fatalf("apply of exactly the hard limit:\n%s", out)
		}
		warned := false
		for _, e := range logSince(srv, mark) {
			warned = warned || (e.msg == "request" && strings.Contains(e.fields["quota_warning"], "6 managed instance(s) is above the soft limit of 4 (hard 6, 0 left)"))
		}
		if !warned {
			t.Errorf("kld did not log the soft limit's warning on the write:\n%s", srv.Log()[mark:])
		}
		before := stateVersions(t, srv, state)
		doc := getState(t, srv, state)

		mark = len(srv.Log())
		_, stderr, code := wd.Run("apply", "-auto-approve", "-no-color", "-var=n=7")
		if code != 1 || !strings.Contains(flat(stderr), "HTTP error: 403") {
			t.Errorf("apply of one more than the hard limit: exit %d, want 1 with HTTP error: 403\n%s", code, stderr)
		}
		t.Logf("7A: tofu printed: %s", firstError(stderr))
		f := quotaDenial(t, srv, mark)
		if f["scope"] != "state" || f["target"] != state || f["current"] != "6" || f["result"] != "7" || f["soft"] != "4" || f["hard"] != "6" || f["limit_from"] != kilolock.LimitFromServer {
			t.Errorf("kld's refusal: %v", f)
		}
		after := stateVersions(t, srv, state)
		if len(after) != len(before) || after[0] != before[0] || string(getState(t, srv, state)) != string(doc) {
			t.Errorf("the refused write changed the history: %+v, was %+v", after, before)
		}
		out := mustKL(t, "--server", srv.URL, "quota", "status", state)
		if !strings.Contains(out, "state "+state+": 7 managed instance(s) would exceed the hard limit of 6 (soft 4) (nothing was written") ||
			!strings.Contains(flat(out), "state "+state+" 6 4 6 0 server_default") {
			t.Errorf("kl quota status:\n%s", out)
		}
		t.Logf("kl quota status:\n%s", out)
		out = mustKL(t, "--database", databaseURL, "audit", "--denied")
		if !strings.Contains(out, "denied: quota_exceeded") {
			t.Errorf("kl audit --denied does not list the refusal:\n%s", out)
		}
		if m := string(metrics(t, srv)); !strings.Contains(m, `kl_quota_denials_total{code="quota_exceeded"} 1`) {
			t.Errorf("/metrics does not count the refusal")
		}
	})
}

// metrics scrapes srv's /metrics.
func metrics(t *testing.T, srv *tofu.Server) []byte {
	t.Helper()
	code, body := request(t, http.MethodGet, srv.URL+"/metrics", nil)
	if code != http.StatusOK {
		t.Fatalf("GET /metrics: %d", code)
	}
	return body
}

// TestQuotaChecklist7BReplacementSpike: a create_before_destroy
// replacement of every instance of a state at exactly its hard limit
// succeeds, though OpenTofu's checkpoint during the apply holds each new
// object beside its deposed old one (twice the limit): deposed objects do
// not count. An apply that truly exceeds the limit fails, and kld's log,
// the audit log and kl quota status name the quota as the reason, with the
// resulting count, soft and hard limits; nothing says auth or database.
func TestQuotaChecklist7BReplacementSpike(t *testing.T) {
	t.Parallel()
	skipShort(t)
	eachStore(t, func(t *testing.T, databaseURL string) {
		c := startChecklist(t, databaseURL)
		spike := c.internal(t, "spike")
		// Three replaced instances and tick: exactly the hard limit.
		mustKL(t, c.asOp("quota", "set", "--state", "spike", "--env", c.env, "--workspace", c.ws, "--soft", "3", "--hard", "4")...)
		d := c.withBlock(t, c.path("spike"), c.ws, c.auto.Secret)
		d.config(cbdConfig)
		d.Must("init", "-no-color")
		d.Must("apply", "-auto-approve", "-no-color", "-var=n=3", "-var=rev=v1")

		// The provisioners sleep past OpenTofu's 20 s checkpoint interval
		// (started by tick's update), so a checkpoint lands while the old
		// objects are deposed: 4 managed objects and 3 deposed ones.
		var out string
		timed(t, "replacement apply at the hard limit", func() {
			out = d.Must("apply", "-auto-approve", "-no-color", "-var=n=3", "-var=rev=v2", "-var=sleep=22")
		})
		if !strings.Contains(out, "Apply complete! Resources: 3 added, 1 changed, 3 destroyed") {
			t.Errorf("the replacement apply:\n%s", out)
		}
		vs := stateVersions(t, c.srv, spike, asOperator)
		spiked := false
		for _, v := range vs {
			if v.Managed > 4 {
				t.Errorf("version %d counts %d managed instances, past the hard limit of 4", v.Number, v.Managed)
			}
			spiked = spiked || (v.Instances > 4 && v.Managed == 4)
		}
		if !spiked {
			t.Fatalf("no version of the replacement held a deposed object beside the new ones (the checkpoint came too late?): %+v", vs)
		}
		t.Logf("7B: versions of the replacement (newest first): %+v", vs)

		before := stateVersions(t, c.srv, spike, asOperator)
		mark := len(c.srv.Log())
		_, stderr, code := d.Run("apply", "-auto-approve", "-no-color", "-var=n=4", "-var=rev=v2")
		if code != 1 || !strings.Contains(flat(stderr), "HTTP error: 403") {
			t.Errorf("an apply to 5 of hard 4: exit %d, want 1 with HTTP error: 403\n%s", code, stderr)
		}
		t.Logf("7B: tofu printed: %s", firstError(stderr))
		f := quotaDenial(t, c.srv, mark)
		if f["scope"] != "state" || f["result"] != "5" || f["soft"] != "3" || f["hard"] != "4" || !strings.HasPrefix(f["actor"], c.auto.ID) {
			t.Errorf("kld's refusal: %v", f)
		}
		for _, e := range logSince(c.srv, mark) {
			if e.msg == "request failed" || strings.HasPrefix(e.fields["error"], "credentials") || e.fields["error"] == "unavailable" {
				t.Errorf("kld logged an auth or database failure beside the quota's refusal: %s", e.line)
			}
		}
		if after := stateVersions(t, c.srv, spike, asOperator); len(after) != len(before) || after[0] != before[0] {
			t.Errorf("the refused apply changed the history")
		}
		out = mustKL(t, c.asOp("audit", "--denied")...)
		if !strings.Contains(out, "denied: quota_exceeded") {
			t.Errorf("kl audit --denied:\n%s", out)
		}
		out = mustKL(t, c.asOp("quota", "status", spike)...)
		if !strings.Contains(out, "latest refusal:") || !strings.Contains(out, "state "+spike+": 5 managed instance(s) would exceed the hard limit of 4 (soft 3) (nothing was written, by ") {
			t.Errorf("kl quota status:\n%s", out)
		}
		t.Logf("kl quota status:\n%s", out)
		out = mustKL(t, c.asOp("status", spike)...)
		if !strings.Contains(out, "quota refused:") {
			t.Errorf("kl status does not show the refusal:\n%s", out)
		}
	})
}

// TestQuotaChecklist7CEnvironmentAggregate: an environment's limit counts
// its active states together: a write to one state is refused for the
// sum; archiving another state frees its share, and restoring it when the
// others have taken that share is refused with the numbers; a second
// environment is not counted, and a state above a lowered limit may still
// shrink.
func TestQuotaChecklist7CEnvironmentAggregate(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, databaseURL string) {
		c := startChecklist(t, databaseURL)
		mustKL(t, c.asOp("quota", "set", "--env", c.env, "--workspace", c.ws, "--soft", "4", "--hard", "5")...)
		dir := func(env, state, secret string) *tfdir {
			d := c.withBlock(t, c.ws+"/"+env+"/"+state, c.ws, secret)
			d.config(countConfig)
			d.Must("init", "-no-color")
			return d
		}
		a, b := dir(c.env, "a", c.auto.Secret), dir(c.env, "b", c.auto.Secret)
		a.Must("apply", "-auto-approve", "-no-color", "-var=n=3")
		b.Must("apply", "-auto-approve", "-no-color", "-var=n=2") // prod at 5 of 5

		mark := len(c.srv.Log())
		_, stderr, code := b.Run("apply", "-auto-approve", "-no-color", "-var=n=3")
		if code != 1 || !strings.Contains(flat(stderr), "HTTP error: 403") {
			t.Errorf("b to 3 with prod at 5 of 5: exit %d, want 1\n%s", code, stderr)
		}
		f := quotaDenial(t, c.srv, mark)
		if f["scope"] != "environment" || f["target"] != c.env || f["current"] != "5" || f["result"] != "6" || f["hard"] != "5" || f["limit_from"] != kilolock.LimitFromEnvironment {
			t.Errorf("kld's refusal: %v", f)
		}

		// A second environment: its own sum, no limit.
		var dev struct {
			PublicID string `json:"public_id"`
		}
		operator(t, c.srv, "POST", "/v1/api/workspaces/"+c.ws+"/environments", `{"slug":"dev"}`, http.StatusCreated, &dev)
		var devTok credential
		operator(t, c.srv, "POST", "/v1/api/tokens", `{"kind":"automation","environment_id":"`+dev.PublicID+`","scope":"read-write"}`, http.StatusCreated, &devTok)
		dir(dev.PublicID, "a", devTok.Secret).Must("apply", "-auto-approve", "-no-color", "-var=n=8")

		// Archiving a frees its 3.
		mustKL(t, c.asOp("state", "archive", "--workspace", c.ws, "--env", c.env, "a")...)
		out, code := klIn(t, b.Workdir, "quota", "remaining")
		if code != 0 || !strings.Contains(flat(out), "environment "+c.env+" 2 4 5 3 environment") {
			t.Errorf("kl quota remaining with a archived (exit %d):\n%s", code, out)
		}
		t.Logf("kl quota remaining with a archived:\n%s", out)
		b.Must("apply", "-auto-approve", "-no-color", "-var=n=5")

		// Restoring a (3) with prod at 5 of 5 would pass the limit:
		// refused with the numbers, and a stays archived.
		mark = len(c.srv.Log())
		_, stderr, code = kl(t, c.asOp("state", "restore", "--workspace", c.ws, "--env", c.env, "a")...)
		for _, want := range []string{"from 5 to 8 managed instances (the state holds 3), past its hard limit of 5", "stays archived", "kl quota set --env " + c.env} {
			if code == 0 || !strings.Contains(flat(stderr), want) {
				t.Errorf("kl state restore past prod's limit: exit %d, want %q in:\n%s", code, want, stderr)
			}
		}
		if f := quotaDenial(t, c.srv, mark); f["scope"] != "environment" || f["current"] != "5" || f["result"] != "8" || f["hard"] != "5" {
			t.Errorf("kld's refusal of the restore: %v", f)
		}
		if code, body := send(t, http.MethodPost, c.srv.StateURL(c.ws+"/"+c.env+"/a"), []byte(`{}`), func(r *http.Request) { r.SetBasicAuth(c.ws, c.auto.Secret) }); code != http.StatusForbidden || !strings.Contains(string(body), "state_archived") {
			t.Errorf("a write to a after its refused restore: %d %s, want 403 state_archived", code, body)
		}

		// A limit lowered below what prod holds: b may shrink, never grow.
		mustKL(t, c.asOp("quota", "set", "--env", c.env, "--workspace", c.ws, "--soft", "2", "--hard", "3")...)
		if _, stderr, code := b.Run("apply", "-auto-approve", "-no-color", "-var=n=6"); code != 1 {
			t.Errorf("b growing with prod at 5 of 3: exit %d, want 1\n%s", code, stderr)
		}
		b.Must("apply", "-auto-approve", "-no-color", "-var=n=4")
		var st kilolock.QuotaStatus
		if err := json.Unmarshal([]byte(mustKL(t, c.asOp("quota", "remaining", "--state", c.internal(t, "b"), "--json")...)), &st); err != nil {
			t.Fatal(err)
		}
		if len(st.Counts) != 2 || st.Counts[1].Current != 4 || st.Counts[1].Remaining != -1 || st.Counts[0].Current != 4 {
			t.Errorf("prod after b shrank to 4: %+v, want 4 of 3", st.Counts)
		}
	})
}

// TestQuotaPlainApplyPastHardLimit is docs/quotas.md's honest warning: a
// plain tofu apply past the hard limit creates the resources and only its
// state write is refused (HTTP error: 403); tofu leaves errored.tfstate
// with what it applied, kl quota status says why, pushing it is refused
// until the limit is raised, and then it lands. Both stores.
func TestQuotaPlainApplyPastHardLimit(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, databaseURL string) {
		srv := tofu.StartKLD(t, databaseURL)
		const state = "capped"
		wd := tofu.NewWorkdir(t, srv.Backend(state)+countConfig)
		wd.Must("init", "-no-color")
		mustKL(t, "--database", databaseURL, "quota", "set", "--state", state, "--soft", "4", "--hard", "6")
		wd.Must("apply", "-auto-approve", "-no-color", "-var=n=6")

		out, stderr, code := wd.Run("apply", "-auto-approve", "-no-color", "-var=n=7")
		if code != 1 || !strings.Contains(out+stderr, "1 added") && !strings.Contains(out+stderr, "Creation complete") {
			t.Errorf("apply past the hard limit: exit %d, want 1 after creating the resource\n%s\n%s", code, out, stderr)
		}
		t.Logf("tofu apply past the hard limit:\n%s", stderr)
		for _, want := range []string{"Failed to save state", "HTTP error: 403", "errored.tfstate"} {
			if !strings.Contains(flat(stderr), want) {
				t.Errorf("tofu's error does not say %q:\n%s", want, stderr)
			}
		}
		errored := parseState(t, []byte(wd.ReadFile("errored.tfstate")))
		if errored.instances() != 7 {
			t.Errorf("errored.tfstate holds %d instances, want the 7 applied", errored.instances())
		}
		if got := parseState(t, getState(t, srv, state)).instances(); got != 6 {
			t.Errorf("the stored state holds %d instances, want its last version's 6", got)
		}
		if out := mustKL(t, "--server", srv.URL, "quota", "status", state); !strings.Contains(out, "7 managed instance(s) would exceed the hard limit of 6") {
			t.Errorf("kl quota status does not say why:\n%s", out)
		}
		if _, stderr, code := wd.Run("state", "push", "-no-color", "errored.tfstate"); code == 0 || !strings.Contains(flat(stderr), "403") {
			t.Errorf("push of errored.tfstate under the same limit: exit %d\n%s", code, stderr)
		}
		mustKL(t, "--database", databaseURL, "quota", "set", "--state", state, "--hard", "10")
		wd.Must("state", "push", "-no-color", "errored.tfstate")
		if got := len(stateList(t, wd)); got != 7 {
			t.Errorf("after raising the limit and pushing: %d instances, want 7", got)
		}
	})
}

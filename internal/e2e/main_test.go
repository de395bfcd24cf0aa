package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kilolock/kilolock/internal/testpg"
	"github.com/kilolock/kilolock/internal/tofu"
)

func TestMain(m *testing.M) {
	if os.Getenv(blobServeEnv) != "" {
		serveBlob()
	}
	testpg.Main(m)
}

// store is one kind of database kld runs on.
type store struct {
	name string
	// url returns a new, empty database for tb.
	url func(tb testing.TB) string
}

var stores = []store{
	{"sqlite", func(tb testing.TB) string { return filepath.Join(tb.TempDir(), "kilolock.db") }},
	{"postgres", func(tb testing.TB) string { return testpg.URL(tb) }},
}

// eachStore runs flow as a parallel subtest per store, each on a new,
// empty database.
func eachStore(t *testing.T, flow func(t *testing.T, databaseURL string)) {
	t.Helper()
	eachStoreWith(t, tofu.OpenTofu, flow)
}

// eachStoreWith is eachStore for a flow that drives the CLI cli.
func eachStoreWith(t *testing.T, cli tofu.Kind, flow func(t *testing.T, databaseURL string)) {
	t.Helper()
	for _, s := range stores {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			cli.Binary(t) // skip (or fail in CI) before starting anything
			flow(t, s.url(t))
		})
	}
}

// setup starts kld on databaseURL.
func setup(t *testing.T, databaseURL string) *tofu.Server {
	t.Helper()
	return tofu.StartKLD(t, databaseURL)
}

// timed runs f and logs how long it took under a label the report greps for.
func timed(t *testing.T, label string, f func()) time.Duration {
	t.Helper()
	start := time.Now()
	f()
	d := time.Since(start)
	t.Logf("TIMING %s %s: %s", t.Name(), label, d.Round(time.Millisecond))
	return d
}

// smallConfig is a configuration with count, for_each, a dependency, a
// local-exec provisioner and outputs; rev changes every input, so each
// rev is an update of every instance.
func smallConfig(rev string) string {
	return fmt.Sprintf(`
resource "terraform_data" "counted" {
  count = 3
  input = "counted-${count.index}-%[1]s"
}

resource "terraform_data" "named" {
  for_each = toset(["alpha", "beta", "gamma"])
  input = {
    name  = each.key
    after = terraform_data.counted[0].output
  }

  provisioner "local-exec" {
    command = "echo created ${each.key}"
  }
}

output "counted" {
  value = terraform_data.counted[*].output
}

output "named" {
  value = { for k, v in terraform_data.named : k => v.output.name }
}
`, rev)
}

// smallAddresses is what `tofu state list` shows for smallConfig.
var smallAddresses = []string{
	"terraform_data.counted[0]",
	"terraform_data.counted[1]",
	"terraform_data.counted[2]",
	`terraform_data.named["alpha"]`,
	`terraform_data.named["beta"]`,
	`terraform_data.named["gamma"]`,
}

// stateList returns the sorted addresses of `tofu state list`.
func stateList(t *testing.T, wd *tofu.Workdir) []string {
	t.Helper()
	got := strings.Fields(wd.Must("state", "list"))
	slices.Sort(got)
	return got
}

func equalLists(a, b []string) bool { return slices.Equal(a, b) }

// tfstate is the part of a state document the tests look at.
type tfstate struct {
	Version          int                        `json:"version"`
	TerraformVersion string                     `json:"terraform_version"`
	Serial           uint64                     `json:"serial"`
	Lineage          string                     `json:"lineage"`
	Outputs          map[string]json.RawMessage `json:"outputs"`
	Resources        []struct {
		Mode      string            `json:"mode"`
		Type      string            `json:"type"`
		Name      string            `json:"name"`
		Instances []json.RawMessage `json:"instances"`
	} `json:"resources"`
}

func parseState(t *testing.T, b []byte) tfstate {
	t.Helper()
	var s tfstate
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("parse state: %v\n%.500s", err, b)
	}
	if s.Version != 4 || s.Lineage == "" {
		t.Fatalf("not a v4 state with a lineage: version %d, lineage %q", s.Version, s.Lineage)
	}
	return s
}

func (s tfstate) instances() int {
	n := 0
	for _, r := range s.Resources {
		n += len(r.Instances)
	}
	return n
}

// semanticEqual reports whether two JSON documents hold the same values.
func semanticEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Fatalf("parse: %v", err)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Fatalf("parse: %v", err)
	}
	ja, _ := json.Marshal(va)
	jb, _ := json.Marshal(vb)
	return bytes.Equal(ja, jb)
}

var client = &http.Client{Timeout: 30 * time.Second}

// request sends method to url with body and returns the status and the
// answer's body.
func request(t *testing.T, method, url string, body []byte) (int, []byte) {
	t.Helper()
	return send(t, method, url, body, func(r *http.Request) {
		if body != nil {
			r.Header.Set("Content-Type", "application/json")
		}
	})
}

// send sends method to url with body, each of with applied to the request
// first (credentials, headers), and returns the status and body.
func send(t *testing.T, method, url string, body []byte, with ...func(*http.Request)) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range with {
		f(req)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read answer: %v", method, url, err)
	}
	return resp.StatusCode, b
}

// getState is what `curl URL` answers: the state's bytes.
func getState(t *testing.T, srv *tofu.Server, name string) []byte {
	t.Helper()
	code, b := request(t, http.MethodGet, srv.StateURL(name), nil)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", srv.StateURL(name), code, b)
	}
	return b
}

// lockInfo is a lock as tofu sends it, from a holder that is not tofu.
type lockInfo struct {
	ID        string    `json:"ID"`
	Operation string    `json:"Operation"`
	Info      string    `json:"Info"`
	Who       string    `json:"Who"`
	Version   string    `json:"Version"`
	Created   time.Time `json:"Created"`
	Path      string    `json:"Path"`
}

func newLock(who string) lockInfo {
	return lockInfo{
		ID:        fmt.Sprintf("e2e-%d", time.Now().UnixNano()),
		Operation: "OperationTypeApply",
		Who:       who,
		Version:   "1.10.10",
		Created:   time.Now().UTC(),
	}
}

func (l lockInfo) body() []byte {
	b, _ := json.Marshal(l)
	return b
}

// lock sends LOCK like tofu and returns the status and body.
func lock(t *testing.T, srv *tofu.Server, name string, l lockInfo) (int, []byte) {
	t.Helper()
	return request(t, "LOCK", srv.StateURL(name), l.body())
}

func unlock(t *testing.T, srv *tofu.Server, name string, l lockInfo) (int, []byte) {
	t.Helper()
	return request(t, "UNLOCK", srv.StateURL(name), l.body())
}

// kl runs the kl binary with args and returns stdout, stderr and the exit
// code.
func kl(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	return klEnv(t, tofu.CleanEnv("KL_"), 2*time.Minute, args...)
}

// klEnv is kl with the environment env, stopped after timeout.
func klEnv(t *testing.T, env []string, timeout time.Duration, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, tofu.BuildKL(t), args...)
	cmd.Env = append(env, "NO_COLOR=1")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil && cmd.ProcessState == nil {
		t.Fatalf("kl %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), errb.String(), cmd.ProcessState.ExitCode()
}

// mustKL runs kl and fails t unless it exits 0; it returns stdout.
func mustKL(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, code := kl(t, args...)
	if code != 0 {
		t.Fatalf("kl %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// history returns the versions of state name, newest first, as kl shows
// them through srv.
func history(t *testing.T, srv *tofu.Server, name string) []historyVersion {
	t.Helper()
	out := mustKL(t, "--server", srv.URL, "history", name, "--json", "--limit", "1000")
	var h struct {
		Current  int64            `json:"current_version"`
		Versions []historyVersion `json:"versions"`
	}
	if err := json.Unmarshal([]byte(out), &h); err != nil {
		t.Fatalf("kl history --json: %v\n%s", err, out)
	}
	return h.Versions
}

type historyVersion struct {
	Number  int64  `json:"number"`
	Serial  uint64 `json:"serial"`
	Lineage string `json:"lineage"`
	Source  string `json:"source"`
	LockID  string `json:"lock_id"`
}

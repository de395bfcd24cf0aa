package httpbackend

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/charmbracelet/log"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/httpbackend/prommetrics"
	"github.com/kilolock/kilolock/store/sqlite"
)

// testEnv is a Handler on a SQLite store in a temporary directory.
type testEnv struct {
	t      testing.TB
	h      *Handler
	engine *kilolock.Engine
	store  kilolock.Store
	path   string
	logs   *syncBuffer
}

// newEnv opens a SQLite store at path (a new temporary file when empty) and
// serves it.
func newEnv(t testing.TB, path string, o Options) *testEnv {
	t.Helper()
	if path == "" {
		path = filepath.Join(t.TempDir(), "kilolock.db")
	}
	st, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatalf("sqlite.Open(%s): %v", path, err)
	}
	t.Cleanup(func() { st.Close() })
	env := newEnvOn(t, st, o)
	env.path = path
	return env
}

// eachEnv runs test as a subtest on a Handler with o over a fresh store of
// each kind.
func eachEnv(t *testing.T, o Options, test func(t *testing.T, env *testEnv)) {
	for _, be := range benchBackends {
		t.Run(be.name, func(t *testing.T) {
			st, err := be.open(t)
			if err != nil {
				t.Fatal(err)
			}
			test(t, newEnvOn(t, st, o))
		})
	}
}

// newEnvOn serves the store st, logging at debug level to env.logs.
func newEnvOn(t testing.TB, st kilolock.Store, o Options) *testEnv {
	t.Helper()
	logs := &syncBuffer{}
	logger := log.NewWithOptions(logs, log.Options{Level: log.DebugLevel, Formatter: log.LogfmtFormatter})
	engine := kilolock.NewEngine(st, kilolock.Options{Logger: logger})
	if o.Logger == nil {
		o.Logger = logger
	}
	if o.Metrics == nil {
		o.Metrics = prommetrics.New(nil) // kld's
	}
	return &testEnv{t: t, h: New(engine, o), engine: engine, store: st, logs: logs}
}

// do serves one request and returns the recorded answer.
func (e *testEnv) do(method, target string, body []byte, header ...string) *httptest.ResponseRecorder {
	e.t.Helper()
	var r *http.Request
	if body == nil {
		r = httptest.NewRequest(method, target, nil)
	} else {
		r = httptest.NewRequest(method, target, bytes.NewReader(body))
	}
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	e.h.ServeHTTP(w, r)
	return w
}

// lock takes a lock as a client would, failing the test unless it is 200.
func (e *testEnv) lock(name string, li kilolock.LockInfo) {
	e.t.Helper()
	if w := e.do("LOCK", "/v1/states/"+name, mustJSON(e.t, li)); w.Code != http.StatusOK {
		e.t.Fatalf("LOCK %s as %s: %d %s", name, li.ID, w.Code, w.Body)
	}
}

// post writes a state as a client would (with Content-MD5), failing the
// test unless it is 200.
func (e *testEnv) post(name, lockID string, doc []byte) {
	e.t.Helper()
	target := "/v1/states/" + name
	if lockID != "" {
		target += "?ID=" + lockID
	}
	if w := e.do("POST", target, doc, "Content-MD5", md5Of(doc)); w.Code != http.StatusOK {
		e.t.Fatalf("POST %s: %d %s", target, w.Code, w.Body)
	}
}

// lockInfo is the LockInfo a CLI sends for an apply.
func lockInfo(id, who string) kilolock.LockInfo {
	return kilolock.LockInfo{
		ID:        id,
		Operation: "OperationTypeApply",
		Who:       who,
		Version:   "1.10.10",
		Created:   time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC),
	}
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func md5Of(b []byte) string {
	sum := md5.Sum(b)
	return base64.StdEncoding.EncodeToString(sum[:])
}

// errorOf decodes a JSON error answer, failing the test when it is not one.
func errorOf(t testing.TB, w *httptest.ResponseRecorder) errorBody {
	t.Helper()
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("error answer has Content-Type %q, want application/json; body %s", ct, w.Body)
	}
	var b errorBody
	if err := json.Unmarshal(w.Body.Bytes(), &b); err != nil {
		t.Fatalf("error answer is not JSON: %v: %s", err, w.Body)
	}
	if b.Error == "" || b.Message == "" || b.Hint == "" {
		t.Errorf("error answer lacks error, message or hint: %s", w.Body)
	}
	return b
}

// tfState mirrors the layout Terraform writes a version 4 state in.
type tfState struct {
	Version          int             `json:"version"`
	TerraformVersion string          `json:"terraform_version"`
	Serial           uint64          `json:"serial"`
	Lineage          string          `json:"lineage"`
	Outputs          map[string]any  `json:"outputs"`
	Resources        []tfResource    `json:"resources"`
	CheckResults     json.RawMessage `json:"check_results"`
}

type tfResource struct {
	Mode      string       `json:"mode"`
	Type      string       `json:"type"`
	Name      string       `json:"name"`
	Provider  string       `json:"provider"`
	Instances []tfInstance `json:"instances"`
}

type tfInstance struct {
	SchemaVersion       int            `json:"schema_version"`
	Attributes          map[string]any `json:"attributes"`
	SensitiveAttributes []any          `json:"sensitive_attributes"`
}

// stateDoc renders a state with one terraform_data resource per entry of
// values (name -> its input), the way Terraform writes it.
func stateDoc(t testing.TB, lineage string, serial uint64, values map[string]string) []byte {
	t.Helper()
	s := tfState{Version: 4, TerraformVersion: "1.10.10", Serial: serial, Lineage: lineage, Outputs: map[string]any{}, Resources: []tfResource{}, CheckResults: json.RawMessage("null")}
	names := make([]string, 0, len(values))
	for n := range values {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		s.Resources = append(s.Resources, tfResource{
			Mode: "managed", Type: "terraform_data", Name: n,
			Provider: `provider["terraform.io/builtin/terraform"]`,
			Instances: []tfInstance{{Attributes: map[string]any{
				"id": fmt.Sprintf("%s-%s", n, values[n]), "input": map[string]any{"value": values[n], "type": "string"},
				"output": nil, "triggers_replace": nil,
			}, SensitiveAttributes: []any{}}},
		})
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// syncBuffer is a log sink safe for concurrent writers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

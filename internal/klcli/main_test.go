package klcli_test

import (
	"bytes"
	"context"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/charmbracelet/log"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/httpbackend"
	"github.com/kilolock/kilolock/internal/klcli"
	"github.com/kilolock/kilolock/internal/testpg"
	"github.com/kilolock/kilolock/store"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

func TestMain(m *testing.M) { testpg.Main(m) }

// harness is one backend under test, on a store seeded by seed.
type harness struct {
	engine  *kilolock.Engine
	backend *klcli.Conn // times rewritten by stableTimes
	raw     *klcli.Conn // as the API answers
	url     string      // the server's URL; "" in-process
}

// cli returns a CLI on h's backend writing to out, with the fixed clock.
func (h *harness) cli(out io.Writer, json bool) *klcli.CLI {
	return &klcli.CLI{Conn: h.backend, Out: out, JSON: json, Now: func() time.Time { return testNow }}
}

// run runs one command and returns its output.
func (h *harness) run(t testing.TB, json bool, cmd func(*klcli.CLI) error) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := cmd(h.cli(&out, json))
	return out.String(), err
}

// wrapper wraps the transport of a Conn's requests (nil: none).
type wrapper = func(http.RoundTripper) http.RoundTripper

// backends are the ways kl reaches KiloLock. Each test body runs on every
// one of them, on a SQLite store of its own. open returns what makes a
// Conn whose requests go through a wrapper.
var backends = []struct {
	name string
	open func(t testing.TB, e *kilolock.Engine) (func(wrapper) *klcli.Conn, string)
}{
	{"database", func(t testing.TB, e *kilolock.Engine) (func(wrapper) *klcli.Conn, string) {
		return func(wrap wrapper) *klcli.Conn { return klcli.NewDatabaseConn(e, klcli.HTTPOptions{Wrap: wrap}) }, ""
	}},
	{"http", func(t testing.TB, e *kilolock.Engine) (func(wrapper) *klcli.Conn, string) {
		srv := httptest.NewServer(httpbackend.New(e, httpbackend.Options{
			Logger:  log.New(io.Discard),
			Version: httpbackend.VersionInfo{Version: "v9.9.9-test", Commit: "abc1234", GoVersion: "go1.26"},
		}))
		t.Cleanup(srv.Close)
		return func(wrap wrapper) *klcli.Conn {
			b, err := klcli.NewConn(srv.URL, klcli.HTTPOptions{Timeout: 10 * time.Second, Wrap: wrap})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { b.Close() })
			return b
		}, srv.URL
	}},
}

// stable wraps a transport in stableTimes.
func stable(next http.RoundTripper) http.RoundTripper { return stableTimes{next} }

// forEachBackend runs f once per backend, each on a freshly seeded SQLite
// store.
func forEachBackend(t *testing.T, f func(t *testing.T, h *harness)) {
	for _, bk := range backends {
		t.Run(bk.name, func(t *testing.T) {
			e := seededEngine(t, sqliteURL(t))
			open, url := bk.open(t, e)
			f(t, &harness{engine: e, backend: open(stable), raw: open(nil), url: url})
		})
	}
}

func sqliteURL(t testing.TB) string {
	return filepath.Join(t.TempDir(), "kl.db")
}

// openEngine opens the store at url for the test's lifetime.
func openEngine(t testing.TB, url string) *kilolock.Engine {
	t.Helper()
	s, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return kilolock.NewEngine(s, kilolock.Options{Logger: log.New(io.Discard)})
}

// seededEngine opens the store at url and writes the test states through
// the Engine, as terraform's LOCK/POST/UNLOCK would:
//
//	prod     3 versions (alice, bob under locks; then a push), locked by carol
//	staging  1 version in OpenTofu's compact layout, a plan reading it
//	empty    locked once and unlocked: a state with no version
//	shared   optimistic lock mode, no version, two holders
func seededEngine(t testing.TB, url string) *kilolock.Engine {
	t.Helper()
	ctx := context.Background()
	e := openEngine(t, url)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	apply := func(name, who, lockID, doc string) {
		t.Helper()
		if lockID == "" {
			_, err := e.Write(ctx, name, seedDoc(t, doc), kilolock.WriteOptions{Actor: who})
			must(err)
			return
		}
		_, err := e.Lock(ctx, name, lockInfo(who, lockID))
		must(err)
		_, err = e.Write(ctx, name, seedDoc(t, doc), kilolock.WriteOptions{LockID: lockID})
		must(err)
		_, err = e.Unlock(ctx, name, lockID, false)
		must(err)
	}
	apply("prod", "alice", "lock-1", "prod-1")
	apply("prod", "bob", "lock-2", "prod-2")
	apply("prod", "ci", "", "prod-3")
	_, err := e.Lock(ctx, "prod", lockInfo("carol", "lock-4"))
	must(err)

	apply("staging", "alice", "lock-5", "staging-1")
	plan := lockInfo("gina", "lock-9")
	plan.Operation = kilolock.OperationPlan
	_, err = e.Lock(ctx, "staging", plan) // a plan's shared read lock
	must(err)

	_, err = e.Lock(ctx, "empty", lockInfo("dave", "lock-6"))
	must(err)
	_, err = e.Unlock(ctx, "empty", "lock-6", false)
	must(err)

	must(e.Store().SetLockMode(ctx, "shared", kilolock.LockOptimistic))
	_, err = e.Lock(ctx, "shared", lockInfo("erin", "lock-7"))
	must(err)
	_, err = e.Lock(ctx, "shared", lockInfo("frank", "lock-8"))
	must(err)
	return e
}

func lockInfo(who, id string) kilolock.LockInfo {
	return kilolock.LockInfo{ID: id, Operation: "OperationTypeApply", Who: who, Version: "1.10.10", Created: testBase}
}

// seedDoc reads testdata/seed/NAME.tfstate.
func seedDoc(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "seed", name+".tfstate"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// golden compares got with testdata/NAME.golden, rewriting it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (go test -update rewrites it)\n--- got\n%s--- want\n%s", path, got, want)
	}
}

// goldenCase is one command whose human output is compared with
// testdata/GOLDEN.golden.
type goldenCase struct {
	golden string
	cmd    func(*klcli.CLI) error
}

// eachGolden runs every case on every backend (after seed, when not nil)
// against one golden file each: the library and the server must agree.
// -update writes the files from the first backend; the others are still
// compared with them.
func eachGolden(t *testing.T, seed func(t *testing.T, h *harness), cases []goldenCase) {
	first := true
	forEachBackend(t, func(t *testing.T, h *harness) {
		defer func(u bool) { *update = u }(*update)
		if !first {
			*update = false
		}
		first = false
		if seed != nil {
			seed(t, h)
		}
		for _, tc := range cases {
			t.Run(tc.golden, func(t *testing.T) {
				out, err := h.run(t, false, tc.cmd)
				if err != nil {
					t.Fatal(err)
				}
				golden(t, tc.golden, out)
			})
		}
	})
}

package e2e_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kilolock/kilolock/internal/testpg"
	"github.com/kilolock/kilolock/internal/tofu"
)

// TestPostgresFailover runs two kld replicas on a pg_auto_failover
// formation (monitor, primary, synchronous standby) through its
// multi-host URL with target_session_attrs=read-write. Terraform-like
// writers (LOCK, POST, UNLOCK, retrying a 503 as the CLIs do) and tofu
// applies go on through both replicas while the primary moves: planned
// (`pg_autoctl perform failover`), and by a crash (the primary's
// pg_autoctl and PostgreSQL killed with SIGKILL, the monitor promoting
// the standby). While no primary is reachable kld answers 503 with
// Retry-After (never another 5xx), every write it acknowledged is there
// afterwards byte for byte, and every apply succeeds, the CLI retrying
// what was refused. It logs the figures: the unavailability window each
// writer saw and the writes lost.
func TestPostgresFailover(t *testing.T) {
	t.Parallel()
	tofu.Binary(t)
	for _, tc := range []struct {
		name string
		// fail moves the primary away from node primary and returns once
		// the other node takes writes.
		fail func(ctx context.Context, f *testpg.Formation, primary int) error
	}{
		{"planned", func(ctx context.Context, f *testpg.Formation, primary int) error {
			if err := f.Failover(ctx); err != nil {
				return err
			}
			return f.WaitWritable(ctx, 1-primary)
		}},
		{"crash", func(ctx context.Context, f *testpg.Formation, primary int) error {
			if err := f.Crash(primary); err != nil {
				return err
			}
			return f.WaitWritable(ctx, 1-primary)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { failover(t, tc.fail) })
	}
}

func failover(t *testing.T, fail func(ctx context.Context, f *testpg.Formation, primary int) error) {
	f := testpg.StartFormation(t)
	ctx := t.Context()
	before, err := f.Primary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	requireSyncReplication(t, f.NodeURL(before))

	a := tofu.StartKLD(t, f.URL())
	b := tofu.StartKLD(t, f.URL())
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var writers []*failoverWriter
	for i, srv := range []*tofu.Server{a, b, a, b} {
		other := map[*tofu.Server]*tofu.Server{a: b, b: a}[srv]
		w := &failoverWriter{srv: srv, reader: other, state: fmt.Sprintf("writer-%d", i), lineage: fmt.Sprintf("lineage-%d-%d", i, time.Now().UnixNano())}
		writers = append(writers, w)
		wg.Add(1)
		go func() { defer wg.Done(); w.run(stop) }()
	}
	var appliers []*failoverApplier
	for i, srv := range []*tofu.Server{a, b} {
		p := &failoverApplier{srv: srv, state: fmt.Sprintf("apply-%d", i)}
		p.wd = tofu.NewWorkdir(t, srv.BackendWith(p.state, "    retry_max      = 30\n    retry_wait_min = 1\n    retry_wait_max = 5\n")+roundConfig)
		p.wd.Must("init", "-no-color")
		appliers = append(appliers, p)
		wg.Add(1)
		go func() { defer wg.Done(); p.run(stop) }()
	}

	time.Sleep(3 * time.Second) // writes before the failover
	start := time.Now()
	if err := fail(ctx, f, before); err != nil {
		close(stop)
		wg.Wait()
		t.Fatalf("failover: %v", err)
	}
	t.Logf("from the failover's start (%s) until the other node takes writes: %s", start.UTC().Format("15:04:05.000"), time.Since(start).Round(time.Millisecond))
	if events, err := f.Events(ctx, 20); err == nil {
		t.Logf("the monitor's events:\n%s", events)
	}
	// Writes after the failover, then a stop once each writer has written
	// since.
	settled := time.Now()
	time.Sleep(3 * time.Second)
	for _, w := range writers {
		w.waitSuccessAfter(settled, 30*time.Second)
	}
	close(stop)
	wg.Wait()

	var window time.Duration
	acked, lost, refused := 0, 0, 0
	for _, w := range writers {
		if w.err != nil {
			t.Errorf("%s through %s: %v", w.state, w.srv.Addr, w.err)
		}
		window = max(window, w.window())
		refused += w.refused
		acked += len(w.acked)
		lost += w.verify(t)
	}
	if refused == 0 {
		t.Errorf("no writer's request was refused during the failover: the test did not see it")
	}
	tofuRetried := 0
	for _, p := range appliers {
		if p.err != nil {
			t.Errorf("tofu apply on %s through %s: %v", p.state, p.srv.Addr, p.err)
		}
		tofuRetried += p.verify(t)
	}
	if tofuRetried == 0 {
		t.Errorf("kld refused none of tofu's requests during the failover: no apply was retried")
	}
	for _, srv := range []*tofu.Server{a, b} {
		if n := strings.Count(srv.Log(), " status=500"); n > 0 {
			t.Errorf("kld on %s answered 500 %d times during the failover; want 503 only", srv.Addr, n)
		}
	}
	t.Logf("FIGURE failover: unavailability window %s (longest a writer waited, first refused request to the next acknowledged one, retrying every %s); %d writes acknowledged, %d lost; %d writer requests refused with 503; %d tofu requests refused with 503 and retried by tofu, %d applies, all succeeded",
		window.Round(time.Millisecond), retryEvery, acked, lost, refused, tofuRetried, appliers[0].applies+appliers[1].applies)
}

// requireSyncReplication fails t unless the primary at url waits for its
// standby at commit: what makes an acknowledged write survive a failover.
func requireSyncReplication(t *testing.T, url string) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var names, commit string
	if err := conn.QueryRow(t.Context(), `SELECT current_setting('synchronous_standby_names'), current_setting('synchronous_commit')`).Scan(&names, &commit); err != nil {
		t.Fatal(err)
	}
	if names == "" || commit == "off" || commit == "local" {
		t.Fatalf("the primary replicates asynchronously (synchronous_standby_names %q, synchronous_commit %q)", names, commit)
	}
	t.Logf("primary: synchronous_standby_names = %q, synchronous_commit = %s", names, commit)
}

// retryEvery is how soon a failoverWriter retries a refused request:
// sooner than the Retry-After kld gives, to measure the window closely.
const retryEvery = 100 * time.Millisecond

// writePause is how long a failoverWriter waits between writes, and
// maxWriterVersions the most it writes (verify reads one page of history).
const (
	writePause        = 50 * time.Millisecond
	maxWriterVersions = 900
)

// failoverWriter writes one state as Terraform does (LOCK, POST ?ID=,
// UNLOCK), serial after serial, retrying a request kld refuses with 503
// or that does not reach it, and keeps what kld acknowledged.
type failoverWriter struct {
	srv     *tofu.Server
	reader  *tofu.Server // the other replica, which verify reads through
	state   string
	lineage string

	mu       sync.Mutex
	acked    []ackedWrite
	lastOK   time.Time
	refused  int           // requests answered 503 (or not answered)
	longest  time.Duration // the longest run of refusals, to the next success
	failedAt time.Time     // the first refusal since the last success
	err      error         // the first answer that is neither a success nor a 503
}

type ackedWrite struct {
	version int64
	serial  uint64
	sum     [32]byte
}

func (w *failoverWriter) run(stop <-chan struct{}) {
	client := &http.Client{Timeout: 30 * time.Second}
	for serial := uint64(1); ; serial++ {
		pause := writePause
		if serial > maxWriterVersions {
			pause = time.Hour // enough for one history page: wait for stop
		}
		select {
		case <-stop:
			return
		case <-time.After(pause):
		}
		l := newLock("writer@" + w.srv.Addr)
		if _, err := w.do(client, "LOCK", w.srv.StateURL(w.state), l.body()); err != nil {
			w.fail(err)
			return
		}
		doc := writerDoc(w.lineage, serial)
		body, err := w.do(client, http.MethodPost, w.srv.StateURL(w.state)+"?ID="+l.ID, doc)
		if err != nil {
			w.fail(err)
			return
		}
		var ans struct {
			Version int64  `json:"version"`
			Serial  uint64 `json:"serial"`
		}
		if err := json.Unmarshal(body, &ans); err != nil || ans.Serial != serial {
			w.fail(fmt.Errorf("POST of serial %d answered %s", serial, body))
			return
		}
		w.mu.Lock()
		w.acked = append(w.acked, ackedWrite{version: ans.Version, serial: serial, sum: sha256.Sum256(doc)})
		w.mu.Unlock()
		if _, err := w.do(client, "UNLOCK", w.srv.StateURL(w.state), l.body()); err != nil {
			w.fail(err)
			return
		}
	}
}

// do sends a request until kld answers it with anything but a 503 (for a
// minute at most) and returns the body of a 200; any other answer is an
// error.
func (w *failoverWriter) do(client *http.Client, method, url string, body []byte) ([]byte, error) {
	deadline := time.Now().Add(time.Minute)
	for {
		req, err := http.NewRequest(method, url, bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		resp, err := client.Do(req)
		var got []byte
		if err == nil {
			got, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		now := time.Now()
		switch {
		case err == nil && resp.StatusCode == http.StatusOK:
			w.mu.Lock()
			if !w.failedAt.IsZero() {
				w.longest = max(w.longest, now.Sub(w.failedAt))
				w.failedAt = time.Time{}
			}
			w.lastOK = now
			w.mu.Unlock()
			return got, nil
		case err == nil && resp.StatusCode != http.StatusServiceUnavailable:
			return nil, fmt.Errorf("%s %s: %s %s", method, url, resp.Status, got)
		case err == nil && (resp.Header.Get("Retry-After") == "" || !unavailableBody(got)):
			return nil, fmt.Errorf("%s %s: 503 without Retry-After or the JSON error unavailable with a hint: %s", method, url, got)
		}
		// Refused (503) or not answered: retry.
		w.mu.Lock()
		w.refused++
		if w.failedAt.IsZero() {
			w.failedAt = now
		}
		w.mu.Unlock()
		if now.After(deadline) {
			return nil, fmt.Errorf("%s %s: still refused after a minute: %v %s", method, url, err, got)
		}
		time.Sleep(retryEvery)
	}
}

// unavailableBody reports whether body is kld's JSON error for a database
// it cannot reach: "unavailable", with a message and a hint.
func unavailableBody(body []byte) bool {
	var e struct{ Error, Message, Hint string }
	return json.Unmarshal(body, &e) == nil && e.Error == "unavailable" && e.Message != "" && e.Hint != ""
}

func (w *failoverWriter) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = err
	}
}

// window is the longest the writer waited, from a first refused request
// to the next success.
func (w *failoverWriter) window() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.longest
}

// waitSuccessAfter waits until the writer has had a success after t (or
// stopped with an error), at most timeout.
func (w *failoverWriter) waitSuccessAfter(t time.Time, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		w.mu.Lock()
		done := w.lastOK.After(t) || w.err != nil
		w.mu.Unlock()
		if done {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// verify checks, through the other replica than the one written through,
// that the state's history is exactly the acknowledged writes, each
// version byte for byte what was posted, and returns how many are lost.
func (w *failoverWriter) verify(t *testing.T) (lost int) {
	t.Helper()
	other := w.reader
	var history struct {
		Versions []struct {
			Number int64  `json:"number"`
			Serial uint64 `json:"serial"`
		} `json:"versions"`
	}
	code, body := request(t, http.MethodGet, other.URL+"/v1/api/states/"+w.state+"/versions?limit=1000", nil)
	if code != http.StatusOK || json.Unmarshal(body, &history) != nil {
		t.Fatalf("history of %s: %d %s", w.state, code, body)
	}
	serials := map[int64]uint64{}
	for _, v := range history.Versions {
		serials[v.Number] = v.Serial
	}
	for _, a := range w.acked {
		code, doc := request(t, http.MethodGet, other.URL+"/v1/api/states/"+w.state+"/versions/"+strconv.FormatInt(a.version, 10), nil)
		if code != http.StatusOK || sha256.Sum256(doc) != a.sum || serials[a.version] != a.serial {
			t.Errorf("%s: acknowledged version %d (serial %d) is lost: GET answered %d, %d bytes; history has serial %d", w.state, a.version, a.serial, code, len(doc), serials[a.version])
			lost++
		}
	}
	if len(history.Versions) != len(w.acked) {
		t.Errorf("%s: %d versions in history, %d writes acknowledged", w.state, len(history.Versions), len(w.acked))
	}
	return lost
}

// writerDoc is a state as Terraform writes it, with serial in its
// resource and output.
func writerDoc(lineage string, serial uint64) []byte {
	return fmt.Appendf(nil, `{
  "version": 4,
  "terraform_version": "1.10.10",
  "serial": %[2]d,
  "lineage": %[1]q,
  "outputs": {
    "serial": {
      "value": %[2]d,
      "type": "number"
    }
  },
  "resources": [
    {
      "mode": "managed",
      "type": "terraform_data",
      "name": "w",
      "provider": "provider[\"terraform.io/builtin/terraform\"]",
      "instances": [
        {
          "schema_version": 0,
          "attributes": {
            "id": "w-%[1]s",
            "input": "serial-%[2]d",
            "output": "serial-%[2]d",
            "triggers_replace": null
          },
          "sensitive_attributes": []
        }
      ]
    }
  ],
  "check_results": null
}
`, lineage, serial)
}

// failoverApplier runs tofu apply after tofu apply, each a new round.
type failoverApplier struct {
	srv     *tofu.Server
	state   string
	wd      *tofu.Workdir
	applies int
	err     error
}

func (p *failoverApplier) run(stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		stdout, stderr, code := p.wd.Run("apply", "-auto-approve", "-no-color", "-var", fmt.Sprintf("round=%d", p.applies+1))
		if code != 0 {
			p.err = fmt.Errorf("apply of round %d: exit %d\nstdout:\n%s\nstderr:\n%s", p.applies+1, code, stdout, stderr)
			return
		}
		p.applies++
	}
}

// verify checks that the state holds the last round and a version per
// apply, and returns how many of tofu's requests kld refused with 503.
func (p *failoverApplier) verify(t *testing.T) int {
	t.Helper()
	var st struct {
		Outputs map[string]struct {
			Value int `json:"value"`
		} `json:"outputs"`
	}
	if err := json.Unmarshal(getState(t, p.srv, p.state), &st); err != nil || st.Outputs["round"].Value != p.applies {
		t.Errorf("%s: output round = %d (%v), want %d, the last apply", p.state, st.Outputs["round"].Value, err, p.applies)
	}
	var history struct {
		Versions []json.RawMessage `json:"versions"`
	}
	code, body := request(t, http.MethodGet, p.srv.URL+"/v1/api/states/"+p.state+"/versions?limit=1000", nil)
	if code != http.StatusOK || json.Unmarshal(body, &history) != nil || len(history.Versions) != p.applies {
		t.Errorf("%s: history %d %d versions, want one per apply (%d)", p.state, code, len(history.Versions), p.applies)
	}
	return strings.Count(p.srv.Log(), "path=/v1/states/"+p.state+" status=503")
}

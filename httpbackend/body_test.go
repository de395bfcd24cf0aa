package httpbackend

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	rtmetrics "runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kilolock/kilolock/tenancy"
)

// readBodyOf reads body through readBody as a request with the given
// Content-Length (-1: none), and gives its memory back, as the request's
// end does: what it returns is a copy.
func readBodyOf(t testing.TB, h *Handler, body io.Reader, length, limit int64) ([]byte, error) {
	t.Helper()
	ri := &reqInfo{w: httptest.NewRecorder()}
	r := httptest.NewRequest("POST", "/v1/states/s", body)
	r.ContentLength = length
	r = r.WithContext(context.WithValue(r.Context(), reqInfoKey{}, ri))
	defer h.releaseBodies(ri)
	b, err := h.readBody(r, limit)
	return bytes.Clone(b), err
}

// skipUnspooled skips t where the platform maps no spooled bodies.
func skipUnspooled(t *testing.T) {
	t.Helper()
	if !canMapSpool {
		t.Skip("no mappings on this platform: large bodies are read into the heap")
	}
}

// TestReadBodySpooled: a large body of announced size is read into a file
// and handed on as a mapping of it, not into the Go heap, byte for byte,
// taking the budget as it arrives and giving it back with the file at the
// request's end.
func TestReadBodySpooled(t *testing.T) {
	skipUnspooled(t)
	h := newEnv(t, "", Options{}).h
	want := bytes.Repeat([]byte("0123456789abcdef"), (13<<20)/16+7)
	ri := &reqInfo{w: httptest.NewRecorder()}
	r := httptest.NewRequest("POST", "/v1/states/s", &shortReader{r: bytes.NewReader(want), rnd: rand.New(rand.NewPCG(3, 4))})
	r.ContentLength = int64(len(want))
	r = r.WithContext(context.WithValue(r.Context(), reqInfoKey{}, ri))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got, err := h.readBody(r, h.bodyLimit)
	runtime.ReadMemStats(&after)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes, %v; want the %d sent", len(got), err, len(want))
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
		t.Errorf("reading a body of %d bytes allocated %d bytes of heap", len(want), alloc)
	}
	if len(ri.spooled) != 1 || h.bodies.held.Load() != int64(len(want)) {
		t.Fatalf("%d spooled bodies, %d bytes of the budget held; want 1 and the body's %d", len(ri.spooled), h.bodies.held.Load(), len(want))
	}
	sp := ri.spooled[0]
	if fi, err := sp.file.Stat(); err != nil || fi.Size() != int64(len(want)) {
		t.Errorf("the spool: %v, %v; want a file of %d bytes", fi, err, len(want))
	}
	h.releaseBodies(ri)
	if held := h.bodies.held.Load(); held != 0 || ri.spooled != nil {
		t.Errorf("after the request: %d bytes of the budget held, %d spooled bodies", held, len(ri.spooled))
	}
	if _, err := sp.file.Stat(); err == nil {
		t.Error("the spool is still open after the request")
	}
}

// TestReadBodySizes: bodies of every size around the buffers' steps, with
// and without a Content-Length, read back byte for byte; and none holds
// budget once read.
func TestReadBodySizes(t *testing.T) {
	h := newEnv(t, "", Options{}).h
	rnd := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 100, firstBodyChunk - 1, firstBodyChunk, firstBodyChunk + 1, 2*firstBodyChunk + 1, 3*firstBodyChunk + 7, 102411, 1<<20 + 3, 13<<20 + 12345} {
		want := make([]byte, n)
		for i := range want {
			want[i] = byte(rnd.IntN(256))
		}
		for _, length := range []int64{int64(n), -1} {
			t.Run(fmt.Sprintf("%d bytes, length %d", n, length), func(t *testing.T) {
				// iotest-like short reads, as a network gives them.
				got, err := readBodyOf(t, h, &shortReader{r: bytes.NewReader(want), rnd: rnd}, length, h.bodyLimit)
				if err != nil || !bytes.Equal(got, want) {
					t.Fatalf("read %d bytes, %v; want the %d bytes sent", len(got), err, n)
				}
				if held := h.bodies.held.Load(); held != 0 {
					t.Errorf("%d bytes of the budget still held", held)
				}
			})
		}
	}
}

// shortReader returns at most a random few KiB a read.
type shortReader struct {
	r   io.Reader
	rnd *rand.Rand
}

func (s *shortReader) Read(p []byte) (int, error) {
	if n := 1 + s.rnd.IntN(64<<10); len(p) > n {
		p = p[:n]
	}
	return s.r.Read(p)
}

// TestReadBodyTrustsNoHeader: a Content-Length of 64 MiB over a body of 10
// bytes allocates what arrived, not what was announced (it was 64 MiB).
func TestReadBodyTrustsNoHeader(t *testing.T) {
	h := newEnv(t, "", Options{}).h
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := readBodyOf(t, h, strings.NewReader("0123456789"), 64<<20, h.bodyLimit)
	runtime.ReadMemStats(&after)
	if he, ok := err.(*httpError); !ok || he.status != http.StatusBadRequest || !strings.Contains(he.message, "after 10 of the 67108864 bytes") {
		t.Errorf("err = %v, want a 400 saying the body ended after 10 bytes", err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
		t.Errorf("reading 10 bytes announced as 64 MiB allocated %d bytes", alloc)
	}
	if held := h.bodies.held.Load(); held != 0 {
		t.Errorf("%d bytes of the budget still held", held)
	}
}

// heapBytes is the live heap after a collection.
func heapBytes() int64 {
	runtime.GC()
	s := []rtmetrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	rtmetrics.Read(s)
	return int64(s[0].Value.Uint64())
}

// rawPost opens a connection and sends the headers of a POST announcing
// length bytes, then first bytes of its body; the answer is read in the
// background.
type rawPost struct {
	conn   net.Conn
	answer chan rawAnswer
}

type rawAnswer struct {
	status     int
	retryAfter string
	code       string
	err        error
}

func startRawPost(t *testing.T, addr string, length int64, first []byte) *rawPost {
	t.Helper()
	return startRawPostTo(t, addr, "/v1/states/big", "", length, first)
}

// startRawPostTo is startRawPost to target, with header lines (each
// ending in CRLF) added.
func startRawPostTo(t *testing.T, addr, target, header string, length int64, first []byte) *rawPost {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	p := &rawPost{conn: conn, answer: make(chan rawAnswer, 1)}
	go func() {
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			p.answer <- rawAnswer{err: err}
			return
		}
		defer resp.Body.Close()
		var e errorBody
		json.NewDecoder(resp.Body).Decode(&e)
		p.answer <- rawAnswer{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After"), code: e.Error}
	}()
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: kld\r\n%sContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", target, header, length)
	conn.Write(first) // the server may stop reading: an error is the answer
	return p
}

func (p *rawPost) wait(t *testing.T, timeout time.Duration) rawAnswer {
	t.Helper()
	select {
	case a := <-p.answer:
		return a
	case <-time.After(timeout):
		t.Fatalf("no answer within %s", timeout)
		return rawAnswer{}
	}
}

// waitFor polls cond until it holds, failing t after timeout.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestBodyMemoryBounded is the probe of issue 9, item 4, against a real
// server: connections that announce 64 MiB and send only headers hold no
// body memory; connections that send 8 MiB and stall hold at most the
// budget, the rest answered 503 with Retry-After; the stalled ones and a
// trickling one are cut with 408; the live heap stays within a margin of
// the budget throughout; and a legitimate 20 MiB state is stored.
func TestBodyMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 60 connections and sends 150 MiB over loopback")
	}
	const (
		announced = 64 << 20
		budget    = 64 << 20
		idle      = 2 * time.Second
	)
	env := newEnv(t, "", Options{BodyLimit: announced, BodyMemory: budget, BodyIdleTimeout: idle, BodyMinRate: 4 << 20})
	srv := httptest.NewServer(env.h)
	t.Cleanup(srv.Close)
	addr := srv.Listener.Addr().String()
	base := heapBytes()
	peak := int64(0)
	sample := func() {
		if d := heapBytes() - base; d > peak {
			peak = d
		}
	}

	// 40 connections send headers announcing 64 MiB, and nothing more.
	var silent []*rawPost
	for range 40 {
		silent = append(silent, startRawPost(t, addr, announced, nil))
	}
	waitFor(t, 5*time.Second, "40 bodies being read", func() bool { return env.h.bodies.count.Load() == 40 })
	sample()
	if peak > 8<<20 {
		t.Errorf("40 connections announcing 64 MiB and sending nothing grew the heap by %d MiB", peak>>20)
	}

	// 16 send 8 MiB at once and stall: the budget holds what fits.
	chunk := bytes.Repeat([]byte(" "), 8<<20)
	var stalled []*rawPost
	var wg sync.WaitGroup
	var mu sync.Mutex
	for range 16 {
		wg.Go(func() {
			p := startRawPost(t, addr, announced, chunk)
			mu.Lock()
			stalled = append(stalled, p)
			mu.Unlock()
		})
	}
	// One trickles 1 KiB every 50 ms: under the minimum rate.
	trickle := startRawPost(t, addr, announced, []byte("{"))
	stop := make(chan struct{})
	go func() {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if _, err := trickle.conn.Write(bytes.Repeat([]byte(" "), 1<<10)); err != nil {
					return
				}
			}
		}
	}()
	defer close(stop)
	wg.Wait()
	for range 5 {
		sample()
		if held := env.h.bodies.held.Load(); held > budget {
			t.Errorf("bodies hold %d bytes, over the budget of %d", held, budget)
		}
		time.Sleep(100 * time.Millisecond)
	}

	statuses := map[int]int{}
	for _, p := range append(append(stalled, silent...), trickle) {
		a := p.wait(t, 3*idle)
		if a.err != nil {
			t.Errorf("no answer: %v", a.err)
			continue
		}
		statuses[a.status]++
		switch a.status {
		case http.StatusServiceUnavailable:
			if a.code != "body_memory_full" || a.retryAfter == "" {
				t.Errorf("503 with code %q and Retry-After %q; want body_memory_full with Retry-After", a.code, a.retryAfter)
			}
		case http.StatusRequestTimeout:
			if a.code != "body_timeout" {
				t.Errorf("408 with code %q, want body_timeout", a.code)
			}
		default:
			t.Errorf("answer %d %s, want 408 or 503", a.status, a.code)
		}
	}
	if statuses[http.StatusServiceUnavailable] == 0 || statuses[http.StatusRequestTimeout] < 41 {
		t.Errorf("answers by status = %v; want the 40 silent and the trickling one cut with 408, and some of the 16 refused with 503", statuses)
	}
	t.Logf("answers by status: %v; heap grew by at most %d MiB (budget %d MiB)", statuses, peak>>20, budget>>20)
	if limit := int64(budget + 32<<20); peak > limit {
		t.Errorf("the heap grew by %d MiB, past the budget of %d MiB and a margin of 32 MiB", peak>>20, budget>>20)
	}
	waitFor(t, 5*time.Second, "the budget given back", func() bool { return env.h.bodies.held.Load() == 0 })

	// A legitimate large state still goes through.
	doc := stateDoc(t, "lin", 1, map[string]string{"web": strings.Repeat("x", 20<<20)})
	resp, err := srv.Client().Post(srv.URL+"/v1/states/big", "application/json", bytes.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST of a 20 MiB state = %d", resp.StatusCode)
	}
	if got := env.do("GET", "/v1/states/big", nil).Body.Bytes(); !bytes.Equal(got, doc) {
		t.Errorf("GET gives %d bytes, want the %d posted", len(got), len(doc))
	}
	exposed := env.do("GET", "/metrics", nil).Body.String()
	for _, want := range []string{`kl_request_bodies_refused_total{code="body_memory_full"}`, `kl_request_bodies_refused_total{code="body_timeout"}`, "kl_request_body_memory_bytes 6.7108864e+07"} {
		if !strings.Contains(exposed, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestAuthLockBodyTooLarge: the authenticated lane reads a LOCK's body to
// tell a plan from an apply, through the same bounded reader; a body past
// the limit is answered 413 by the handler, not misread.
func TestAuthLockBodyTooLarge(t *testing.T) {
	eachAuthEnv(t, func(t *testing.T, env *testEnv, ts tenancy.TenantStore) {
		a := seedTenant(t, ts, "acme", "prod")
		big := append([]byte(`{"ID":"l1","Operation":"OperationTypePlan","Info":"`), bytes.Repeat([]byte("x"), 2<<20)...)
		big = append(big, `"}`...)
		w := env.do("LOCK", a.path(0, "app"), big, bearer(a.auto[0])...)
		if e := errorOf(t, w); w.Code != http.StatusRequestEntityTooLarge || e.Error != "body_too_large" {
			t.Errorf("LOCK with a 2 MiB body = %d %s; want 413 body_too_large", w.Code, w.Body)
		}
		if env.h.bodies.held.Load() != 0 {
			t.Errorf("%d bytes of the budget still held", env.h.bodies.held.Load())
		}
	})
}

// TestBodyMemoryShare is the probe of issue 26: 46 connections of one
// read-write token that each send 3 MiB of an 8 MiB state and stall hold
// at most that credential's share of --body-memory (half of it), the rest
// refused with 429 body_memory_share and Retry-After; meanwhile another
// credential's 6 MiB POST is stored; once the stalled uploads end, the
// budget is all given back.
func TestBodyMemoryShare(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 46 connections and sends 140 MiB over loopback")
	}
	eachEnv(t, Options{Auth: AuthToken, OperatorToken: operatorSecret, BodyLimit: 8 << 20, BodyMemory: 32 << 20, BodyIdleTimeout: time.Minute, BodyMinRate: 1}, func(t *testing.T, env *testEnv) {
		a := seedTenant(t, env.store.(tenancy.TenantStore), "acme", "prod")
		srv := httptest.NewServer(env.h)
		t.Cleanup(srv.Close)
		addr := srv.Listener.Addr().String()
		chunk := bytes.Repeat([]byte(" "), 3<<20)
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			stalled []*rawPost
		)
		for i := range 46 {
			wg.Go(func() {
				p := startRawPostTo(t, addr, fmt.Sprintf("/v1/states/%s/%s/stalled-%d", a.ws.ID, a.envs[0].PublicID, i), "Authorization: Bearer "+a.auto[0]+"\r\n", 8<<20, chunk)
				mu.Lock()
				stalled = append(stalled, p)
				mu.Unlock()
			})
		}
		wg.Wait()
		waitFor(t, 10*time.Second, "the stalled uploads read or refused", func() bool {
			refused := 0
			for _, p := range stalled {
				refused += len(p.answer)
			}
			return int(env.h.bodies.count.Load())+refused == len(stalled)
		})
		if held, share := env.h.bodies.held.Load(), env.h.bodies.share; held > share || held == 0 {
			t.Errorf("one credential's stalled bodies hold %d bytes; want some, and at most its share of %d", held, share)
		}

		doc := stateDoc(t, "lin", 1, map[string]string{"web": strings.Repeat("x", 3<<20)})
		req, _ := http.NewRequest("POST", srv.URL+a.path(0, "other"), bytes.NewReader(doc))
		req.SetBasicAuth(a.ws.ID, a.pat) // a member's PAT: another credential
		// Another credential of the same workspace posts a large state.
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var e errorBody
		json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("another credential's %d MiB POST beside the stalled uploads = %d %s: %s", len(doc)>>20, resp.StatusCode, e.Error, e.Message)
		}

		refused := 0
		for _, p := range stalled {
			select {
			case ans := <-p.answer:
				if ans.status != http.StatusTooManyRequests || ans.code != "body_memory_share" || ans.retryAfter == "" {
					t.Errorf("a stalled upload past the share = %d %s (Retry-After %q), want 429 body_memory_share with Retry-After", ans.status, ans.code, ans.retryAfter)
				}
				refused++
			default:
				p.conn.Close() // still held: it stalls
			}
		}
		if refused == 0 {
			t.Error("no stalled upload was refused its credential's share")
		}
		waitFor(t, 10*time.Second, "the budget given back", func() bool { return env.h.bodies.held.Load() == 0 })
		if exposed := env.do("GET", "/metrics", nil).Body.String(); !strings.Contains(exposed, `kl_request_bodies_refused_total{code="body_memory_share"}`) {
			t.Error("/metrics lacks the share's refusals")
		}
		t.Logf("%d of %d stalled uploads refused their credential's share; another credential's POST stored", refused, len(stalled))
	})
}

// countingReader counts the bytes read from it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// TestUnknownTokenBodyUnread: a LOCK with a token no one issued is refused
// 401 without its body being read, so that a caller without a credential
// holds no body memory; a known token's LOCK body is read.
func TestUnknownTokenBodyUnread(t *testing.T) {
	env, ts := newAuthEnv(t)
	a := seedTenant(t, ts, "acme", "prod")
	for _, tc := range []struct {
		secret string
		status int
		read   bool
	}{{"klt_nope", http.StatusUnauthorized, false}, {a.auto[0], http.StatusOK, true}} {
		body := &countingReader{r: bytes.NewReader(mustJSON(t, lockInfo("l-1", "ci")))}
		r := httptest.NewRequest("LOCK", a.path(0, "app"), body)
		r.Header.Set("Authorization", "Bearer "+tc.secret)
		w := httptest.NewRecorder()
		env.h.ServeHTTP(w, r)
		if w.Code != tc.status || (body.n > 0) != tc.read {
			t.Errorf("LOCK with %.8s… = %d, %d body bytes read; want %d, read: %v", tc.secret, w.Code, body.n, tc.status, tc.read)
		}
	}
}

package httpbackend

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/graph/graphtest"
)

// TestOptimisticWriters runs 32 writers through a real HTTP server on one
// optimistic state of 10,000 instances, on each store. All of them hold
// their locks at the same time, read the same version, change instances
// no one else changes and POST at once: every commit must land (200),
// merged onto the others, and none may be lost.
func TestOptimisticWriters(t *testing.T) {
	const (
		writers   = 32
		instances = 10000
	)
	base := graphtest.Generate(instances, 64, graph.FormatCompact)
	// Writer i changes instance i×311 (and, to change more than one,
	// i×311+1): disjoint, spread over the document.
	owned := func(i int) []int { return []int{i * 311, i*311 + 1} }
	var all []int
	for i := range writers {
		all = append(all, owned(i)...)
	}
	want, err := graphtest.Decode(graphtest.Change(base, all, graph.FormatCompact))
	if err != nil {
		t.Fatal(err)
	}

	for _, be := range benchBackends {
		t.Run(be.name, func(t *testing.T) {
			st, err := be.open(t)
			if err != nil {
				t.Fatal(err)
			}
			env := newEnvOn(t, st, Options{})
			srv := httptest.NewServer(env.h)
			t.Cleanup(srv.Close)
			c := &protocolClient{t: t, url: srv.URL + "/v1/states/big", http: srv.Client()}

			env.optimistic("big")
			if code, body := c.do("POST", "", base); code != http.StatusOK {
				t.Fatalf("first POST: %d %s", code, body)
			}

			var (
				locked, read sync.WaitGroup
				done         sync.WaitGroup
				errs         = make(chan error, writers)
			)
			locked.Add(writers)
			read.Add(writers)
			allLocked := make(chan struct{})
			allRead := make(chan struct{})
			for i := range writers {
				done.Add(1)
				go func() {
					defer done.Done()
					errs <- c.write(i, owned(i), &locked, allLocked, &read, allRead)
				}()
			}
			// The first barrier: every writer holds its lock.
			locked.Wait()
			ids, bases := env.holders("big")
			if len(ids) != writers {
				t.Errorf("GET /v1/api/states/big lists %d holders, want %d at once", len(ids), writers)
			}
			for _, b := range bases {
				if b != 1 {
					t.Errorf("a holder's base serial is %d, want 1", b)
				}
			}
			close(allLocked)
			// The second: every writer has read the state; all POST now.
			read.Wait()
			close(allRead)
			done.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Error(err)
				}
			}
			if t.Failed() {
				t.FailNow()
			}

			code, final := c.do("GET", "", nil)
			if code != http.StatusOK {
				t.Fatalf("final GET: %d", code)
			}
			got, err := graphtest.Decode(final)
			if err != nil {
				t.Fatal(err)
			}
			if d := resourceDiff(got, want); d != "" {
				t.Errorf("final state lost or garbled changes: %s", d)
			}
			if ids, _ := env.holders("big"); len(ids) != 0 {
				t.Errorf("holders left: %v", ids)
			}

			vs, err := env.engine.History(t.Context(), "big", kilolock.HistoryOptions{Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			merges := 0
			for _, v := range vs {
				if v.Merged {
					if v.Source != kilolock.SourceApply {
						t.Errorf("merged version %d: source %s, want apply", v.Number, v.Source)
					}
					merges++
					if v.BaseSerial != 1 || v.Changed != 2 || v.Added != 0 || v.Removed != 0 {
						t.Errorf("merge version %d: base serial %d, +%d ~%d -%d; want base 1 and 2 changed", v.Number, v.BaseSerial, v.Added, v.Changed, v.Removed)
					}
				}
			}
			if len(vs) != writers+1 || merges == 0 {
				t.Errorf("history has %d versions, %d of them merges; want %d versions with merges", len(vs), merges, writers+1)
			}
			t.Logf("%d versions, %d merges", len(vs), merges)
		})
	}
}

// protocolClient speaks the backend protocol to one state over real HTTP.
type protocolClient struct {
	t    testing.TB
	url  string
	http *http.Client
}

// do sends one request and returns the status and body.
func (c *protocolClient) do(method, query string, body []byte) (int, []byte) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, c.url+query, r)
	if err != nil {
		c.t.Error(err)
		return 0, nil
	}
	if body != nil {
		req.Header.Set("Content-MD5", md5Of(body))
	}
	resp, err := c.http.Do(req)
	if err != nil {
		c.t.Error(err)
		return 0, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// write is one writer: LOCK, wait until everyone holds a lock, GET, change
// its instances, wait until everyone has read, POST under its lock,
// UNLOCK. The barriers are released by the test.
func (c *protocolClient) write(i int, which []int, locked *sync.WaitGroup, allLocked <-chan struct{}, read *sync.WaitGroup, allRead <-chan struct{}) error {
	li := lockInfo(fmt.Sprintf("lock-%02d", i), fmt.Sprintf("writer-%02d", i))
	code, body := c.do("LOCK", "", mustJSON(c.t, li))
	locked.Done()
	if code != http.StatusOK {
		read.Done()
		return fmt.Errorf("writer %d: LOCK: %d %s", i, code, body)
	}
	<-allLocked
	code, doc := c.do("GET", "", nil)
	var next []byte
	if code == http.StatusOK {
		next = graphtest.Change(doc, which, graph.FormatCompact) // serial + 1
	}
	read.Done()
	if code != http.StatusOK {
		return fmt.Errorf("writer %d: GET: %d", i, code)
	}
	<-allRead
	start := time.Now()
	code, body = c.do("POST", "?ID="+li.ID, next)
	if code != http.StatusOK {
		return fmt.Errorf("writer %d: POST: %d %s", i, code, body)
	}
	var ans writeAnswer
	if err := json.Unmarshal(body, &ans); err != nil {
		return fmt.Errorf("writer %d: POST answer: %v", i, err)
	}
	c.t.Logf("writer %2d: version %2d, source %-5s, %3d rows, %s", i, ans.Version, ans.Source, ans.Rows, time.Since(start).Round(time.Millisecond))
	if code, body := c.do("UNLOCK", "", mustJSON(c.t, li)); code != http.StatusOK {
		return fmt.Errorf("writer %d: UNLOCK: %d %s", i, code, body)
	}
	return nil
}

// resourceDiff describes how two states' resources differ, "" when they
// are the same.
func resourceDiff(got, want *graphtest.StateV4) string {
	if len(got.Resources) != len(want.Resources) {
		return fmt.Sprintf("%d resources, want %d", len(got.Resources), len(want.Resources))
	}
	var bad []string
	for i := range want.Resources {
		g, w := got.Resources[i], want.Resources[i]
		if len(g.Instances) != len(w.Instances) {
			bad = append(bad, fmt.Sprintf("%s: %d instances, want %d", w.Name, len(g.Instances), len(w.Instances)))
			continue
		}
		for k := range w.Instances {
			if !sameJSON(g.Instances[k].Attributes, w.Instances[k].Attributes) {
				bad = append(bad, fmt.Sprintf("%s%s[%d]", w.Module, w.Name, k))
			}
		}
	}
	switch {
	case len(bad) == 0:
		return ""
	case len(bad) > 10:
		bad = append(bad[:10], fmt.Sprintf("and %d more", len(bad)-10))
	}
	return strings.Join(bad, ", ")
}

// sameJSON reports whether a and b are the same JSON but for layout: a
// version the server made may be laid out as Terraform writes state.
func sameJSON(a, b []byte) bool {
	var ca, cb bytes.Buffer
	return json.Compact(&ca, a) == nil && json.Compact(&cb, b) == nil && bytes.Equal(ca.Bytes(), cb.Bytes())
}

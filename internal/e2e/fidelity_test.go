package e2e_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/kilolock/kilolock/internal/tofu"
)

// postRecorder is a reverse proxy in front of kld that keeps the body of
// every POST tofu sends: what tofu wrote, byte for byte.
type postRecorder struct {
	mu    sync.Mutex
	posts [][]byte
}

func (r *postRecorder) last(t *testing.T) []byte {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.posts) == 0 {
		t.Fatal("tofu sent no POST")
	}
	return r.posts[len(r.posts)-1]
}

func (r *postRecorder) start(t *testing.T, target string) *httptest.Server {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodPost {
			b, err := io.ReadAll(req.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			r.mu.Lock()
			r.posts = append(r.posts, b)
			r.mu.Unlock()
			req.Body = io.NopCloser(bytes.NewReader(b))
		}
		proxy.ServeHTTP(w, req)
	}))
	t.Cleanup(s.Close)
	return s
}

// recordedBackend returns the backend block of state name on srv through a
// postRecorder, and the recorder.
func recordedBackend(t *testing.T, srv *tofu.Server, name string) (*postRecorder, string) {
	rec := &postRecorder{}
	proxy := rec.start(t, srv.URL)
	return rec, strings.ReplaceAll(srv.Backend(name), srv.URL, proxy.URL)
}

// TestByteFidelity checks that GET answers exactly the bytes tofu POSTed,
// plain and gzip-compressed, after a create and after an update.
func TestByteFidelity(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, databaseURL string) {
		srv := setup(t, databaseURL)
		rec, backend := recordedBackend(t, srv, "example")
		wd := tofu.NewWorkdir(t, backend+smallConfig("v1"))
		wd.Must("init", "-no-color")

		for _, rev := range []string{"v1", "v2"} {
			wd.WriteFile("main.tf", backend+smallConfig(rev))
			wd.Must("apply", "-auto-approve", "-no-color")
			posted := rec.last(t)
			got := getState(t, srv, "example")
			if !bytes.Equal(got, posted) {
				t.Errorf("%s: GET is not what tofu POSTed:\nPOST (%d bytes): %.300q\nGET  (%d bytes): %.300q", rev, len(posted), posted, len(got), got)
			}
			if gz := getGzip(t, srv.StateURL("example")); !bytes.Equal(gz, posted) {
				t.Errorf("%s: GET with Accept-Encoding: gzip, decompressed, is not what tofu POSTed (%d vs %d bytes)", rev, len(gz), len(posted))
			}
		}
	})
}

// getGzip GETs url asking for gzip, as tofu does, and returns the body
// decompressed when the server compressed it.
func getGzip(t *testing.T, u string) []byte {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept-Encoding", "gzip")
	tr := &http.Transport{DisableCompression: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", u, resp.Status)
	}
	var body io.Reader = resp.Body
	if resp.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(resp.Body)
		if err != nil {
			t.Fatalf("gzip answer: %v", err)
		}
		body = zr
	}
	b, err := io.ReadAll(body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestNulInAKey is OpenTofu with `for_each = toset(["a\u0000b"])`: the
// apply must save its state on every store (PostgreSQL's text holds no
// NUL), GET must answer it byte for byte, and the next plan must find
// nothing to do.
func TestNulInAKey(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, databaseURL string) {
		srv := setup(t, databaseURL)
		rec, backend := recordedBackend(t, srv, "nul")
		config := backend + `
resource "terraform_data" "keyed" {
  for_each = toset(["a\u0000b", "plain"])
  input    = "in-${each.key}"
}

output "keys" {
  value = { for k, v in terraform_data.keyed : k => v.output }
}
`
		wd := tofu.NewWorkdir(t, config)
		wd.Must("init", "-no-color")
		wd.Must("apply", "-auto-approve", "-no-color")
		posted := rec.last(t)
		if !bytes.Contains(posted, []byte(`a\u0000b`)) {
			t.Fatalf("tofu's state has no NUL key: %.300q", posted)
		}
		if got := getState(t, srv, "nul"); !bytes.Equal(got, posted) {
			t.Errorf("GET is not what tofu POSTed:\nPOST %.300q\nGET  %.300q", posted, got)
		}
		if list := wd.Must("state", "list", "-no-color"); !strings.Contains(list, `terraform_data.keyed["plain"]`) || strings.Count(list, "terraform_data.keyed") != 2 {
			t.Errorf("state list:\n%s", list)
		}
		if _, stderr, code := wd.Run("plan", "-detailed-exitcode", "-no-color"); code != 0 {
			t.Errorf("plan after the apply exited %d (0: nothing to do):\n%s", code, stderr)
		}
	})
}

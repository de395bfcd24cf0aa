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

// TestByteFidelity checks that GET answers exactly the bytes tofu POSTed,
// plain and gzip-compressed, after a create and after an update.
func TestByteFidelity(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, databaseURL string) {
		srv := setup(t, databaseURL)
		var rec postRecorder
		proxy := rec.start(t, srv.URL)
		backend := strings.ReplaceAll(srv.Backend("example"), srv.URL, proxy.URL)
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

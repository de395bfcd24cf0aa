package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/client"
)

// A 503 with Retry-After is retried, at most as often as allowed; what
// is left is the server's answer, matching kilolock.ErrUnavailable.
func TestRetriesUnavailable(t *testing.T) {
	var calls atomic.Int32
	var failures int32 = 2
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= failures {
			w.Header().Set("Retry-After", "1")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`{"error":"unavailable","message":"the database is unavailable","hint":"retry in 1 seconds"}`))
			return
		}
		w.Write([]byte(`{"status":"ready"}`))
	}))
	defer srv.Close()
	ctx := context.Background()

	c, _ := client.New(srv.URL, client.WithRetries(3, 10*time.Millisecond))
	if s, err := c.Ready(ctx); err != nil || s.Status != "ready" || calls.Load() != 3 {
		t.Fatalf("Ready = %+v, %v after %d calls; want ready after 2 retries", s, err, calls.Load())
	}

	calls.Store(0)
	c, _ = client.New(srv.URL, client.WithRetries(1, 10*time.Millisecond))
	_, err := c.Ready(ctx)
	var ce *client.Error
	if !errors.Is(err, kilolock.ErrUnavailable) || !errors.As(err, &ce) || ce.RetryAfter != time.Second || calls.Load() != 2 {
		t.Fatalf("Ready with 1 retry: %v after %d calls; want ErrUnavailable asking 1s, after 2 calls", err, calls.Load())
	}

	// A context that ends while waiting ends the call.
	calls.Store(0)
	c, _ = client.New(srv.URL, client.WithRetries(3, time.Hour))
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := c.Ready(cctx); !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, kilolock.ErrUnavailable) {
		t.Fatalf("Ready with a short context: %v, want the deadline and the 503", err)
	}
}

// Strict decoding refuses a field the client does not know; the default
// ignores it, as a client older than its server must.
func TestStrictDecoding(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"status":"ok","new_field":1}`))
	}))
	defer srv.Close()
	ctx := context.Background()
	c, _ := client.New(srv.URL)
	if _, err := c.Health(ctx); err != nil {
		t.Fatalf("Health: %v", err)
	}
	c, _ = client.New(srv.URL, client.WithStrictDecoding())
	if _, err := c.Health(ctx); err == nil {
		t.Fatal("strict Health accepted an unknown field")
	}
}

// An answer that is not kld's JSON (a proxy's page) keeps its status and
// text; credentials are sent as the server reads them.
func TestProxyErrorAndCredentials(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); ok && u == "ws_1" && p == "klt_x" || r.Header.Get("Authorization") == "Bearer klo_y" {
			w.Write([]byte(`{"status":"ok"}`))
			return
		}
		http.Error(w, "<html>bad gateway</html>", http.StatusBadGateway)
	}))
	defer srv.Close()
	ctx := context.Background()
	c, _ := client.New(srv.URL)
	_, err := c.Health(ctx)
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Status != http.StatusBadGateway || ce.Body.Message == "" {
		t.Fatalf("Health through a broken proxy: %v", err)
	}
	for _, cr := range []client.Credentials{
		client.Basic{User: "ws_1", Password: "klt_x"},
		client.Token("klo_y"),
		client.TokenSource(func(context.Context) (string, error) { return "klo_y", nil }),
	} {
		c, _ := client.New(srv.URL, client.WithCredentials(cr))
		if _, err := c.Health(ctx); err != nil {
			t.Errorf("Health with %T: %v", cr, err)
		}
	}
	bad := errors.New("no identity token")
	c, _ = client.New(srv.URL, client.WithCredentials(client.TokenSource(func(context.Context) (string, error) { return "", bad })))
	if _, err := c.Health(ctx); !errors.Is(err, bad) {
		t.Fatalf("Health with a failing token source: %v", err)
	}
}

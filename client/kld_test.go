package client_test

import (
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"testing"

	"github.com/charmbracelet/log"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/client"
	"github.com/kilolock/kilolock/httpbackend"
	"github.com/kilolock/kilolock/internal/testpg"
	"github.com/kilolock/kilolock/store/sqlite"
)

// newKLD is kld's handler with o over an engine on a fresh SQLite store.
func newKLD(t testing.TB, o httpbackend.Options) *httpbackend.Handler {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "kld.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return newKLDOn(t, st, o)
}

// newKLDOn serves st.
func newKLDOn(t testing.TB, st kilolock.Store, o httpbackend.Options) *httpbackend.Handler {
	t.Helper()
	logger := log.New(io.Discard)
	if o.Logger == nil {
		o.Logger = logger
	}
	return httpbackend.New(kilolock.NewEngine(st, kilolock.Options{Logger: logger}), o)
}

// inProcess is a client of h without a socket.
func inProcess(t testing.TB, h *httpbackend.Handler, opts ...client.Option) *client.Client {
	t.Helper()
	c, err := client.New("http://kld.invalid", append([]client.Option{client.WithTransport(client.InProcess(h))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestMain(m *testing.M) { testpg.Main(m) }

func jsonInto(s string, v any) error { return json.Unmarshal([]byte(s), v) }

package orchestrate

import (
	"io"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/charmbracelet/log"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/client"
	"github.com/kilolock/kilolock/httpbackend"
	"github.com/kilolock/kilolock/internal/testpg"
	"github.com/kilolock/kilolock/store"
)

func TestMain(m *testing.M) { testpg.Main(m) }

// forEachStore runs f on a fresh SQLite database and a fresh PostgreSQL
// one, each as an engine with the clients the driver reaches it through:
// "engine" in-process (as kl --database), "http" over a socket (as kl
// --server).
func forEachStore(t *testing.T, f func(t *testing.T, e *kilolock.Engine, clients map[string]*client.Client)) {
	for name, url := range map[string]func(*testing.T) string{
		"sqlite":   func(t *testing.T) string { return filepath.Join(t.TempDir(), "kl.db") },
		"postgres": func(t *testing.T) string { return testpg.URL(t) },
	} {
		t.Run(name, func(t *testing.T) {
			e, clients := served(t, url(t))
			f(t, e, clients)
		})
	}
}

// served opens the store at url and serves it with kld's handler.
func served(t *testing.T, url string) (*kilolock.Engine, map[string]*client.Client) {
	t.Helper()
	s, err := store.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	e := kilolock.NewEngine(s, kilolock.Options{Logger: log.New(io.Discard)})
	h := httpbackend.New(e, httpbackend.Options{Logger: log.New(io.Discard)})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	hc, err := client.New(srv.URL, client.WithTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ec, err := client.New("http://database.invalid", client.WithTransport(client.InProcess(h)))
	if err != nil {
		t.Fatal(err)
	}
	return e, map[string]*client.Client{"engine": ec, "http": hc}
}

package client_test

import (
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/charmbracelet/log"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/client"
	"github.com/kilolock/kilolock/httpbackend"
	"github.com/kilolock/kilolock/internal/testpg"
	"github.com/kilolock/kilolock/keyring"
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

// TestRotateKeysAndFollow: a rotation followed until it is over is seen
// finished, every step shown to Progress; one that stops on an error (no
// key to rotate to) is an error.
func TestRotateKeysAndFollow(t *testing.T) {
	ctx := context.Background()
	none := inProcess(t, newKLD(t, httpbackend.Options{}))
	if r, err := none.RotateKeysAndFollow(ctx, client.RotationOptions{Wait: true}); err == nil || r.Error == "" {
		t.Errorf("a rotation with no key to rotate to = %+v, %v; want its error", r, err)
	}

	ring, err := keyring.Parse([]byte(keyring.Generate() + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "kld.db"), sqlite.WithKeyring(ring))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	c := inProcess(t, newKLDOn(t, st, httpbackend.Options{}))
	var seen []kilolock.KeyRotation
	r, err := c.RotateKeysAndFollow(ctx, client.RotationOptions{Wait: true, Every: time.Millisecond,
		Progress: func(r kilolock.KeyRotation) { seen = append(seen, r) }})
	if err != nil || r.Finished.IsZero() || len(seen) == 0 || !seen[len(seen)-1].Finished.Equal(r.Finished) {
		t.Fatalf("RotateKeysAndFollow = %+v, %v after %d steps seen; want it finished, its last step seen", r, err, len(seen))
	}
	if _, err := c.RotateKeysAndFollow(ctx, client.RotationOptions{}); err != nil {
		t.Errorf("a rotation only started (no Progress, no Wait): %v", err)
	}
}

// Command embed is a small Go service that embeds KiloLock: it opens a
// store, builds a kilolock.Engine, serves the Terraform/OpenTofu HTTP backend
// under /terraform/ behind its own authentication, and adds an endpoint of
// its own that reads a state's outputs through the Engine.
//
//	EMBED_TOKEN=s3cret go run ./examples/embed
//
// Environment:
//
//	EMBED_TOKEN     required: the password (basic auth) or bearer token clients send
//	EMBED_DATABASE  store URL: postgres://… or a SQLite file path (default embed.db)
//	EMBED_ADDR      listen address (default 127.0.0.1:8090)
package main

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/charmbracelet/log"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/httpbackend"
	"github.com/kilolock/kilolock/store"
)

// prefix is where the service mounts the Terraform backend.
const prefix = "/terraform"

func main() {
	logger := httpbackend.NewLogger(os.Stderr, log.Options{}) // one line per entry, whatever clients send
	cfg := config{
		Addr:     envOr("EMBED_ADDR", "127.0.0.1:8090"),
		Database: envOr("EMBED_DATABASE", "embed.db"),
		Token:    os.Getenv("EMBED_TOKEN"),
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, logger); err != nil {
		logger.Error("embed", "err", err)
		os.Exit(1)
	}
}

// config is what the service needs to start.
type config struct {
	Addr     string
	Database string
	Token    string
}

// run serves cfg until ctx is done, then shuts down gracefully.
func run(ctx context.Context, cfg config, logger *log.Logger) error {
	if cfg.Token == "" {
		return errors.New("EMBED_TOKEN is empty: set the token clients must present")
	}
	s, err := store.Open(ctx, cfg.Database)
	if err != nil {
		return err
	}
	defer s.Close()
	engine := kilolock.NewEngine(s, kilolock.Options{Logger: logger})

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           newHandler(engine, cfg.Token, logger),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	logger.Info("listening", "addr", ln.Addr().String(), "backend", "http://"+ln.Addr().String()+prefix+"/v1/states/NAME")
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return srv.Shutdown(shutdown)
}

// newHandler returns the service's routes: the KiloLock backend under
// prefix and the outputs endpoint, both behind the service's token check.
func newHandler(e *kilolock.Engine, token string, logger *log.Logger) http.Handler {
	backend := httpbackend.New(e, httpbackend.Options{Logger: logger})
	mux := http.NewServeMux()
	mux.Handle(prefix+"/", http.StripPrefix(prefix, backend))
	mux.Handle("GET /outputs/{name}", outputsHandler(e))
	return requireToken(token, mux)
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

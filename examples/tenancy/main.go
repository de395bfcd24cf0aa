// Command tenancy is a platform team's service on KiloLock's multi-tenant
// lane: it provisions a team (a workspace with a prod environment) through
// tenancy.Control, issues the team a 24-hour automation token, prints the
// backend block to paste, and serves the authenticated lane.
//
//	go run ./examples/tenancy
//
// Environment:
//
//	TENANCY_DATABASE        store URL: postgres://… or a SQLite file path (default tenancy.db)
//	TENANCY_ADDR            listen address (default 127.0.0.1:8091)
//	TENANCY_TEAM            the workspace's name (default platform)
//	TENANCY_OWNER           the workspace's owner when it is created (default admin)
//	TENANCY_OPERATOR_TOKEN  klo_… secret opening the control API (the client package); unset keeps it closed
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
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
	"github.com/kilolock/kilolock/tenancy"
)

// stateName is the state the printed backend block points at; a team may
// keep any number of states in an environment.
const stateName = "main"

func main() {
	logger := httpbackend.NewLogger(os.Stderr, log.Options{}) // one line per entry, whatever clients send
	cfg := config{
		Addr:          envOr("TENANCY_ADDR", "127.0.0.1:8091"),
		Database:      envOr("TENANCY_DATABASE", "tenancy.db"),
		Team:          envOr("TENANCY_TEAM", "platform"),
		Owner:         envOr("TENANCY_OWNER", "admin"),
		OperatorToken: os.Getenv("TENANCY_OPERATOR_TOKEN"),
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, logger, os.Stdout); err != nil {
		logger.Error("tenancy", "err", err)
		os.Exit(1)
	}
}

// config is what the service needs to start.
type config struct {
	Addr, Database, Team, Owner, OperatorToken string
}

// run provisions cfg.Team, prints its backend block to out, and serves the
// authenticated lane until ctx is done, then shuts down gracefully.
func run(ctx context.Context, cfg config, logger *log.Logger, out io.Writer) error {
	st, err := store.Open(ctx, cfg.Database)
	if err != nil {
		return err
	}
	defer st.Close()
	ts, ok := st.(tenancy.TenantStore)
	if !ok {
		return errors.New("the store keeps no workspaces (tenancy.TenantStore)")
	}
	host, _ := os.Hostname()
	t, err := provision(ctx, tenancy.NewControl(ts), kilolock.Caller{Actor: "tenancy-example", From: host}, cfg.Team, cfg.Owner)
	if err != nil {
		return fmt.Errorf("provision %s: %w", cfg.Team, err)
	}

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler: httpbackend.New(kilolock.NewEngine(st, kilolock.Options{Logger: logger}), httpbackend.Options{
			Logger: logger, Auth: httpbackend.AuthToken, OperatorToken: cfg.OperatorToken,
		}),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	logger.Info("listening", "addr", ln.Addr().String(), "workspace", t.Workspace.ID, "environment", t.Env.PublicID, "token", t.TokenID)
	printBackend(out, "http://"+ln.Addr().String(), t)
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

// printBackend writes the backend block a team member pastes, and the
// password to export, for the server at base.
func printBackend(out io.Writer, base string, t *tenant) {
	addr := fmt.Sprintf("%s/v1/states/%s/%s/%s", base, t.Workspace.ID, t.Env.PublicID, stateName)
	fmt.Fprintf(out, `terraform {
  backend "http" {
    address        = %[1]q
    lock_address   = %[1]q
    unlock_address = %[1]q
    lock_method    = "LOCK"
    unlock_method  = "UNLOCK"
    username       = %[2]q
  }
}

export TF_HTTP_PASSWORD=%[3]s
`, addr, t.Workspace.ID, t.Secret)
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

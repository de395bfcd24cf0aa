package testpg

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// EnvURL names the environment variable holding the URL of an existing
// server to create test databases on, instead of a throwaway cluster.
const EnvURL = "KL_TEST_DATABASE_URL"

var (
	mainCalled atomic.Bool
	dbSeq      atomic.Int64

	serverOnce   sync.Once
	srv          *server // set once, by serverOnce
	srvErr       error
	shutdownOnce sync.Once
)

// server is where test databases are created: the throwaway cluster or the
// server named by KL_TEST_DATABASE_URL.
type server struct {
	baseURL string        // a URL of the server; its database is replaced per test
	admin   *pgxpool.Pool // connected to baseURL, creates and drops databases
	cluster *cluster      // nil when KL_TEST_DATABASE_URL is used
}

// Main runs the tests and then stops the throwaway cluster, if one was
// started. Call it from TestMain; it does not return.
func Main(m *testing.M) {
	mainCalled.Store(true)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		if _, ok := <-sigs; ok {
			shutdown()
			os.Exit(1)
		}
	}()
	code := m.Run()
	signal.Stop(sigs)
	shutdown()
	os.Exit(code)
}

// shutdown stops the cluster, once: on a signal or after the tests.
func shutdown() {
	shutdownOnce.Do(func() {
		// Make sure no cluster starts after this point.
		serverOnce.Do(func() { srvErr = errors.New("the tests have ended") })
		if srv == nil {
			return
		}
		srv.admin.Close()
		if srv.cluster != nil {
			srv.cluster.stop()
		}
	})
}

// URL returns the URL of a new, empty database, dropped (with any
// connections still open on it) when tb ends. It skips tb when PostgreSQL
// is not installed, or fails it when CI=true.
func URL(tb testing.TB) string {
	tb.Helper()
	serverOnce.Do(func() { srv, srvErr = start() })
	if srvErr != nil {
		var miss *missingError
		switch {
		case errors.As(srvErr, &miss) && inCI():
			tb.Fatalf("testpg: %v; CI is set, so this fails rather than skips: install PostgreSQL or set %s", srvErr, EnvURL)
		case errors.As(srvErr, &miss):
			tb.Skipf("testpg: %v (set %s to use an existing server)", srvErr, EnvURL)
		}
		tb.Fatalf("testpg: %v", srvErr)
	}
	s := srv
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	name := fmt.Sprintf("kl_test_%d_%d", os.Getpid(), dbSeq.Add(1))
	if _, err := s.admin.Exec(ctx, "CREATE DATABASE "+name); err == nil {
		tb.Cleanup(func() {
			s.drop("DROP DATABASE IF EXISTS "+name+" WITH (FORCE)", "DROP DATABASE IF EXISTS "+name)
			s.drop("DROP ROLE IF EXISTS " + queryRole(name))
		})
		u, err := withDatabase(s.baseURL, name)
		if err != nil {
			tb.Fatalf("testpg: %v", err)
		}
		return u
	} else if !isCode(err, "42501") { // insufficient_privilege
		tb.Fatalf("testpg: create database %s: %v%s", name, err, s.logTail())
	}

	// A role that may not create databases still gets isolation: a schema
	// of its own, first on the search path.
	if _, err := s.admin.Exec(ctx, "CREATE SCHEMA "+name); err != nil {
		tb.Fatalf("testpg: the role may not create databases, and create schema %s: %v", name, err)
	}
	tb.Cleanup(func() {
		s.drop("DROP SCHEMA IF EXISTS " + name + " CASCADE")
		var db string
		if s.admin.QueryRow(context.Background(), "SELECT current_database()").Scan(&db) == nil {
			s.drop("DROP ROLE IF EXISTS " + queryRole(db+"_"+name))
		}
	})
	u, err := withParam(s.baseURL, "search_path", name)
	if err != nil {
		tb.Fatalf("testpg: %v", err)
	}
	return u
}

// drop runs the first statement that succeeds, so that DROP DATABASE …
// WITH (FORCE) falls back on servers older than 13.
func (s *server) drop(stmts ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, q := range stmts {
		if _, err := s.admin.Exec(ctx, q); err == nil {
			return
		}
	}
}

func (s *server) logTail() string {
	if s.cluster == nil {
		return ""
	}
	return s.cluster.logTail()
}

func start() (*server, error) {
	if u := os.Getenv(EnvURL); u != "" {
		admin, err := connect(u, 30*time.Second)
		if err != nil {
			return nil, fmt.Errorf("connect to %s: %w", EnvURL, err)
		}
		return &server{baseURL: u, admin: admin}, nil
	}
	if !mainCalled.Load() {
		return nil, errors.New("starting a throwaway PostgreSQL needs TestMain to call testpg.Main(m), which stops it when the tests end")
	}
	c, err := startCluster()
	if err != nil {
		return nil, err
	}
	admin, err := connect(c.url("postgres"), 30*time.Second)
	if err != nil {
		tail := c.logTail()
		c.stop()
		return nil, fmt.Errorf("connect to the throwaway cluster: %w%s", err, tail)
	}
	return &server{baseURL: c.url("postgres"), admin: admin, cluster: c}, nil
}

// connect opens a small pool and retries until the server answers: a
// cluster that pg_ctl reported started may still refuse connections for a
// moment (e.g. "the database system is starting up").
func connect(u string, wait time.Duration) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(u)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = 4
	deadline := time.Now().Add(wait)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err == nil {
			err = pool.Ping(ctx)
			if err != nil {
				pool.Close()
			}
		}
		cancel()
		if err == nil {
			return pool, nil
		}
		// The server answered with an error other than "starting up": a
		// wrong role, database or password; waiting will not help.
		var pe *pgconn.PgError
		if time.Now().After(deadline) || (errors.As(err, &pe) && pe.Code != "57P03") {
			return nil, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// queryRole is the name of the login role a PostgreSQL store makes for
// users' queries on database (and schema) name, when it is a plain name
// (see store/postgres).
func queryRole(name string) string { return `"kl_query_` + name + `"` }

func inCI() bool {
	v := strings.ToLower(os.Getenv("CI"))
	return v == "true" || v == "1"
}

func isCode(err error, code string) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == code
}

// withDatabase returns u naming database db instead of its own. u is a URL
// (postgres://…) or a keyword/value string (host=… dbname=…).
func withDatabase(u, db string) (string, error) {
	if !isURL(u) {
		return u + " dbname=" + db, nil
	}
	p, err := url.Parse(u)
	if err != nil {
		return "", fmt.Errorf("parse %s: %w", EnvURL, err)
	}
	p.Path = "/" + db
	p.RawPath = ""
	return p.String(), nil
}

// withParam returns u with a run-time parameter set.
func withParam(u, key, value string) (string, error) {
	if !isURL(u) {
		return u + " " + key + "=" + value, nil
	}
	p, err := url.Parse(u)
	if err != nil {
		return "", fmt.Errorf("parse %s: %w", EnvURL, err)
	}
	q := p.Query()
	q.Set(key, value)
	p.RawQuery = q.Encode()
	return p.String(), nil
}

func isURL(u string) bool {
	return strings.HasPrefix(u, "postgres://") || strings.HasPrefix(u, "postgresql://")
}

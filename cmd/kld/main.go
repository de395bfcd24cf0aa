// Command kld is the KiloLock server: a Terraform/OpenTofu HTTP state
// backend on SQLite (the default, zero set-up) or PostgreSQL (several kld
// replicas may share one database).
//
//	kld --database ./kilolock.db
//	kld --listen :8080 --database postgres://kl@db/kilolock
//	kld migrate --database postgres://kl@db/kilolock   # once per upgrade
//
// Exit codes: 0 after a clean shutdown (SIGTERM or SIGINT) or a migration,
// 1 on a failure while serving, 2 on a usage error, 65 when the database's
// schema is newer than this kld knows (a newer release migrated it), 69
// when the database cannot be reached at start, 71 when the address cannot
// be listened on, 78 when the database setting, or the encryption keys for
// it, are wrong.
package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/kilolock/kilolock/retention"

	"github.com/alecthomas/kong"
	"github.com/charmbracelet/log"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/httpbackend"
	"github.com/kilolock/kilolock/httpbackend/prommetrics"
	"github.com/kilolock/kilolock/internal/buildinfo"
	"github.com/kilolock/kilolock/internal/kldconfig"
)

type cli struct {
	Listen          string               `default:"127.0.0.1:8080" env:"KL_LISTEN" help:"Address to listen on, host:port. With port 0 a free port is taken and its URL printed on stdout."`
	Database        string               `default:"./kilolock.db" env:"KL_DATABASE_URL" help:"A postgres:// URL, or a SQLite file: a path or a sqlite:// URL (the file is created when missing)."`
	LogLevel        string               `default:"info" env:"KL_LOG_LEVEL" enum:"debug,info,warn,error" help:"Least severe level logged: debug, info, warn or error."`
	LogFormat       string               `default:"text" env:"KL_LOG_FORMAT" enum:"text,logfmt,json" help:"Log format: text, logfmt or json."`
	DefaultLockMode string               `default:"exclusive" env:"KL_DEFAULT_LOCK_MODE" enum:"exclusive,optimistic" help:"Lock mode of new states: exclusive (one holder, classic) or optimistic (many holders, writes merged or refused with 409). Change one state's mode with kl state config."`
	BodyLimit       httpbackend.ByteSize `default:"64MiB" env:"KL_BODY_LIMIT" help:"Largest state a client may POST, e.g. 64MiB or 1GiB."`
	BodyMemory      httpbackend.ByteSize `default:"256MiB" env:"KL_BODY_MEMORY" help:"Most bytes of request bodies held at once, across all connections (at least --body-limit); past it a request gets 503 with Retry-After, which terraform and tofu retry. With --auth=token one credential's bodies hold at most half of it (429 past that)."`
	ShutdownTimeout time.Duration        `default:"30s" env:"KL_SHUTDOWN_TIMEOUT" help:"How long in-flight requests may take to finish after SIGTERM."`
	Serving         kldconfig.Serving    `embed:""`
	Limits          kldconfig.Limits     `embed:""`
	Retention       kldconfig.Retention  `embed:""`
	Memory          kldconfig.Memory     `embed:""`
	Encryption      kldconfig.Encryption `embed:""`
	Profiling       kldconfig.Profiling  `embed:""`
	Trust           kldconfig.Trust      `embed:""`
	Version         kong.VersionFlag     `help:"Print the version and exit."`
	Serve           struct{}             `cmd:"" default:"1" help:"Serve the HTTP backend (the default)."`
	Migrate         struct{}             `cmd:"" help:"Bring the database's schema up to date, say what was applied, and exit: once per upgrade, before the new replicas start (docs/deploy.md). kld does it at start too, under the same lock. It takes kld's flags; those of serving are unused."`
}

func main() {
	var c cli
	bi := buildinfo.Info()
	parser, err := kong.New(&c,
		kong.Name("kld"),
		kong.Description("KiloLock server: Terraform/OpenTofu state as a versioned graph, over the HTTP backend protocol."),
		kong.Vars{"version": "kld " + bi.String()},
	)
	if err != nil {
		panic(err) // the flag struct is wrong: a programming error
	}
	kctx, err := parser.Parse(os.Args[1:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "kld: %v\nRun kld --help for usage.\n", err)
		os.Exit(kldconfig.ExitUsage)
	}
	logger := newLogger(c.LogLevel, c.LogFormat)
	if kctx.Command() == "migrate" {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		err = kldconfig.Migrate(ctx, logger, os.Stdout, c.Database, &c.Limits, &c.Encryption)
		stop()
	} else {
		err = run(&c, logger, bi)
	}
	if err != nil {
		code, hint := kldconfig.Exit(err)
		kv := []any{"err", err, "exit_code", code}
		if hint != "" {
			kv = append(kv, "hint", hint)
		}
		logger.Error("kld stopped", kv...)
		os.Exit(code)
	}
}

func newLogger(level, format string) *log.Logger {
	lvl, _ := log.ParseLevel(level) // kong checked the enum
	formatter := map[string]log.Formatter{"text": log.TextFormatter, "logfmt": log.LogfmtFormatter, "json": log.JSONFormatter}[format]
	// One line per entry, whatever the values clients send hold.
	return httpbackend.NewLogger(os.Stderr, log.Options{Level: lvl, ReportTimestamp: true, TimeFormat: time.RFC3339, Formatter: formatter})
}

func run(c *cli, logger *log.Logger, bi buildinfo.BuildInfo) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	gcPercent := c.Memory.Apply()
	c.Profiling.Apply()
	tlsConfig, err := c.Serving.TLSConfig()
	if err != nil {
		return &kldconfig.ExitError{Code: kldconfig.ExitConfig, Err: err}
	}
	st, atRest, err := kldconfig.Open(ctx, logger, c.Database, &c.Limits, &c.Encryption)
	if err != nil {
		return err
	}
	defer st.Close()

	verifier, err := c.Trust.Verifier()
	if err != nil {
		return err
	}
	engine := kilolock.NewEngine(st, c.Memory.Engine(c.Limits.Engine(kilolock.Options{Logger: logger, DefaultLockMode: kilolock.LockMode(c.DefaultLockMode)})))
	handler := httpbackend.New(engine, c.Limits.Handler(httpbackend.Options{
		Logger:        logger,
		BodyLimit:     int64(c.BodyLimit),
		BodyMemory:    int64(c.BodyMemory),
		Version:       httpbackend.VersionInfo{Version: bi.Version, Commit: bi.Commit, Date: bi.Date, GoVersion: bi.GoVersion},
		Auth:          c.Serving.AuthMode(),
		OperatorToken: c.Serving.OperatorToken,
		PublicURL:     c.Serving.Public(),
		Trust:         verifier,
		Metrics:       prommetrics.New(nil),
	}))
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		// A large state over a slow link: generous, but bounded.
		ReadTimeout:    5 * time.Minute,
		WriteTimeout:   5 * time.Minute,
		IdleTimeout:    2 * time.Minute,
		MaxHeaderBytes: 1 << 20,
		ErrorLog:       logger.StandardLog(log.StandardLogOptions{ForceLevel: log.WarnLevel}),
		TLSConfig:      tlsConfig,
	}

	ln, err := net.Listen("tcp", c.Listen)
	if err != nil {
		return &kldconfig.ExitError{Code: kldconfig.ExitListen, Err: err}
	}
	addr, scheme := ln.Addr().String(), "http"
	if tlsConfig != nil {
		ln, scheme = tls.NewListener(ln, tlsConfig), "https"
	} else if host, _, _ := net.SplitHostPort(addr); c.Serving.Auth == "token" && !net.ParseIP(host).IsLoopback() && !c.Serving.BehindTLS() {
		logger.Warn("tokens travel in clear: serve HTTPS (--tls-cert, --tls-key) or put TLS in front")
	}
	if _, port, _ := net.SplitHostPort(c.Listen); port == "0" {
		fmt.Printf("%s://%s\n", scheme, addr) // for scripts and tests that asked for any port
	}
	logger.Info("listening", "addr", addr, "database", kldconfig.Redact(c.Database), "version", bi.Version, "commit", bi.Commit, "built", bi.Date, "body_limit", c.BodyLimit.String(), "body_memory", max(c.BodyMemory, c.BodyLimit).String(), "default_lock_mode", c.DefaultLockMode, "plan_lock_limit", c.Limits.PlanLockLimit, "default_state_quota", c.Limits.DefaultStateQuota.String(), "gc_percent", gcPercent, "state_cache", c.Memory.StateCache.String(), "encryption_at_rest", atRest)

	go retention.RetainEvery(ctx, engine, c.Retention.RetentionInterval, c.Retention.RetentionBatch)
	go engine.EndPlanLocksEvery(ctx, c.Limits.PlanLockLimit)
	go c.Profiling.Serve(ctx, logger)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	stop() // a second signal kills at once
	logger.Info("shutting down: finishing in-flight requests", "timeout", c.ShutdownTimeout)
	shutdownCtx, cancel := context.WithTimeout(context.Background(), c.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		// Requests still running are cut; each write is one transaction,
		// so a cut write leaves nothing half-written.
		srv.Close()
		logger.Warn("in-flight requests did not finish in time; closed them", "err", err)
	}
	logger.Info("stopped")
	return nil
}

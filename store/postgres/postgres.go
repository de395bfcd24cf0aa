package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	neturl "net/url"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/keyring"
	"github.com/kilolock/kilolock/store/sqlstore"
)

var _ kilolock.Store = (*Store)(nil)

// Defaults of the Options.
const (
	// DefaultQueryTimeout bounds one Query statement.
	DefaultQueryTimeout = kilolock.DefaultQueryTimeout
	// MaxQueryRows is the most rows Query returns by default; the rest are
	// dropped.
	MaxQueryRows = kilolock.DefaultQueryMaxRows
)

// Store is a kilolock.Store on PostgreSQL. It is safe for concurrent use,
// and any number of Stores (in any number of processes) may share one
// database: every invariant is checked under the state's row lock.
// Its operations are sqlstore's; this package gives them PostgreSQL's
// dialect.
type Store struct {
	*sqlstore.Store
	d            *dialect
	pool         *pgxpool.Pool
	queryPool    *pgxpool.Pool // Query's own connections, reset after each use; nil when off
	queryRefusal error         // why Query is off
	queryTimeout time.Duration
}

// Option configures Open.
type Option func(*options)

type options struct {
	queryTimeout time.Duration
	queryURL     string
	ring         *keyring.Ring
}

// WithKeyring encrypts at rest with ring (see kilolock.KeyStore). Without
// it, a database that holds encrypted values is refused.
func WithKeyring(ring *keyring.Ring) Option { return func(o *options) { o.ring = ring } }

// WithQueryTimeout sets the statement_timeout of a Query whose
// QueryLimits.Timeout is 0 (DefaultQueryTimeout when not given).
func WithQueryTimeout(d time.Duration) Option {
	return func(o *options) { o.queryTimeout = d }
}

// WithQueryURL runs Query on another connection URL than the store's own
// query role (see Query): a role of the operator's that may read only the
// views, or a read replica. Its role must be no superuser and may not read
// the table tokens, or Query refuses to run users' SQL on it.
func WithQueryURL(url string) Option {
	return func(o *options) { o.queryURL = url }
}

// Open connects to the database at url (postgres://user:pass@host/db?…, or
// any connection string pgx accepts) and brings its schema up to date.
// Several processes may Open one database at once: migrations run one at a
// time under an advisory lock. A database that cannot be reached gives an
// error matching kilolock.ErrUnavailable; one whose encrypted values the
// keyring given (or none) cannot open, a *kilolock.KeyError.
func Open(ctx context.Context, url string, opts ...Option) (*Store, error) {
	o := options{queryTimeout: DefaultQueryTimeout}
	for _, opt := range opts {
		opt(&o)
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, parseError(err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, translate(err)
	}
	d := &dialect{pool: pool}
	s := &Store{Store: sqlstore.New(d, true), d: d, pool: pool, queryTimeout: o.queryTimeout}
	role, err := s.migrate(ctx, o.queryURL == "")
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("postgres: migrate: %w", err)
	}
	if err := s.UseKeyring(ctx, o.ring); err != nil {
		s.Close()
		return nil, fmt.Errorf("postgres: %w", err)
	}
	if o.queryURL == "" && role.refusal != nil {
		s.queryRefusal = role.refusal
		return s, nil
	}
	qcfg, err := queryPoolConfig(cfg, o.queryURL, role.login)
	if err != nil {
		s.Close()
		return nil, err
	}
	if s.queryPool, err = pgxpool.NewWithConfig(ctx, qcfg); err != nil {
		s.Close()
		return nil, translate(err)
	}
	return s, nil
}

// parseError reports a bad connection string without the driver's error
// type, and without the string itself: it may hold a password, which the
// driver's message masks only on a best-effort basis.
func parseError(err error) error {
	msg := "postgres: cannot parse the database URL"
	var ue *neturl.Error
	if errors.As(err, &ue) {
		msg += ": " + ue.Err.Error()
	}
	return &kilolock.InvalidError{
		Code:    "invalid_database_url",
		Message: msg,
		Hint:    "use postgres://user:password@host:5432/database?sslmode=…",
	}
}

// Close releases the store's connections.
func (s *Store) Close() error {
	s.pool.Close()
	if s.queryPool != nil {
		s.queryPool.Close()
	}
	return nil
}

// Ping reports whether the database answers.
func (s *Store) Ping(ctx context.Context) error {
	return translate(s.pool.Ping(ctx))
}

// dialect is PostgreSQL's sqlstore.Dialect.
type dialect struct{ pool *pgxpool.Pool }

//go:embed migrations/*.sql
var migrations embed.FS

// migrateLockKey is the advisory lock that serializes migrations: "kilolock"
// in ASCII.
const migrateLockKey int64 = 0x6b696c6f6c6f636b

// roleSetUp is what migrate found of the query role: its login, or why
// there is none.
type roleSetUp struct {
	login   *queryRole
	refusal error
}

// migrate applies the migrations the database lacks, all in one
// transaction under a transaction-scoped advisory lock, so that replicas
// starting together apply each migration exactly once, and (withRole)
// sets up the query role in the same transaction. A database migrated by a
// newer release is left as it is: migrations only ever add, so replicas of
// two releases may share it during a rolling upgrade.
func (s *Store) migrate(ctx context.Context, withRole bool) (roleSetUp, error) {
	var role roleSetUp
	ms, err := sqlstore.Migrations(migrations)
	if err != nil {
		return role, err
	}
	return role, sqlstore.Migrate(ctx, s.d, sqlstore.Migrator{
		Lock: fmt.Sprintf("SELECT pg_advisory_xact_lock(%d)", migrateLockKey),
		Table: `CREATE TABLE IF NOT EXISTS kl_schema_version (
			version    INT PRIMARY KEY,
			name       TEXT NOT NULL,
			applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
		)`,
		After: func(ctx context.Context, tx sqlstore.Tx) error {
			if !withRole {
				return nil
			}
			role.login, role.refusal = setUpQueryRole(ctx, tx)
			var refused *kilolock.RefusedError
			if role.refusal != nil && !errors.As(role.refusal, &refused) {
				return role.refusal
			}
			return nil
		},
	}, ms)
}

package postgres

import (
	"context"
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
	// tenantPool serves tenants' statements as the tenant role (see
	// QueryScoped); nil when off, for tenantRefusal.
	tenantPool    *pgxpool.Pool
	tenantRefusal error
	queryTimeout  time.Duration
	// schema is what Open's migration did.
	schema sqlstore.SchemaChange
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
	s.tenantRefusal = role.tenantRefusal
	if o.queryURL != "" {
		s.tenantRefusal = &kilolock.RefusedError{Code: "query_scope_unavailable",
			Message: "tenants' queries are off: kld runs users' SQL on the URL --query-database-url names, and tenants' only as a role of its own making",
			Hint:    "leave --query-database-url out and let the store's role make the query and tenant roles (CREATEROLE)", Err: kilolock.ErrReadOnly}
	} else if role.tenant != nil {
		if s.tenantPool, err = pgxpool.NewWithConfig(ctx, tenantPoolConfig(cfg, role.tenant, role.schema)); err != nil {
			s.Close()
			return nil, translate(err)
		}
	}
	if err := s.UseKeyring(ctx, o.ring); err != nil {
		s.Close()
		return nil, fmt.Errorf("postgres: %w", err)
	}
	if err := s.FillInventory(ctx); err != nil {
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
	for _, p := range []*pgxpool.Pool{s.queryPool, s.tenantPool} {
		if p != nil {
			p.Close()
		}
	}
	return nil
}

// Ping reports whether the database answers.
func (s *Store) Ping(ctx context.Context) error {
	return translate(s.pool.Ping(ctx))
}

// dialect is PostgreSQL's sqlstore.Dialect.
type dialect struct{ pool *pgxpool.Pool }

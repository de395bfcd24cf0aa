// Package store opens a kilolock.Store from a URL: the one way to pick a
// store, used by kld, kl and programs that embed the engine.
//
//	st, err := store.Open(ctx, "sqlite:///var/lib/kilolock/kilolock.db")
//	if err != nil {
//		return err
//	}
//	defer st.Close()
//
// The stores themselves are its subpackages: store/sqlite (embedded, the
// default) and store/postgres (production; many kld replicas share one
// database). store/storetest is the conformance suite both pass.
package store

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/keyring"
	"github.com/kilolock/kilolock/store/postgres"
	"github.com/kilolock/kilolock/store/sqlite"
)

// Open opens the store that rawURL names and brings its schema up to date:
//
//	postgres://user:pass@host:5432/db?sslmode=…   PostgreSQL (also postgresql://;
//	                                               any connection string pgx accepts)
//	sqlite:///var/lib/kilolock/kilolock.db        SQLite at an absolute path
//	sqlite://kilolock.db                          SQLite at a path relative to the
//	                                               working directory
//	file:///var/lib/kilolock/kilolock.db          SQLite (file:kilolock.db for a
//	                                               relative path)
//	/var/lib/kilolock/kilolock.db, kilolock.db    SQLite: a plain path
//
// Everything after "sqlite://" is the path, so a third slash makes it
// absolute. SQLite URLs take no query parameters; a file is created when
// missing, its directory is not. Any other scheme is ErrInvalid.
func Open(ctx context.Context, rawURL string, opts ...Option) (kilolock.Store, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	scheme, rest, hasScheme := strings.Cut(rawURL, "://")
	if !hasScheme || strings.ContainsAny(scheme, `/\`) {
		scheme, rest = "", rawURL
	}
	switch strings.ToLower(scheme) {
	case "postgres", "postgresql":
		if o.lazyLocks {
			return nil, &kilolock.InvalidError{
				Code:    "invalid_store_option",
				Message: "lazy lock sync is a SQLite store's: a PostgreSQL server decides its own durability",
				Hint:    "leave --sqlite-lazy-lock-sync out with a PostgreSQL database",
			}
		}
		po := []postgres.Option{postgres.WithKeyring(o.ring)}
		if o.queryURL != "" {
			po = append(po, postgres.WithQueryURL(o.queryURL))
		}
		return postgres.Open(ctx, rawURL, po...)
	}
	if o.queryURL != "" {
		return nil, &kilolock.InvalidError{
			Code:    "invalid_query_url",
			Message: "a query URL is for a PostgreSQL store: the SQLite store runs users' queries on read-only connections of its own",
			Hint:    "leave the query URL (kld --query-database-url) out with a SQLite database",
		}
	}
	switch strings.ToLower(scheme) {
	case "sqlite", "sqlite3":
		return openSQLite(ctx, rawURL, rest, o)
	case "file":
		u, err := url.Parse(rawURL)
		if err != nil {
			return nil, badURL(rawURL, err.Error())
		}
		if u.Host != "" && u.Host != "localhost" {
			return nil, badURL(rawURL, "a file URL names a file on this machine: file:///path or file:path")
		}
		return openSQLite(ctx, rawURL, u.Path, o)
	case "":
		if path, ok := strings.CutPrefix(rawURL, "file:"); ok {
			return openSQLite(ctx, rawURL, path, o)
		}
		return openSQLite(ctx, rawURL, rawURL, o)
	}
	return nil, badURL(rawURL, fmt.Sprintf("unknown scheme %q", scheme))
}

// Option configures Open.
type Option func(*options)

type options struct {
	queryURL  string
	ring      *keyring.Ring
	lazyLocks bool
}

// WithLazyLockSync writes a SQLite store's locks and unlocks without
// waiting for the disk (see sqlite.WithLazyLockSync); a PostgreSQL store
// refuses it.
func WithLazyLockSync() Option { return func(o *options) { o.lazyLocks = true } }

// WithQueryURL runs users' queries of a PostgreSQL store on another URL
// (see postgres.WithQueryURL).
func WithQueryURL(url string) Option { return func(o *options) { o.queryURL = url } }

// WithKeyring encrypts at rest what Terraform marks sensitive and the raw
// documents kept, with ring (see kilolock.KeyStore). Without it a
// database that holds encrypted values is refused when it opens (a
// *kilolock.KeyError), as is one whose data keys ring cannot unwrap.
func WithKeyring(ring *keyring.Ring) Option { return func(o *options) { o.ring = ring } }

func openSQLite(ctx context.Context, rawURL, path string, o options) (kilolock.Store, error) {
	if strings.ContainsAny(path, "?#") {
		return nil, badURL(rawURL, "a sqlite URL takes no query parameters")
	}
	if path == "" {
		return nil, badURL(rawURL, "no database path")
	}
	so := []sqlite.Option{sqlite.WithKeyring(o.ring)}
	if o.lazyLocks {
		so = append(so, sqlite.WithLazyLockSync())
	}
	s, err := sqlite.Open(ctx, path, so...)
	if err != nil {
		return nil, err
	}
	return s, nil
}

func badURL(rawURL, why string) error {
	return &kilolock.InvalidError{
		Code:    "invalid_store_url",
		Message: fmt.Sprintf("store URL %q: %s", redact(rawURL), why),
		Hint:    "use postgres://user:password@host/db, sqlite:///absolute/path.db, sqlite://relative.db or a file path",
	}
}

// redact hides the password of a URL that has one.
func redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.User == nil {
		return rawURL
	}
	return u.Redacted()
}

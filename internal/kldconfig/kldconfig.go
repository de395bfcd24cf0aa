// Package kldconfig holds kld's flags that bound what one request may make
// the store do, with what they set, so that cmd/kld stays small:
//
//	type cli struct {
//		Limits kldconfig.Limits `embed:""`
//	}
//	st, err := store.Open(ctx, url, c.Limits.StoreOptions()...)
//	engine := kilolock.NewEngine(st, c.Limits.Engine(kilolock.Options{Logger: logger}))
package kldconfig

import (
	"net/url"
	"time"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/httpbackend"
	"github.com/kilolock/kilolock/store"
)

// Limits are the flags of users' SQL and of optimistic holders.
type Limits struct {
	QueryTimeout   time.Duration        `default:"30s" env:"KL_QUERY_TIMEOUT" help:"How long one query of users' SQL (kl query, POST /v1/api/query) may run, on either store."`
	QueryMaxRows   int                  `default:"10000" env:"KL_QUERY_MAX_ROWS" help:"Most rows a query answers; the rest are dropped."`
	QueryMaxBytes  httpbackend.ByteSize `default:"8MiB" env:"KL_QUERY_MAX_BYTES" help:"Largest query answer, and largest value in it, e.g. 8MiB; past it the query is refused (query_too_large)."`
	QueryDatabase  string               `name:"query-database-url" env:"KL_QUERY_DATABASE_URL" help:"PostgreSQL only: run users' queries on this URL (a role that may read only the views, or a replica) rather than as the query role kld makes."`
	MaxLockHolders int                  `default:"100" env:"KL_MAX_LOCK_HOLDERS" help:"Most holders one optimistic state admits at once; 0 for no cap."`
}

// Engine returns o with the limits set.
func (l *Limits) Engine(o kilolock.Options) kilolock.Options {
	o.QueryLimits = kilolock.QueryLimits{Timeout: l.QueryTimeout, MaxRows: l.QueryMaxRows, MaxBytes: int(l.QueryMaxBytes)}
	o.MaxLockHolders = l.MaxLockHolders
	if l.MaxLockHolders <= 0 {
		o.MaxLockHolders = -1 // no cap
	}
	return o
}

// StoreOptions returns the options of store.Open the flags ask for.
func (l *Limits) StoreOptions() []store.Option {
	if l.QueryDatabase == "" {
		return nil
	}
	return []store.Option{store.WithQueryURL(l.QueryDatabase)}
}

// Redact hides a password in a database URL, for the log.
func Redact(database string) string {
	if u, err := url.Parse(database); err == nil && u.User != nil {
		return u.Redacted()
	}
	return database
}

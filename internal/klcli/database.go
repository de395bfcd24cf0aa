package klcli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"runtime/debug"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/client"
	"github.com/kilolock/kilolock/httpbackend"
	"github.com/kilolock/kilolock/store"
)

// inProcessBodyLimit is the largest request body kl sends a database it
// opened itself: any state, as the library takes it.
const inProcessBodyLimit = 1 << 40

// databaseGCPercent is the garbage collector's target (Go's GOGC) of a kl
// that opened a database itself, unless GOGC is set: kl lives for one
// command, whose heap is mostly what it answers, so collecting as the
// heap grows by 100% (Go's default) spends CPU on memory freed at exit
// anyway. 400 collects half as often on kl history and kl export; it
// raises the peak resident memory of kl export of a 10,000-instance state
// from ~48 to ~62 MiB.
const databaseGCPercent = 400

// openDatabase opens the database t names and returns a Conn to kld's
// handler over an Engine on it, reached in-process (no socket) as the
// operator of that database, audited as databaseCaller(t.Actor). Every
// command is so written once, over the API. Close closes the store.
func openDatabase(ctx context.Context, t Target) (*Conn, error) {
	if _, ok := os.LookupEnv("GOGC"); !ok {
		debug.SetGCPercent(databaseGCPercent)
	}
	ring, err := loadKeyring(t.KeyFile)
	if err != nil {
		return nil, err
	}
	s, err := openStore(ctx, t.Database, store.WithKeyring(ring))
	if err != nil {
		return nil, err
	}
	b := NewDatabaseConn(kilolock.NewEngine(s, kilolock.Options{}), HTTPOptions{Actor: t.Actor, Token: t.Token}) // the token kl whoami looks at
	b.closer = s
	return b, nil
}

// NewDatabaseConn returns a Conn to kld's handler over e, reached
// in-process as the operator of e's database, audited as
// databaseCaller(o.Actor); the versions it makes name o.Actor (kl when
// ""). Of o, Actor, Token and Wrap count. Close does not close e's store:
// it belongs to the caller.
func NewDatabaseConn(e *kilolock.Engine, o HTTPOptions) *Conn {
	// What kl never asks of a database is not set up for every command:
	// no metrics (no /metrics, and the Prometheus client not linked), and
	// a version of its own (no /versionz: kl version shows no server), so
	// that the build information is not read.
	h := httpbackend.New(e, httpbackend.Options{BodyLimit: inProcessBodyLimit, QueryConcurrency: -1,
		Version: httpbackend.VersionInfo{Version: "in-process"}})
	o.Client = &http.Client{Transport: operatorTransport{next: client.InProcess(h), by: databaseCaller(o.Actor)}}
	b, err := NewConn("http://database.kl.invalid", o)
	if err != nil {
		panic(err) // the URL above is valid
	}
	b.database = true
	return b
}

// openStore opens the store at url with opts, its error hinted for kl.
func openStore(ctx context.Context, url string, opts ...store.Option) (kilolock.Store, error) {
	s, err := store.Open(ctx, url, opts...)
	if err != nil {
		return nil, keyHint(fmt.Errorf("open database: %w", err),
			"--database (KL_DATABASE_URL) takes a postgres:// URL or the path of a SQLite file")
	}
	return s, nil
}

// keyHint is err with what to do: a *kilolock.KeyError's own hint, naming
// kl's flag for the keys, else hint (none when "").
func keyHint(err error, hint string) error {
	var ke *kilolock.KeyError
	switch {
	case errors.As(err, &ke):
		return withHint(err, ke.Hint+" (kl: --encryption-key-file)")
	case hint == "":
		return err
	}
	return withHint(err, hint)
}

// databaseCaller is who a change made on a database directly is audited
// as: "db:" and the actor (kl when none), so that the audit log tells it
// from a change made through a server; from kl on this host.
func databaseCaller(actor string) kilolock.Caller {
	if actor == "" {
		actor = "kl"
	}
	from := "kl"
	if host, err := os.Hostname(); err == nil && host != "" {
		from += "@" + host
	}
	return kilolock.Caller{Actor: "db:" + actor, From: from}
}

// operatorTransport sends each request through next (client.InProcess)
// as the in-process operator by (httpbackend.AsOperator).
type operatorTransport struct {
	next http.RoundTripper
	by   kilolock.Caller
}

// RoundTrip implements http.RoundTripper.
func (t operatorTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	return t.next.RoundTrip(req.WithContext(httpbackend.AsOperator(req.Context(), t.by)))
}

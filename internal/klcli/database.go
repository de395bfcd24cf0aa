package klcli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sync"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/httpbackend"
	"github.com/kilolock/kilolock/store"
)

// inProcessBodyLimit is the largest request body kl sends a database it
// opened itself: any state, as the library takes it.
const inProcessBodyLimit = 1 << 40

// openDatabase opens the database t names and returns an HTTPBackend on
// kld's handler over an Engine on it, reached in-process (no socket) as
// the operator of that database, audited as databaseCaller(t.Actor). Every
// command is so written once, over the API. Close closes the store.
func openDatabase(ctx context.Context, t Target) (*HTTPBackend, error) {
	ring, err := loadKeyring(t.KeyFile)
	if err != nil {
		return nil, err
	}
	s, err := openStore(ctx, t.Database, store.WithKeyring(ring))
	if err != nil {
		return nil, err
	}
	b := NewDatabaseBackend(kilolock.NewEngine(s, kilolock.Options{}), t.Actor)
	b.closer, b.token = s, t.Token // the token kl whoami looks at
	return b, nil
}

// NewDatabaseBackend returns an HTTPBackend on kld's handler over e, reached
// in-process as the operator of e's database, audited as
// databaseCaller(actor); the versions it makes name actor (kl when "").
// Close does not close e's store: it belongs to the caller.
func NewDatabaseBackend(e *kilolock.Engine, actor string) *HTTPBackend {
	h := httpbackend.New(e, httpbackend.Options{BodyLimit: inProcessBodyLimit, QueryConcurrency: -1})
	tr := &handlerTransport{h: h, by: databaseCaller(actor)}
	b, err := NewHTTPBackend("http://database.kl.invalid", HTTPOptions{Client: &http.Client{Transport: tr}, Actor: actor})
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

// handlerTransport serves each request with h in this process, as the
// in-process operator by (httpbackend.AsOperator): the answer's body
// streams through a pipe as h writes it, so that an export or a backup
// is never held whole.
type handlerTransport struct {
	h  http.Handler
	by kilolock.Caller
}

// RoundTrip implements http.RoundTripper.
func (t *handlerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(httpbackend.AsOperator(req.Context(), t.by))
	switch {
	case r.Body == nil:
		r.Body = http.NoBody
	case r.ContentLength == 0 && r.Body != http.NoBody:
		r.ContentLength = -1 // a client's 0 with a body is "unknown"
	}
	r.RequestURI = (&url.URL{Path: r.URL.Path, RawPath: r.URL.RawPath, RawQuery: r.URL.RawQuery}).RequestURI()
	pr, pw := io.Pipe()
	w := &pipeWriter{header: http.Header{}, body: pw, started: make(chan struct{})}
	go func() {
		defer func() {
			if p := recover(); p != nil {
				// http.ErrAbortHandler: the handler cut its answer short.
				pw.CloseWithError(fmt.Errorf("the answer was cut short: %v", p))
				w.start(http.StatusInternalServerError)
				return
			}
			w.start(http.StatusOK)
			pw.Close()
		}()
		t.h.ServeHTTP(w, r)
	}()
	<-w.started
	return &http.Response{Status: fmt.Sprintf("%d %s", w.status, http.StatusText(w.status)), StatusCode: w.status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: w.sent, Body: pr, ContentLength: -1, Request: req}, nil
}

// pipeWriter is the http.ResponseWriter of an in-process request.
type pipeWriter struct {
	header  http.Header
	sent    http.Header // the header as it was when the status was written
	status  int
	body    *io.PipeWriter
	once    sync.Once
	started chan struct{}
}

func (w *pipeWriter) Header() http.Header { return w.header }

func (w *pipeWriter) WriteHeader(status int) { w.start(status) }

func (w *pipeWriter) Write(p []byte) (int, error) {
	w.start(http.StatusOK)
	return w.body.Write(p)
}

// Flush implements http.Flusher: every write goes through at once.
func (w *pipeWriter) Flush() {}

// start sends the status and header once.
func (w *pipeWriter) start(status int) {
	w.once.Do(func() {
		w.status, w.sent = status, w.header.Clone()
		close(w.started)
	})
}

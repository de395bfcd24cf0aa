package klcli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/kilolock/kilolock/client"
	"github.com/kilolock/kilolock/internal/progress"
	"github.com/kilolock/kilolock/keyring"
)

// DefaultTimeout bounds one request to the server, from dialing to the last
// byte of the answer.
const DefaultTimeout = 30 * time.Second

// HTTPOptions configure a Conn. The zero value is usable.
type HTTPOptions struct {
	// Timeout bounds each request; zero means DefaultTimeout.
	Timeout time.Duration
	// Token, when set, is sent as "Authorization: Bearer <token>".
	Token string
	// Client replaces the HTTP client (and so Timeout); for tests and
	// custom transports.
	Client *http.Client
	// Wrap, when set, wraps the transport every request goes through
	// (tests rewrite answers with it).
	Wrap func(http.RoundTripper) http.RoundTripper
	// Actor, when set, is sent as X-Kilolock-Actor: who the versions kl
	// makes are recorded as made by, when the server knows no identity.
	Actor string
	// Username and Password, when Token is empty and Username is set, are
	// sent as basic auth: what a configuration's http backend sends on
	// the authenticated lane.
	Username, Password string
	// Headers are sent with every request (a backend's headers).
	Headers map[string]string
}

// Conn is where kl's commands go: kld's API through the public client, a
// server's, or a database's served in-process (NewDatabaseConn).
// Commands call its client directly, with the client's wire types.
type Conn struct {
	api *client.Client
	// long is api without the bound on a request's whole time (the
	// context still cancels it): a backup streamed, a pruning that lasts
	// as long as it has to.
	long *client.Client
	// closer is closed by Close: the store of a database opened
	// in-process (openDatabase); nil for a server.
	closer io.Closer
	hc     *http.Client
	// database is a database served in-process: no server, so no server
	// version.
	database bool
	// lane asks quotas at a state's protocol address (Globals.laneQuota).
	lane bool
}

// serverHint says what --server takes.
const serverHint = "--server (KL_SERVER) takes the base URL of kld, e.g. http://127.0.0.1:8080"

// NewConn returns a Conn to the server at base, e.g.
// "http://127.0.0.1:8080" or "https://kl.example.com/prefix".
func NewConn(base string, o HTTPOptions) (*Conn, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, &UsageError{
			Message: fmt.Sprintf("%q is not a server URL", base),
			Hint:    serverHint,
		}
	}
	hc := o.Client
	if hc == nil {
		timeout := o.Timeout
		if timeout <= 0 {
			timeout = DefaultTimeout
		}
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.DialContext = (&net.Dialer{Timeout: min(timeout, 10*time.Second), KeepAlive: 30 * time.Second}).DialContext
		tr.TLSHandshakeTimeout = min(timeout, 10*time.Second)
		hc = &http.Client{Timeout: timeout, Transport: tr}
	}
	next := hc.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	if o.Wrap != nil {
		next = o.Wrap(next)
	}
	opts := []client.Option{client.WithHTTPClient(hc), client.WithTransport(progressTransport{next}),
		client.WithUserAgent("kl"), client.WithActor(o.Actor), client.WithRetries(0, 0)}
	switch {
	case o.Token != "":
		opts = append(opts, client.WithCredentials(client.Token(o.Token)))
	case o.Username != "":
		opts = append(opts, client.WithCredentials(client.Basic{User: o.Username, Password: o.Password}))
	}
	for k, v := range o.Headers {
		opts = append(opts, client.WithHeader(k, v))
	}
	c, err := client.New(base, opts...)
	if err != nil {
		return nil, &UsageError{Message: err.Error(), Hint: serverHint}
	}
	long, _ := client.New(base, append(opts, client.WithTimeout(0))...)
	return &Conn{api: c, long: long, hc: hc}, nil
}

// API is the client the Conn's requests go through.
func (b *Conn) API() *client.Client { return b.api }

// nonNil is s, empty rather than nil: JSON shows [] and not null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// readAll reads and closes a streamed answer.
func readAll[R io.ReadCloser](r R, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

// Close closes the Conn's idle connections and the store of a database
// it opened.
func (b *Conn) Close() error {
	b.hc.CloseIdleConnections()
	if b.closer != nil {
		return b.closer.Close()
	}
	return nil
}

// transferKey marks a request that carries a state, whose travel is shown
// (progressTransport).
type transferKey struct{}

func transfer(ctx context.Context) context.Context {
	return context.WithValue(ctx, transferKey{}, true)
}

// progressTransport shows the progress of a state sent or received, on
// the reporter of the request's context.
type progressTransport struct{ next http.RoundTripper }

// RoundTrip implements http.RoundTripper.
func (t progressTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Context().Value(transferKey{}) == nil {
		return t.next.RoundTrip(req)
	}
	rep := progress.From(req.Context())
	if req.Body != nil && req.ContentLength > 0 {
		send := rep.Start("send "+req.URL.Path, req.ContentLength, progress.Bytes)
		defer send.Done()
		body := req.Body
		req = req.Clone(req.Context())
		req.Body = readCloser{send.Reader(body), body}
		return t.next.RoundTrip(req)
	}
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	receive := rep.Start("receive "+req.URL.Path, max(resp.ContentLength, 0), progress.Bytes)
	body := resp.Body
	resp.Body = readCloser{receive.Reader(body), closerFunc(func() error { receive.Done(); return body.Close() })}
	return resp, nil
}

type readCloser struct {
	io.Reader
	io.Closer
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

// DefaultServer is the server kl talks to when given neither a server nor a
// database: a kld started with its defaults on this machine.
const DefaultServer = "http://127.0.0.1:8080"

// Target says where kl's commands go: a server or a database, never both.
type Target struct {
	Server   string // base URL of a kld server
	Database string // store URL: postgres://… or a SQLite file path
	// KeyFile names the keys of encryption at rest of Database, with
	// those of KL_ENCRYPTION_KEY (see keyring.Load).
	KeyFile string
	Token   string        // bearer token sent to the server, if any
	Timeout time.Duration // per HTTP request; zero means DefaultTimeout
	// Actor is recorded on the versions kl makes (rollback, state
	// operations, import); empty means "kl".
	Actor string
}

// loadKeyring loads the keys of encryption at rest from keyFile and
// KL_ENCRYPTION_KEY: nil when neither holds any.
func loadKeyring(keyFile string) (*keyring.Ring, error) {
	ring, err := keyring.Load(keyFile, os.Getenv("KL_ENCRYPTION_KEY"))
	var me *keyring.ModeError
	if errors.As(err, &me) {
		return nil, withHint(err, me.Hint())
	}
	if err != nil {
		return nil, withHint(err, "--encryption-key-file (KL_ENCRYPTION_KEY_FILE) and KL_ENCRYPTION_KEY take one base64 32-byte key per line; kl keys generate prints one")
	}
	return ring, nil
}

// Open returns the Conn for t: to a server (DefaultServer when t names
// nothing) or, in-process, to a database (openDatabase). Naming both is a
// *UsageError.
func Open(ctx context.Context, t Target) (*Conn, error) {
	switch {
	case t.Server != "" && t.Database != "":
		return nil, &UsageError{
			Message: "both a server and a database were given",
			Hint:    "use either --server (KL_SERVER) or --database (KL_DATABASE_URL), not both",
		}
	case t.Database != "":
		return openDatabase(ctx, t)
	}
	server := t.Server
	if server == "" {
		server = DefaultServer
	}
	return NewConn(server, HTTPOptions{Token: t.Token, Timeout: t.Timeout, Actor: t.Actor})
}

package klcli

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/client"
	"github.com/kilolock/kilolock/history"
	"github.com/kilolock/kilolock/internal/progress"
)

// DefaultTimeout bounds one request to the server, from dialing to the last
// byte of the answer.
const DefaultTimeout = 30 * time.Second

// HTTPOptions configure an HTTPBackend. The zero value is usable.
type HTTPOptions struct {
	// Timeout bounds each request; zero means DefaultTimeout.
	Timeout time.Duration
	// Token, when set, is sent as "Authorization: Bearer <token>".
	Token string
	// Client replaces the HTTP client (and so Timeout); for tests and
	// custom transports.
	Client *http.Client
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

// HTTPBackend runs kl's commands on kld's API through the public client:
// a server's, or a database's served in-process (NewDatabaseBackend).
type HTTPBackend struct {
	c *client.Client
	// long is c without the bound on a request's whole time (the context
	// still cancels it): a backup streamed, a pruning that lasts as long
	// as it has to.
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

// NewHTTPBackend returns a Backend on the server at base, e.g.
// "http://127.0.0.1:8080" or "https://kl.example.com/prefix".
func NewHTTPBackend(base string, o HTTPOptions) (*HTTPBackend, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, &UsageError{
			Message: fmt.Sprintf("%q is not a server URL", base),
			Hint:    "--server (KL_SERVER) takes the base URL of kld, e.g. http://127.0.0.1:8080",
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
		return nil, &UsageError{Message: err.Error(), Hint: "--server (KL_SERVER) takes the base URL of kld, e.g. http://127.0.0.1:8080"}
	}
	long, _ := client.New(base, append(opts, client.WithTimeout(0))...)
	return &HTTPBackend{c: c, long: long, hc: hc}, nil
}

// server is the CLI's backend as the HTTPBackend it is, for the commands
// beyond Backend (backups, retention, keys, moves, search); a usage error
// naming what when it is another (a test's wrapper).
func (c *CLI) server(what string) (*HTTPBackend, error) {
	b, ok := c.Backend.(*HTTPBackend)
	if !ok {
		return nil, &UsageError{Message: "this backend has no " + what, Hint: "use --server or --database"}
	}
	return b, nil
}

// ok is v and err, v dropped when err is set.
func ok[T any](v *T, err error) (*T, error) {
	if err != nil {
		return nil, err
	}
	return v, nil
}

// nonNil is s, empty rather than nil: JSON shows [] and not null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// Status implements Backend.
func (b *HTTPBackend) Status(ctx context.Context, name string) (*kilolock.Status, error) {
	return ok(b.c.Status(ctx, name))
}

// History implements Backend.
func (b *HTTPBackend) History(ctx context.Context, name string, opts kilolock.HistoryOptions) ([]kilolock.Version, error) {
	l, err := b.c.History(ctx, name, client.HistoryOptions{Limit: opts.Limit, Before: opts.Before})
	if err != nil {
		return nil, err
	}
	return nonNil(l.Versions), nil
}

// States implements Backend.
func (b *HTTPBackend) States(ctx context.Context) ([]kilolock.State, error) {
	l, err := b.c.States(ctx)
	if err != nil {
		return nil, err
	}
	return nonNil(l.States), nil
}

// Query implements Backend. Numbers come back as json.Number, exact.
func (b *HTTPBackend) Query(ctx context.Context, sql string) (*kilolock.QueryResult, error) {
	res, err := b.c.Query(ctx, sql)
	if err != nil {
		return nil, err
	}
	res.Columns, res.Rows = nonNil(res.Columns), nonNil(res.Rows)
	return res, nil
}

// ConfigureState implements Backend, in one request: the server applies
// the lock mode first.
func (b *HTTPBackend) ConfigureState(ctx context.Context, name string, s StateSettings) error {
	out, err := b.c.Configure(ctx, name, s)
	if err == nil && !out.OK {
		err = fmt.Errorf("server did not confirm the configuration of state %q", name)
	}
	return err
}

// Rejections implements Backend.
func (b *HTTPBackend) Rejections(ctx context.Context, name string, limit int) ([]kilolock.Rejection, error) {
	l, err := b.c.Rejections(ctx, name, limit)
	if err != nil {
		return nil, err
	}
	return nonNil(l.Rejections), nil
}

// ReadVersion implements Backend.
func (b *HTTPBackend) ReadVersion(ctx context.Context, name string, number int64) ([]byte, error) {
	return readAll(b.c.StateVersion(transfer(ctx), name, number))
}

// readAll reads and closes a streamed answer.
func readAll[R io.ReadCloser](r R, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

// Close implements Backend.
func (b *HTTPBackend) Close() error {
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

// Show implements StateOps.
func (b *HTTPBackend) Show(ctx context.Context, name string, ref kilolock.VersionRef) (*history.VersionView, error) {
	return ok(b.c.Show(ctx, name, ref.String()))
}

// ShowInstance implements StateOps.
func (b *HTTPBackend) ShowInstance(ctx context.Context, name string, ref kilolock.VersionRef, address string) (*history.InstanceView, error) {
	return ok(b.c.ShowInstance(ctx, name, ref.String(), address))
}

// Diff implements StateOps.
func (b *HTTPBackend) Diff(ctx context.Context, name string, from, to kilolock.VersionRef) (*history.StateDiff, error) {
	return ok(b.c.Diff(ctx, name, from.String(), to.String()))
}

// AddressHistory implements StateOps.
func (b *HTTPBackend) AddressHistory(ctx context.Context, name, address string) ([]history.AddressChange, error) {
	l, err := b.c.AddressHistory(ctx, name, address)
	if err != nil {
		return nil, err
	}
	return l.Changes, nil
}

// Rollback implements StateOps.
func (b *HTTPBackend) Rollback(ctx context.Context, name string, r RollbackRequest) (*history.RollbackResult, error) {
	res, err := b.c.Rollback(ctx, name, client.RollbackRequest{To: r.To.String(), Apply: r.Apply, Address: r.Address})
	if err != nil {
		return nil, err
	}
	return &res.RollbackResult, nil
}

// StateList implements StateOps.
func (b *HTTPBackend) StateList(ctx context.Context, name, pattern string) ([]history.InstanceSummary, error) {
	l, err := b.c.StateList(ctx, name, pattern)
	if err != nil {
		return nil, err
	}
	return nonNil(l.Instances), nil
}

// StateRm implements StateOps.
func (b *HTTPBackend) StateRm(ctx context.Context, name string, addresses []string, dryRun bool) (*history.StateOpResult, error) {
	return ok(b.c.StateRm(ctx, name, client.StateRmRequest{Addresses: addresses, DryRun: dryRun}))
}

// StateMv implements StateOps.
func (b *HTTPBackend) StateMv(ctx context.Context, name, from, to string, dryRun bool) (*history.StateOpResult, error) {
	return ok(b.c.StateMv(ctx, name, client.StateMvRequest{From: from, To: to, DryRun: dryRun}))
}

// Export implements StateOps.
func (b *HTTPBackend) Export(ctx context.Context, name string, ref kilolock.VersionRef) ([]byte, error) {
	return readAll(b.c.Export(transfer(ctx), name, ref.String()))
}

// Import implements StateOps.
func (b *HTTPBackend) Import(ctx context.Context, name string, data []byte, force bool) (*ImportResult, error) {
	return ok(b.c.Import(transfer(ctx), name, data, force))
}

// Cone implements GraphOps.
func (b *HTTPBackend) Cone(ctx context.Context, name string, ref kilolock.VersionRef, addresses []string, dir history.Direction, depth int) (*history.ConeView, error) {
	return ok(b.c.Cone(ctx, name, addresses, client.ConeOptions{Ref: ref.String(), Direction: dir, Depth: depth}))
}

// Slice implements GraphOps.
func (b *HTTPBackend) Slice(ctx context.Context, name string, ref kilolock.VersionRef, addresses []string, cone history.SliceCone) ([]byte, error) {
	return readAll(b.c.Slice(transfer(ctx), name, ref.String(), addresses, cone))
}

package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Client calls one kld. It is safe for concurrent use.
type Client struct {
	base    *url.URL
	hc      *http.Client
	creds   Credentials
	retries int
	maxWait time.Duration
	strict  bool
	agent   string
	actor   string
	headers http.Header
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient sends requests with hc (its transport, proxy and TLS
// settings). WithTimeout and WithTransport then change hc's copy.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) { cp := *hc; c.hc = &cp }
}

// WithTransport sends requests through rt: InProcess(handler) reaches a
// handler in this process without a socket.
func WithTransport(rt http.RoundTripper) Option {
	return func(c *Client) { c.hc.Transport = rt }
}

// WithTimeout bounds each call, reading its answer included; zero (the
// default) leaves calls bounded only by their context.
func WithTimeout(d time.Duration) Option {
	return func(c *Client) { c.hc.Timeout = d }
}

// WithCredentials authenticates every request with cr: Token for an
// operator token, a tenant's automation token or a personal access token;
// Basic for the workspace-id/token pair Terraform sends; a TokenSource for
// credentials that change (an identity token).
func WithCredentials(cr Credentials) Option {
	return func(c *Client) { c.creds = cr }
}

// WithRetries retries a call answered 503 with a Retry-After header (the
// database unavailable, a replica not ready) at most n times, waiting what
// the server asks but never more than maxWait at once. The default is 3
// retries of at most 30s; n = 0 never retries.
func WithRetries(n int, maxWait time.Duration) Option {
	return func(c *Client) { c.retries, c.maxWait = n, maxWait }
}

// WithStrictDecoding refuses answers with a field this client does not
// know, for tests that pin a server and its client to one version.
func WithStrictDecoding() Option {
	return func(c *Client) { c.strict = true }
}

// ActorHeader names who asks for a server-made version (rollback, state
// operation, import, an apply run) when the request carries no identity
// of its own.
const ActorHeader = "X-Kilolock-Actor"

// WithActor names who the client acts for (ActorHeader), as history
// records it on the versions the server makes for it; the default is the
// server's ("kl"). A credential's identity takes precedence.
func WithActor(name string) Option {
	return func(c *Client) { c.actor = name }
}

// WithUserAgent sets the User-Agent header of every request.
func WithUserAgent(ua string) Option {
	return func(c *Client) { c.agent = ua }
}

// WithHeader sends header name with value on every request (the headers
// a configuration's http backend sends).
func WithHeader(name, value string) Option {
	return func(c *Client) {
		if c.headers == nil {
			c.headers = http.Header{}
		}
		c.headers.Set(name, value)
	}
}

// New returns a Client of the kld at baseURL ("https://kld.example.com";
// a path prefix is kept).
func New(baseURL string, opts ...Option) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("client: parse base url: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("client: base url %q must be http(s)://host[:port][/prefix]", baseURL)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	c := &Client{base: u, hc: &http.Client{}, retries: 3, maxWait: 30 * time.Second, agent: "kilolock-client"}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// Credentials authenticate a request.
type Credentials interface {
	Authorize(ctx context.Context, r *http.Request) error
}

// Token is a bearer token: kld's operator token (klo_…), a tenant's
// automation token (klt_…) or a personal access token (klp_…).
type Token string

// Authorize sets the Authorization header.
func (t Token) Authorize(_ context.Context, r *http.Request) error {
	r.Header.Set("Authorization", "Bearer "+string(t))
	return nil
}

// Basic is the basic-auth pair Terraform's http backend sends: the
// workspace id as the user, a token as the password.
type Basic struct{ User, Password string }

// Authorize sets the basic-auth header.
func (b Basic) Authorize(_ context.Context, r *http.Request) error {
	r.SetBasicAuth(b.User, b.Password)
	return nil
}

// TokenSource is a bearer token asked for at each request, for credentials
// that expire and are renewed (a CI identity token).
type TokenSource func(ctx context.Context) (string, error)

// Authorize asks the source for a token and sets it.
func (s TokenSource) Authorize(ctx context.Context, r *http.Request) error {
	tok, err := s(ctx)
	if err != nil {
		return fmt.Errorf("client: credentials: %w", err)
	}
	return Token(tok).Authorize(ctx, r)
}

// request is one call: method and path (already escaped), query, and a
// body sent as it is.
type request struct {
	method string
	path   string
	query  url.Values
	body   []byte
	ctype  string
	header http.Header
	state  string // the state an error is about, for the root's errors
	// numbers decodes the answer's numbers as json.Number, exact.
	numbers bool
}

// jsonBody sets the request's body to v's JSON.
func (r request) jsonBody(v any) request {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("client: encode %T: %v", v, err)) // our own wire types
	}
	r.body, r.ctype = b, "application/json"
	return r
}

// send sends r, retrying 503s that carry Retry-After, and returns a
// successful answer with its body unread; any other answer is an *Error.
func (c *Client) send(ctx context.Context, r request) (*http.Response, error) {
	u := *c.base
	p, err := url.PathUnescape(r.path)
	if err != nil {
		return nil, fmt.Errorf("client: path %q: %w", r.path, err)
	}
	u.Path, u.RawPath = c.base.Path+p, c.base.EscapedPath()+r.path
	u.RawQuery = r.query.Encode()
	for attempt := 0; ; attempt++ {
		var body io.Reader
		if r.body != nil {
			body = bytes.NewReader(r.body)
		}
		req, err := http.NewRequestWithContext(ctx, r.method, u.String(), body)
		if err != nil {
			return nil, fmt.Errorf("client: %s %s: %w", r.method, r.path, err)
		}
		for k, v := range c.headers {
			req.Header[k] = v
		}
		for k, v := range r.header {
			req.Header[k] = v
		}
		if r.ctype != "" {
			req.Header.Set("Content-Type", r.ctype)
		}
		req.Header.Set("User-Agent", c.agent)
		if c.actor != "" {
			req.Header.Set(ActorHeader, c.actor)
		}
		if c.creds != nil {
			if err := c.creds.Authorize(ctx, req); err != nil {
				return nil, err
			}
		}
		resp, err := c.hc.Do(req)
		if err != nil {
			return nil, fmt.Errorf("client: %s %s: %w", r.method, r.path, err)
		}
		if resp.StatusCode < 300 {
			return resp, nil
		}
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		e := decodeError(resp.StatusCode, resp.Header, data, r.state)
		if resp.StatusCode != http.StatusServiceUnavailable || e.RetryAfter <= 0 || attempt >= c.retries {
			return nil, e
		}
		wait := min(e.RetryAfter, c.maxWait)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, errors.Join(e, ctx.Err())
		case <-t.C:
		}
	}
}

// do sends r and decodes its JSON answer into out (nil: the body is
// dropped).
func (c *Client) do(ctx context.Context, r request, out any) error {
	resp, err := c.send(ctx, r)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		return err
	}
	dec := json.NewDecoder(resp.Body)
	if r.numbers {
		dec.UseNumber()
	}
	if c.strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(out); err != nil {
		return fmt.Errorf("client: %s %s: decode answer into %T: %w", r.method, r.path, out, err)
	}
	if c.strict {
		if _, err := dec.Token(); err != io.EOF {
			return fmt.Errorf("client: %s %s: data after the answer's JSON value", r.method, r.path)
		}
	}
	return nil
}

// retryAfter is a Retry-After header in seconds (kld sends seconds, never
// a date), zero when absent.
func retryAfter(h http.Header) time.Duration {
	s, err := strconv.Atoi(h.Get("Retry-After"))
	if err != nil || s < 0 {
		return 0
	}
	return time.Duration(s) * time.Second
}

// seg escapes one path segment.
func seg(s string) string { return url.PathEscape(s) }

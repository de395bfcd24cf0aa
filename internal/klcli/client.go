package klcli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/kilolock/kilolock"
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
	// UserAgent is sent with every request; empty means "kl".
	UserAgent string
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

// HTTPBackend runs kl's commands against a kld server's JSON API.
type HTTPBackend struct {
	base   *url.URL
	client *http.Client
	token  string
	agent  string
	actor  string
	// user and password are basic auth, sent when token is empty.
	user, password string
	headers        map[string]string
	// closer is closed by Close: the store of a database opened
	// in-process (openDatabase); nil for a server.
	closer io.Closer
	// database is a database served in-process (NewDatabaseBackend): no
	// server, so no server version.
	database bool
}

var (
	_ Backend         = (*HTTPBackend)(nil)
	_ ServerVersioner = (*HTTPBackend)(nil)
)

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
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath, u.RawQuery, u.Fragment = "", "", ""
	c := o.Client
	if c == nil {
		timeout := o.Timeout
		if timeout <= 0 {
			timeout = DefaultTimeout
		}
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.DialContext = (&net.Dialer{Timeout: min(timeout, 10*time.Second), KeepAlive: 30 * time.Second}).DialContext
		tr.TLSHandshakeTimeout = min(timeout, 10*time.Second)
		c = &http.Client{Timeout: timeout, Transport: tr}
	}
	agent := o.UserAgent
	if agent == "" {
		agent = "kl"
	}
	return &HTTPBackend{base: u, client: c, token: o.Token, agent: agent, actor: o.Actor, user: o.Username, password: o.Password, headers: o.Headers}, nil
}

// Status implements Backend.
func (b *HTTPBackend) Status(ctx context.Context, name string) (*kilolock.Status, error) {
	var s kilolock.Status
	if err := b.do(ctx, http.MethodGet, statePath(name), nil, nil, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// History implements Backend.
func (b *HTTPBackend) History(ctx context.Context, name string, opts kilolock.HistoryOptions) ([]kilolock.Version, error) {
	q := url.Values{}
	if opts.Limit > 0 {
		q.Set("limit", strconv.Itoa(opts.Limit))
	}
	if opts.Before > 0 {
		q.Set("before", strconv.FormatInt(opts.Before, 10))
	}
	var out struct {
		Versions []kilolock.Version `json:"versions"`
	}
	if err := b.do(ctx, http.MethodGet, statePath(name)+"/versions", q, nil, &out); err != nil {
		return nil, err
	}
	if out.Versions == nil {
		out.Versions = []kilolock.Version{}
	}
	return out.Versions, nil
}

// States implements Backend.
func (b *HTTPBackend) States(ctx context.Context) ([]kilolock.State, error) {
	var out struct {
		States []kilolock.State `json:"states"`
	}
	if err := b.do(ctx, http.MethodGet, "/v1/api/states", nil, nil, &out); err != nil {
		return nil, err
	}
	if out.States == nil {
		out.States = []kilolock.State{}
	}
	return out.States, nil
}

// Query implements Backend. Numbers come back as json.Number, exact.
func (b *HTTPBackend) Query(ctx context.Context, sql string) (*kilolock.QueryResult, error) {
	var res kilolock.QueryResult
	if err := b.do(ctx, http.MethodPost, "/v1/api/query", nil, map[string]string{"sql": sql}, &res); err != nil {
		return nil, err
	}
	if res.Columns == nil {
		res.Columns = []string{}
	}
	if res.Rows == nil {
		res.Rows = [][]any{}
	}
	return &res, nil
}

// ConfigureState implements Backend, in one request: the server applies
// the lock mode first.
func (b *HTTPBackend) ConfigureState(ctx context.Context, name string, s StateSettings) error {
	body := map[string]bool{}
	if s.ExclusiveLocks != nil {
		body["exclusive_locks"] = *s.ExclusiveLocks
	}
	if s.AllowLineageChange != nil {
		body["allow_lineage_change"] = *s.AllowLineageChange
	}
	if s.SharedPlanLocks != nil {
		body["shared_plan_locks"] = *s.SharedPlanLocks
	}
	if s.RequireClientEncryption != nil {
		body["require_client_encryption"] = *s.RequireClientEncryption
	}
	var out struct {
		OK bool `json:"ok"`
	}
	if err := b.do(ctx, http.MethodPost, statePath(name)+"/config", nil, body, &out); err != nil {
		return err
	}
	if !out.OK {
		return fmt.Errorf("server did not confirm the configuration of state %q", name)
	}
	return nil
}

// Rejections implements Backend.
func (b *HTTPBackend) Rejections(ctx context.Context, name string, limit int) ([]kilolock.Rejection, error) {
	q := url.Values{}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var out struct {
		Rejections []kilolock.Rejection `json:"rejections"`
	}
	if err := b.do(ctx, http.MethodGet, statePath(name)+"/rejections", q, nil, &out); err != nil {
		return nil, err
	}
	if out.Rejections == nil {
		out.Rejections = []kilolock.Rejection{}
	}
	return out.Rejections, nil
}

// ReadVersion implements Backend.
func (b *HTTPBackend) ReadVersion(ctx context.Context, name string, number int64) ([]byte, error) {
	var buf bytes.Buffer
	path := statePath(name) + "/versions/" + strconv.FormatInt(number, 10)
	if err := b.do(ctx, http.MethodGet, path, nil, nil, &buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// ServerVersion implements ServerVersioner: nil for a database served
// in-process, which has no server.
func (b *HTTPBackend) ServerVersion(ctx context.Context) (*VersionInfo, error) {
	if b.database {
		return nil, nil
	}
	var v VersionInfo
	if err := b.do(ctx, http.MethodGet, "/versionz", nil, nil, &v); err != nil {
		return nil, err
	}
	return &v, nil
}

// Close implements Backend.
func (b *HTTPBackend) Close() error {
	b.client.CloseIdleConnections()
	if b.closer != nil {
		return b.closer.Close()
	}
	return nil
}

func statePath(name string) string {
	return "/v1/api/states/" + url.PathEscape(name)
}

// do sends one request and decodes a 2xx answer into out: a *bytes.Buffer
// takes the body as it is, anything else is JSON. Other statuses become an
// *APIError; a server that cannot be reached is ErrUnavailable.
func (b *HTTPBackend) do(ctx context.Context, method, path string, q url.Values, in, out any) error {
	// path is escaped already (statePath), so it is appended as text.
	target := b.base.String() + path
	if len(q) > 0 {
		target += "?" + q.Encode()
	}
	var body io.Reader
	if raw, ok := in.([]byte); ok {
		// A state file, sent as it is; a large one shows its progress.
		send := progress.From(ctx).Start("send "+path, int64(len(raw)), progress.Bytes)
		defer send.Done()
		body = send.Reader(bytes.NewReader(raw))
	} else if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, body)
	if err != nil {
		return err
	}
	if raw, ok := in.([]byte); ok {
		req.ContentLength = int64(len(raw)) // announced: a large state is spooled
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", b.agent)
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range b.headers {
		req.Header.Set(k, v)
	}
	switch {
	case b.token != "":
		req.Header.Set("Authorization", "Bearer "+b.token)
	case b.user != "":
		req.SetBasicAuth(b.user, b.password)
	}
	if b.actor != "" {
		req.Header.Set("X-Kilolock-Actor", b.actor)
	}
	client := b.client
	if u, ok := out.(untimed); ok {
		c := *b.client
		c.Timeout, client, out = 0, &c, u.out
	}
	resp, err := client.Do(req)
	if err != nil {
		return b.transportError(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return decodeError(resp)
	}
	if w, ok := out.(io.Writer); ok {
		receive := progress.From(ctx).Start("receive "+path, max(resp.ContentLength, 0), progress.Bytes)
		defer receive.Done()
		if _, err := io.Copy(w, receive.Reader(resp.Body)); err != nil {
			return b.transportError(err)
		}
		return nil
	}
	dec := json.NewDecoder(resp.Body)
	dec.UseNumber()
	if err := dec.Decode(out); err != nil {
		return fmt.Errorf("%s %s: decode answer: %w", method, path, err)
	}
	return nil
}

func (b *HTTPBackend) transportError(err error) error {
	if errors.Is(err, context.Canceled) {
		return err
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err // the method and URL are said below
	}
	return withHint(&unreachableError{server: b.base.Redacted(), err: err},
		fmt.Sprintf("is kld running at %s? point kl at it with --server (KL_SERVER), or at a database with --database (KL_DATABASE_URL)", b.base.Redacted()))
}

// unreachableError is a server that did not answer. It matches
// kilolock.ErrUnavailable: try again later.
type unreachableError struct {
	server string
	err    error
}

func (e *unreachableError) Error() string {
	return fmt.Sprintf("cannot reach the server at %s: %v", e.server, e.err)
}
func (e *unreachableError) Unwrap() error        { return e.err }
func (e *unreachableError) Is(target error) bool { return target == kilolock.ErrUnavailable }

// maxErrorBody bounds how much of an error answer is read.
const maxErrorBody = 64 << 10

// decodeError turns a non-2xx answer into an *APIError, from the JSON error
// body when there is one, else from the status and the first line of text.
func decodeError(resp *http.Response) error {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	e := &APIError{Status: resp.StatusCode, body: data}
	var body struct {
		Error   string `json:"error"`
		Message string `json:"message"`
		Hint    string `json:"hint"`
	}
	if json.Unmarshal(data, &body) == nil && (body.Error != "" || body.Message != "") {
		e.Code, e.Message, e.Hint = body.Error, body.Message, body.Hint
		if e.Message == "" {
			e.Message = body.Error
		}
		return e
	}
	text := strings.TrimSpace(string(data))
	if i := strings.IndexByte(text, '\n'); i >= 0 {
		text = text[:i]
	}
	if len(text) > 200 {
		text = text[:200] + "…"
	}
	e.Message = fmt.Sprintf("server answered %d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
	if text != "" {
		e.Message += ": " + text
	}
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		e.Hint = "the server wants credentials: set KL_TOKEN"
	}
	return e
}

// Show implements StateOps.
func (b *HTTPBackend) Show(ctx context.Context, name string, ref kilolock.VersionRef) (*history.VersionView, error) {
	var v history.VersionView
	if err := b.do(ctx, http.MethodGet, statePath(name)+"/versions/"+url.PathEscape(ref.String())+"/summary", nil, nil, &v); err != nil {
		return nil, err
	}
	return &v, nil
}

// ShowInstance implements StateOps.
func (b *HTTPBackend) ShowInstance(ctx context.Context, name string, ref kilolock.VersionRef, address string) (*history.InstanceView, error) {
	var v history.InstanceView
	q := url.Values{"ref": {ref.String()}, "address": {address}}
	if err := b.do(ctx, http.MethodGet, statePath(name)+"/instance", q, nil, &v); err != nil {
		return nil, err
	}
	return &v, nil
}

// Diff implements StateOps.
func (b *HTTPBackend) Diff(ctx context.Context, name string, from, to kilolock.VersionRef) (*history.StateDiff, error) {
	var d history.StateDiff
	q := url.Values{"from": {from.String()}, "to": {to.String()}}
	if err := b.do(ctx, http.MethodGet, statePath(name)+"/diff", q, nil, &d); err != nil {
		return nil, err
	}
	return &d, nil
}

// AddressHistory implements StateOps.
func (b *HTTPBackend) AddressHistory(ctx context.Context, name, address string) ([]history.AddressChange, error) {
	var out struct {
		Changes []history.AddressChange `json:"changes"`
	}
	if err := b.do(ctx, http.MethodGet, statePath(name)+"/address-history", url.Values{"address": {address}}, nil, &out); err != nil {
		return nil, err
	}
	return out.Changes, nil
}

// Rollback implements StateOps.
func (b *HTTPBackend) Rollback(ctx context.Context, name string, r RollbackRequest) (*history.RollbackResult, error) {
	var res history.RollbackResult
	in := map[string]any{"to": r.To.String(), "apply": r.Apply, "address": r.Address}
	if err := b.do(ctx, http.MethodPost, statePath(name)+"/rollback", nil, in, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// StateList implements StateOps.
func (b *HTTPBackend) StateList(ctx context.Context, name, pattern string) ([]history.InstanceSummary, error) {
	var q url.Values
	if pattern != "" {
		q = url.Values{"pattern": {pattern}}
	}
	var out struct {
		Instances []history.InstanceSummary `json:"instances"`
	}
	if err := b.do(ctx, http.MethodGet, statePath(name)+"/state/list", q, nil, &out); err != nil {
		return nil, err
	}
	if out.Instances == nil {
		out.Instances = []history.InstanceSummary{}
	}
	return out.Instances, nil
}

// StateRm implements StateOps.
func (b *HTTPBackend) StateRm(ctx context.Context, name string, addresses []string, dryRun bool) (*history.StateOpResult, error) {
	var res history.StateOpResult
	in := map[string]any{"addresses": addresses, "dry_run": dryRun}
	if err := b.do(ctx, http.MethodPost, statePath(name)+"/state/rm", nil, in, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// StateMv implements StateOps.
func (b *HTTPBackend) StateMv(ctx context.Context, name, from, to string, dryRun bool) (*history.StateOpResult, error) {
	var res history.StateOpResult
	in := map[string]any{"from": from, "to": to, "dry_run": dryRun}
	if err := b.do(ctx, http.MethodPost, statePath(name)+"/state/mv", nil, in, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// Export implements StateOps.
func (b *HTTPBackend) Export(ctx context.Context, name string, ref kilolock.VersionRef) ([]byte, error) {
	var buf bytes.Buffer
	if err := b.do(ctx, http.MethodGet, statePath(name)+"/export", url.Values{"ref": {ref.String()}}, nil, &buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Import implements StateOps.
func (b *HTTPBackend) Import(ctx context.Context, name string, data []byte, force bool) (*ImportResult, error) {
	var res ImportResult
	q := url.Values{"force": {strconv.FormatBool(force)}}
	if err := b.do(ctx, http.MethodPost, statePath(name)+"/import", q, data, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// Cone implements GraphOps.
func (b *HTTPBackend) Cone(ctx context.Context, name string, ref kilolock.VersionRef, addresses []string, dir history.Direction, depth int) (*history.ConeView, error) {
	q := url.Values{"ref": {ref.String()}, "address": addresses, "direction": {dir.String()}, "depth": {strconv.Itoa(depth)}}
	var v history.ConeView
	if err := b.do(ctx, http.MethodGet, statePath(name)+"/graph", q, nil, &v); err != nil {
		return nil, err
	}
	return &v, nil
}

// Slice implements GraphOps.
func (b *HTTPBackend) Slice(ctx context.Context, name string, ref kilolock.VersionRef, addresses []string, cone history.SliceCone) ([]byte, error) {
	var buf bytes.Buffer
	q := url.Values{"ref": {ref.String()}, "address": addresses, "cone": {string(cone)}}
	if err := b.do(ctx, http.MethodGet, statePath(name)+"/slice", q, nil, &buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

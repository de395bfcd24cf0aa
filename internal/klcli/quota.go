package klcli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/quota"
	"github.com/kilolock/kilolock/tenancy"
)

// QuotaBackend is what kl quota and the admission of kl plan and kl apply
// need: how a state and its environment stand against their limits, now
// (delta 0) or after a change of delta managed instances. A delta whose
// commit would be refused is a *kilolock.QuotaError, returned with the
// status, whichever way the backend is reached.
type QuotaBackend interface {
	QuotaStatus(ctx context.Context, name string, delta int64) (*kilolock.QuotaStatus, error)
}

var (
	_ QuotaBackend = (*HTTPBackend)(nil)
	_ QuotaBackend = (*laneQuota)(nil)
)

// QuotaStatus implements QuotaBackend through the JSON API.
func (b *HTTPBackend) QuotaStatus(ctx context.Context, name string, delta int64) (*kilolock.QuotaStatus, error) {
	return b.quotaStatus(ctx, statePath(name)+"/quota", name, delta)
}

// quotaStatus asks path for the standing of state name after delta; a
// 403 quota_exceeded becomes the *kilolock.QuotaError it stands for.
func (b *HTTPBackend) quotaStatus(ctx context.Context, path, name string, delta int64) (*kilolock.QuotaStatus, error) {
	q := url.Values{}
	if delta != 0 {
		q.Set("delta", strconv.FormatInt(delta, 10))
	}
	var st kilolock.QuotaStatus
	err := b.do(ctx, http.MethodGet, path, q, nil, &st)
	var ae *APIError
	if errors.As(err, &ae) && ae.Code == "quota_exceeded" {
		return quotaRefusal(name, delta, ae)
	}
	if err != nil {
		return nil, err
	}
	return &st, nil
}

// quotaRefusal rebuilds the refusal a 403 quota_exceeded carries.
func quotaRefusal(name string, delta int64, ae *APIError) (*kilolock.QuotaStatus, error) {
	var body struct {
		Counts []kilolock.QuotaCount `json:"counts"`
	}
	if json.Unmarshal(ae.body, &body) != nil {
		return nil, ae
	}
	st := &kilolock.QuotaStatus{State: name, Exists: true, Delta: delta, Level: quota.Exceed, Counts: body.Counts}
	for _, c := range body.Counts {
		if c.Scope == quota.ScopeEnvironment {
			st.Environment = c.Target
		}
	}
	err := kilolock.CheckQuota(name, body.Counts)
	if err == nil {
		return nil, ae // a refusal that names no refused scope
	}
	err.(*kilolock.QuotaError).Admission = true
	return st, err
}

// laneQuota asks a state's own backend address (…/v1/states/NAME/quota,
// or …/WS/ENV/NAME/quota) with the credentials the configuration's http
// backend sends, so that the token of the configuration is enough.
type laneQuota struct {
	b    *HTTPBackend
	path string // the state's address, relative to the server
}

// QuotaStatus implements QuotaBackend.
func (l *laneQuota) QuotaStatus(ctx context.Context, name string, delta int64) (*kilolock.QuotaStatus, error) {
	return l.b.quotaStatus(ctx, l.path+"/quota", name, delta)
}

// lanePath is the address of state name on its lane, relative to the
// server: /v1/states/WS/ENV/NAME for a tenant's internal name,
// /v1/states/NAME otherwise.
func lanePath(name string) string {
	if ws, env, state, ok := tenancy.SplitTenantStateName(name); ok {
		return "/v1/states/" + url.PathEscape(ws) + "/" + url.PathEscape(env) + "/" + url.PathEscape(state)
	}
	return "/v1/states/" + url.PathEscape(name)
}

// backendCredentials are the credentials an initialized http backend
// sends: its username and password (else TF_HTTP_USERNAME and
// TF_HTTP_PASSWORD, as the backend reads them) and its headers.
func backendCredentials(cfg map[string]any) (user, password string, headers map[string]string) {
	str := func(key, env string) string {
		if s, ok := cfg[key].(string); ok && s != "" {
			return s
		}
		return os.Getenv(env)
	}
	user, password = str("username", "TF_HTTP_USERNAME"), str("password", "TF_HTTP_PASSWORD")
	if hs, ok := cfg["headers"].(map[string]any); ok {
		headers = map[string]string{}
		for k, v := range hs {
			if s, ok := v.(string); ok {
				headers[k] = s
			}
		}
	}
	return user, password, headers
}

// quotaBackend finds the backend and state kl quota asks: with
// --database, the database; with a state named (--state or NAME), the
// server's JSON API (--server, --token); otherwise the initialized http
// backend of dir, asked at the state's own address with the
// configuration's credentials (--server and --token override them).
func (g *Globals) quotaBackend(ctx context.Context, state, dir string) (QuotaBackend, string, func(), error) {
	if g.Database != "" || state != "" {
		if state == "" {
			b, err := ReadTFBackend(dir)
			if err != nil {
				return nil, "", nil, err
			}
			state = b.State
		}
		b, err := Open(ctx, Target{Server: g.Server, Database: g.Database, Token: g.Token, Timeout: g.Timeout, Actor: g.Actor})
		if err != nil {
			return nil, "", nil, err
		}
		return b, state, func() { b.Close() }, nil
	}
	b, err := ReadTFBackend(dir)
	if err != nil {
		return nil, "", nil, err
	}
	qb, err := g.laneQuota(b)
	if err != nil {
		return nil, "", nil, err
	}
	return qb, b.State, func() { qb.b.Close() }, nil
}

// laneQuota is the QuotaBackend of an initialized backend b: its state's
// address on its server (--server overrides), with its credentials
// (--token overrides them).
func (g *Globals) laneQuota(b *TFBackend) (*laneQuota, error) {
	server := b.Server
	if g.Server != "" {
		server = g.Server
	}
	user, password, headers := backendCredentials(b.Config)
	hb, err := NewHTTPBackend(server, HTTPOptions{Token: g.Token, Timeout: g.Timeout, Actor: g.Actor, Username: user, Password: password, Headers: headers})
	if err != nil {
		return nil, err
	}
	return &laneQuota{b: hb, path: lanePath(b.State)}, nil
}

// Admission asks a backend whether a plan's changes fit a state's limits,
// the same rules its commit will be held to, and says so.
type Admission struct {
	Backend QuotaBackend
	State   string
	// Out receives one line for the plan's changes and one per scope
	// counted, each after Prefix.
	Out    io.Writer
	Prefix string
	// Quiet (KL_LOG_LEVEL=warn) keeps only the lines of scopes past a
	// limit, after the plan's line.
	Quiet bool
}

// Admit counts changes against the state's limits and prints the
// projected figures: OK within a limit, WARN past a soft one, FAIL past a
// hard one. A plan past a hard limit is a *kilolock.QuotaError, returned
// with the status.
func (a *Admission) Admit(ctx context.Context, changes quota.PlanChanges) (*kilolock.QuotaStatus, error) {
	st, err := a.Backend.QuotaStatus(ctx, a.State, changes.Delta())
	if st == nil {
		return nil, err
	}
	var shown []kilolock.QuotaCount
	for _, c := range st.Counts {
		if !a.Quiet || c.Level != quota.Within {
			shown = append(shown, c)
		}
	}
	if len(shown) == 0 && a.Quiet {
		return st, err
	}
	fmt.Fprintf(a.Out, "%squota: the plan creates %d, deletes %d and replaces %d managed instance(s) of state %s: %+d\n",
		a.Prefix, changes.Create, changes.Delete, changes.Replace, a.State, changes.Delta())
	for _, c := range shown {
		fmt.Fprintf(a.Out, "%s%s\n", a.Prefix, verdictLine(c))
	}
	return st, err
}

// verdictLine is one scope's projected figures, tagged OK, WARN or FAIL.
func verdictLine(c kilolock.QuotaCount) string {
	tag := map[quota.Level]string{quota.Within: "OK  ", quota.Warn: "WARN", quota.Exceed: "FAIL"}[c.Level]
	return fmt.Sprintf("%s %s (now %d; limit from %s)", tag, c.Message(), c.Current, strings.ReplaceAll(c.From, "_", " "))
}

// admission is the Admission of the initialized backend b: on the
// database with --database, else at the state's own address. Its close
// releases what it opened.
func (g *Globals) admission(ctx context.Context, b *TFBackend, out io.Writer, prefix string) (*Admission, func(), error) {
	if g.Database != "" {
		eb, err := Open(ctx, Target{Database: g.Database, KeyFile: g.KeyFile, Actor: g.Actor})
		if err != nil {
			return nil, nil, err
		}
		return &Admission{Backend: eb, State: b.State, Out: out, Prefix: prefix}, func() { eb.Close() }, nil
	}
	lq, err := g.laneQuota(b)
	if err != nil {
		return nil, nil, err
	}
	return &Admission{Backend: lq, State: b.State, Out: out, Prefix: prefix}, func() { lq.b.Close() }, nil
}

// admit runs a's admission of changes, when there is one. A plan past a
// hard limit fails; an admission that cannot be asked (an older server)
// is said and skipped: the commit is held to the limits anyway.
func admit(ctx context.Context, a *Admission, changes quota.PlanChanges) error {
	if a == nil {
		return nil
	}
	_, err := a.Admit(ctx, changes)
	if err == nil || errors.Is(err, kilolock.ErrQuotaExceeded) || errors.Is(err, context.Canceled) {
		return err
	}
	fmt.Fprintf(a.Out, "%squota: admission skipped, the backend did not answer it: %v\n", a.Prefix, err)
	return nil
}

package klcli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/kilolock/kilolock/client"
	"github.com/kilolock/kilolock/tenancy"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/quota"
)

// QuotaStatus is how state name and its environment stand against their
// limits, now (delta 0) or after a change of delta managed instances, for
// kl quota and the admission of kl plan and kl apply: on the JSON API, or,
// for a configuration's lane (laneQuota), at the state's own address. A
// delta whose commit would be refused (a 403 quota_exceeded) is the status
// with the admission's *kilolock.QuotaError.
func (b *Conn) QuotaStatus(ctx context.Context, name string, delta int64) (*kilolock.QuotaStatus, error) {
	ask, at := b.api.Quota, name
	if b.lane {
		ask = b.api.StateQuota
		if ws, env, state, ok := tenancy.SplitTenantStateName(name); ok {
			at = ws + "/" + env + "/" + state
		}
	}
	st, err := ask(ctx, at, delta)
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Code() != "quota_exceeded" {
		if err != nil {
			return nil, err
		}
		return st, nil
	}
	counts := ce.Body.Counts
	st = &kilolock.QuotaStatus{State: name, Exists: true, Delta: delta, Level: quota.Exceed, Counts: counts}
	for _, c := range counts {
		if c.Scope == quota.ScopeEnvironment {
			st.Environment = c.Target
		}
	}
	qe := kilolock.CheckQuota(name, counts)
	if qe == nil {
		return nil, err // a refusal that names no refused scope
	}
	qe.(*kilolock.QuotaError).Admission = true
	return st, qe
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
func (g *Globals) quotaBackend(ctx context.Context, state, dir string) (*Conn, string, error) {
	var b *TFBackend
	if state == "" {
		var err error
		if b, err = ReadTFBackend(dir); err != nil {
			return nil, "", err
		}
		state = b.State
	}
	var qb *Conn
	var err error
	if g.Database != "" || b == nil {
		qb, err = g.open(ctx)
	} else {
		qb, err = g.laneQuota(b)
	}
	return qb, state, err
}

// laneQuota is the backend of an initialized backend b that asks quotas
// at its state's address on its server (--server overrides), with its
// credentials (--token overrides them), so that the configuration's token
// is enough.
func (g *Globals) laneQuota(b *TFBackend) (*Conn, error) {
	server := b.Server
	if g.Server != "" {
		server = g.Server
	}
	user, password, headers := backendCredentials(b.Config)
	hb, err := NewConn(server, HTTPOptions{Token: g.Token, Timeout: g.Timeout, Actor: g.Actor, Username: user, Password: password, Headers: headers})
	if err != nil {
		return nil, err
	}
	hb.lane = true
	return hb, nil
}

// Admission asks a backend whether a plan's changes fit a state's limits,
// the same rules its commit will be held to, and says so.
type Admission struct {
	Conn  *Conn
	State string
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
	st, err := a.Conn.QuotaStatus(ctx, a.State, changes.Delta())
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
// database with --database, else at the state's own address. Close its
// Conn.
func (g *Globals) admission(ctx context.Context, b *TFBackend, out io.Writer, prefix string) (*Admission, error) {
	var conn *Conn
	var err error
	if g.Database != "" {
		conn, err = Open(ctx, Target{Database: g.Database, KeyFile: g.KeyFile, Actor: g.Actor})
	} else {
		conn, err = g.laneQuota(b)
	}
	if err != nil {
		return nil, err
	}
	return &Admission{Conn: conn, State: b.State, Out: out, Prefix: prefix}, nil
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

package orchestrate

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
// limits, now (delta 0) or after a change of delta managed instances, as
// c answers: on the JSON API, or, with lane (c reaches a configuration's
// backend with its credentials), at the state's own address. A delta
// whose commit would be refused (a 403 quota_exceeded) is the status with
// the admission's *kilolock.QuotaError.
func QuotaStatus(ctx context.Context, c *client.Client, lane bool, name string, delta int64) (*kilolock.QuotaStatus, error) {
	ask, at := c.Quota, name
	if lane {
		ask = c.StateQuota
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

// BackendCredentials are the credentials an initialized http backend
// sends: its username and password (else TF_HTTP_USERNAME and
// TF_HTTP_PASSWORD, as the backend reads them) and its headers.
func BackendCredentials(cfg map[string]any) (user, password string, headers map[string]string) {
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

// Admission asks a backend whether a plan's changes fit a state's limits,
// the same rules its commit will be held to, and says so.
type Admission struct {
	// Client asks; Lane says it asks at the state's own address (see
	// QuotaStatus).
	Client *client.Client
	Lane   bool
	State  string
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
	st, err := QuotaStatus(ctx, a.Client, a.Lane, a.State, changes.Delta())
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
		fmt.Fprintf(a.Out, "%s%s\n", a.Prefix, VerdictLine(c))
	}
	return st, err
}

// VerdictLine is one scope's projected figures, tagged OK, WARN or FAIL.
func VerdictLine(c kilolock.QuotaCount) string {
	tag := map[quota.Level]string{quota.Within: "OK  ", quota.Warn: "WARN", quota.Exceed: "FAIL"}[c.Level]
	return fmt.Sprintf("%s %s (now %d; limit from %s)", tag, c.Message(), c.Current, strings.ReplaceAll(c.From, "_", " "))
}

// Check admits changes with a, which may be nil (nothing to ask: all
// is admitted). A plan past a hard limit is a *kilolock.QuotaError; an
// admission that cannot be asked (an older server) is said and skipped:
// the commit is held to the limits anyway.
func (a *Admission) Check(ctx context.Context, changes quota.PlanChanges) error {
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

package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/retention"
)

// KeysAnswer is the body of GET /v1/api/keys.
type KeysAnswer struct {
	Keys     []kilolock.KeyUsage   `json:"keys"`
	Rotation *kilolock.KeyRotation `json:"rotation"`
}

// RetentionRequest is the body of POST /v1/api/retention/apply.
type RetentionRequest struct {
	DryRun bool   `json:"dry_run"`
	State  string `json:"state,omitempty"`
	Batch  int    `json:"batch,omitempty"`
}

// RotationAnswer is the answer of POST /v1/api/keys/rotate: the rotation
// started, or the one already running.
type RotationAnswer struct {
	Rotation kilolock.KeyRotation `json:"rotation"`
}

// RetentionPolicyList is the answer of GET /v1/api/retention/policies.
type RetentionPolicyList struct {
	Policies []retention.RetentionPolicy `json:"policies"`
}

// RetentionPolicyDeleted is the answer of DELETE
// /v1/api/retention/policies: the policy cleared.
type RetentionPolicyDeleted struct {
	Scope  retention.RetentionScope `json:"scope"`
	Target string                   `json:"target"`
}

// PrunedList is the answer of GET /v1/api/states/NAME/pruned: the runs of
// versions retention pruned.
type PrunedList struct {
	Pruned []kilolock.PrunedRange `json:"pruned"`
}

// RetentionPolicies lists the retention policies (GET
// /v1/api/retention/policies).
func (c *Client) RetentionPolicies(ctx context.Context) (*RetentionPolicyList, error) {
	var out RetentionPolicyList
	return &out, c.do(ctx, request{method: http.MethodGet, path: "/v1/api/retention/policies"}, &out)
}

// SetRetentionPolicy sets the policy of p's scope and target (PUT
// /v1/api/retention/policies); Updated and UpdatedBy are the server's.
func (c *Client) SetRetentionPolicy(ctx context.Context, p retention.RetentionPolicy) (*retention.RetentionPolicy, error) {
	var out retention.RetentionPolicy
	return &out, c.do(ctx, request{method: http.MethodPut, path: "/v1/api/retention/policies"}.jsonBody(p), &out)
}

// DeleteRetentionPolicy clears the policy of a scope and target (DELETE
// /v1/api/retention/policies).
func (c *Client) DeleteRetentionPolicy(ctx context.Context, scope retention.RetentionScope, target string) (*RetentionPolicyDeleted, error) {
	q := url.Values{"scope": {string(scope)}}
	if target != "" {
		q.Set("target", target)
	}
	var out RetentionPolicyDeleted
	return &out, c.do(ctx, request{method: http.MethodDelete, path: "/v1/api/retention/policies", query: q}, &out)
}

// ApplyRetention prunes what the policies let go, or reports it when
// req.DryRun (POST /v1/api/retention/apply).
func (c *Client) ApplyRetention(ctx context.Context, req RetentionRequest) (*retention.RetentionReport, error) {
	var out retention.RetentionReport
	return &out, c.do(ctx, request{method: http.MethodPost, path: "/v1/api/retention/apply"}.jsonBody(req), &out)
}

// Pruned lists the runs of a state's versions that retention pruned,
// before version before (0: all), at most limit (GET
// /v1/api/states/NAME/pruned).
func (c *Client) Pruned(ctx context.Context, name string, before int64, limit int) (*PrunedList, error) {
	q := limitQuery(limit)
	if before > 0 {
		q.Set("before", strconv.FormatInt(before, 10))
	}
	var out PrunedList
	return &out, c.do(ctx, request{method: http.MethodGet, path: apiState(name) + "/pruned", query: q, state: name}, &out)
}

// Backup streams a backup of the whole store, gzip-compressed JSON lines
// (GET /v1/api/backup, operator token only). Close it; a backup cut short
// reads as an error, never as a whole file.
func (c *Client) Backup(ctx context.Context) (io.ReadCloser, error) {
	resp, err := c.send(ctx, request{method: http.MethodGet, path: "/v1/api/backup"})
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// Keys lists the encryption keys at rest, what each encrypts, and the
// last rotation (GET /v1/api/keys).
func (c *Client) Keys(ctx context.Context) (*KeysAnswer, error) {
	var out KeysAnswer
	return &out, c.do(ctx, request{method: http.MethodGet, path: "/v1/api/keys"}, &out)
}

// RotateKeys starts re-encrypting everything under the active key in the
// background (POST /v1/api/keys/rotate); Keys follows it.
func (c *Client) RotateKeys(ctx context.Context) (*RotationAnswer, error) {
	var out RotationAnswer
	return &out, c.do(ctx, request{method: http.MethodPost, path: "/v1/api/keys/rotate"}, &out)
}

// RotationOptions say how far RotateKeysAndFollow follows a rotation.
type RotationOptions struct {
	// Wait asks how far the rotation has come until it is over; without
	// it the rotation is only started.
	Wait bool
	// Every is how often it asks (at least 10 ms apart).
	Every time.Duration
	// Progress, when set, sees the rotation after each request.
	Progress func(kilolock.KeyRotation)
}

// RotateKeysAndFollow starts a rotation (RotateKeys) and, with o.Wait,
// asks how far it has come (Keys) until it is over. It returns the
// rotation as it last stood; one that stopped on an error is an error.
func (c *Client) RotateKeysAndFollow(ctx context.Context, o RotationOptions) (kilolock.KeyRotation, error) {
	progress := o.Progress
	if progress == nil {
		progress = func(kilolock.KeyRotation) {}
	}
	started, err := c.RotateKeys(ctx)
	if err != nil {
		return kilolock.KeyRotation{}, err
	}
	r := started.Rotation
	progress(r)
	for o.Wait && r.Finished.IsZero() && r.Error == "" {
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case <-time.After(max(o.Every, 10*time.Millisecond)):
		}
		st, err := c.Keys(ctx)
		if err != nil {
			return r, err
		}
		if st.Rotation != nil {
			r = *st.Rotation
		}
		progress(r)
	}
	if r.Error != "" {
		return r, fmt.Errorf("key rotation on the server stopped after %d data keys: %s", r.Done, r.Error)
	}
	return r, nil
}

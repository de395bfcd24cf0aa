package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/kilolock/kilolock"
)

// ConfigAnswer is the body of a successful POST …/config: the state's
// settings after the change.
type ConfigAnswer struct {
	OK                 bool              `json:"ok"`
	State              string            `json:"state"`
	LockMode           kilolock.LockMode `json:"lock_mode"`
	ExclusiveLocks     bool              `json:"exclusive_locks"`
	AllowLineageChange bool              `json:"allow_lineage_change"`
	SharedPlanLocks    bool              `json:"shared_plan_locks"`
	// RequireClientEncryption is the state's own setting;
	// EnvironmentRequiresClientEncryption its environment's.
	RequireClientEncryption             bool `json:"require_client_encryption"`
	EnvironmentRequiresClientEncryption bool `json:"environment_requires_client_encryption,omitempty"`
}

// StateConfig is the body of POST /v1/api/states/{name}/config. Each
// setting is a pointer: absent means unchanged.
type StateConfig struct {
	// ExclusiveLocks picks the lock mode: true is classic Terraform
	// locking (one holder), false is optimistic (many holders, writes
	// merged at commit or refused with 409).
	ExclusiveLocks     *bool `json:"exclusive_locks"`
	AllowLineageChange *bool `json:"allow_lineage_change"`
	// SharedPlanLocks true lets plans take shared read locks (granted
	// beside an apply); false makes them lock like applies (classic).
	SharedPlanLocks *bool `json:"shared_plan_locks"`
	// RequireClientEncryption true refuses plaintext writes: the state
	// takes only OpenTofu client-side encrypted ones.
	RequireClientEncryption *bool `json:"require_client_encryption"`
}

// StateList is the answer of GET /v1/api/states.
type StateList struct {
	States []kilolock.State `json:"states"`
}

// VersionList is the answer of GET /v1/api/states/NAME/versions: newest
// first, with the state's current version (0 before its first write).
type VersionList struct {
	Current  int64              `json:"current_version"`
	Versions []kilolock.Version `json:"versions"`
}

// RejectionList is the answer of GET /v1/api/states/NAME/rejections: the
// refused writes, newest first.
type RejectionList struct {
	Rejections []kilolock.Rejection `json:"rejections"`
}

// apiState is a state's path under the JSON API.
func apiState(name string) string { return "/v1/api/states/" + seg(name) }

// States lists the states (GET /v1/api/states).
func (c *Client) States(ctx context.Context) (*StateList, error) {
	var out StateList
	return &out, c.do(ctx, request{method: http.MethodGet, path: "/v1/api/states"}, &out)
}

// Status is a state's current version, lock holders and settings (GET
// /v1/api/states/NAME).
func (c *Client) Status(ctx context.Context, name string) (*kilolock.Status, error) {
	var out kilolock.Status
	return &out, c.do(ctx, request{method: http.MethodGet, path: apiState(name), state: name}, &out)
}

// HistoryOptions page a state's history: at most Limit versions (0: the
// server's default) older than version Before (0: from the newest).
type HistoryOptions struct {
	Limit  int
	Before int64
}

// History lists a state's versions, newest first (GET
// /v1/api/states/NAME/versions).
func (c *Client) History(ctx context.Context, name string, o HistoryOptions) (*VersionList, error) {
	q := url.Values{}
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	if o.Before > 0 {
		q.Set("before", strconv.FormatInt(o.Before, 10))
	}
	var out VersionList
	return &out, c.do(ctx, request{method: http.MethodGet, path: apiState(name) + "/versions", query: q, state: name}, &out)
}

// StateVersion opens version n of a state, as Terraform would read it
// (GET /v1/api/states/NAME/versions/N).
func (c *Client) StateVersion(ctx context.Context, name string, n int64) (*StateFile, error) {
	return c.stateFile(ctx, request{method: http.MethodGet, path: apiState(name) + "/versions/" + strconv.FormatInt(n, 10), state: name})
}

// VersionNumber resolves ref to the number of a version of state name: @N
// as it is, latest by the state's status (ErrNotFound before its first
// version), anything else (a tag, serial:S, @-K) by the server.
func (c *Client) VersionNumber(ctx context.Context, name string, ref kilolock.VersionRef) (int64, error) {
	switch ref.Kind {
	case kilolock.RefNumber:
		return int64(ref.N), nil
	case kilolock.RefLatest:
		s, err := c.Status(ctx, name)
		if err != nil {
			return 0, err
		}
		n := s.Current
		if s.Version != nil {
			n = s.Version.Number
		}
		if n == 0 {
			return 0, fmt.Errorf("state %q has no version yet: %w", name, kilolock.ErrNotFound)
		}
		return n, nil
	}
	v, err := c.Show(ctx, name, ref.String())
	if err != nil {
		return 0, err
	}
	return v.Version.Number, nil
}

// Configure changes a state's settings (POST /v1/api/states/NAME/config):
// the fields set in cfg, the others kept. Changing the lock mode while
// locks are held answers a *kilolock.ConflictError (locks_held).
func (c *Client) Configure(ctx context.Context, name string, cfg StateConfig) (*ConfigAnswer, error) {
	var out ConfigAnswer
	return &out, c.do(ctx, request{method: http.MethodPost, path: apiState(name) + "/config", state: name}.jsonBody(cfg), &out)
}

// Rejections lists a state's refused writes, newest first, at most limit
// (0: the server's default) (GET /v1/api/states/NAME/rejections).
func (c *Client) Rejections(ctx context.Context, name string, limit int) (*RejectionList, error) {
	var out RejectionList
	return &out, c.do(ctx, request{method: http.MethodGet, path: apiState(name) + "/rejections", query: limitQuery(limit), state: name}, &out)
}

// limitQuery is ?limit=N, nothing for 0.
func limitQuery(limit int) url.Values {
	q := url.Values{}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	return q
}

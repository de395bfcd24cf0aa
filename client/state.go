package client

import (
	"context"
	"crypto/md5"
	"encoding/base64"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/kilolock/kilolock"
)

// The Terraform/OpenTofu HTTP backend protocol, as kld serves it on
// /v1/states/NAME. On a server with --auth=token a state's name is
// WORKSPACE_ID/ENV_PUBLIC_ID/STATE_NAME, and credentials are a tenant's.

// StateFile is a state's bytes as the server streams them, with the
// version they are. Close it.
type StateFile struct {
	io.ReadCloser
	// Version and Serial are the version served (its number in the
	// state's history, its Terraform serial).
	Version int64
	Serial  uint64
}

// WriteAnswer is the answer of a state POST: the version the write made
// (or the current one, Unchanged, when it changed nothing). Merged is true
// when an optimistic write was merged onto versions committed since its
// lock's base serial; Rows and Bytes are what the commit wrote to the
// database.
type WriteAnswer struct {
	State      string          `json:"state"`
	Version    int64           `json:"version"`
	Serial     uint64          `json:"serial"`
	Source     kilolock.Source `json:"source"`
	BaseSerial uint64          `json:"base_serial"`
	Merged     bool            `json:"merged"`
	Unchanged  bool            `json:"unchanged"`
	Added      int             `json:"added"`
	Changed    int             `json:"changed"`
	Removed    int             `json:"removed"`
	Rows       int             `json:"rows"`
	Bytes      int             `json:"bytes"`
	// QuotaWarnings are the scopes the write left above a soft limit.
	QuotaWarnings []kilolock.QuotaCount `json:"quota_warnings,omitempty"`
}

// UnlockAnswer is the answer of an unlock: the locks released (none when
// the lock named was not held, which is what was asked), and whether the
// unlock was forced.
type UnlockAnswer struct {
	Released []kilolock.Lock `json:"released"`
	Forced   bool            `json:"forced"`
}

// DeleteAnswer is the answer of a state's DELETE: its name and how many
// versions went with it.
type DeleteAnswer struct {
	Deleted  string `json:"deleted"`
	Versions int64  `json:"versions"`
}

// statePath is a state's protocol path; each segment of a tenant's name
// is escaped on its own.
func statePath(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = seg(p)
	}
	return "/v1/states/" + strings.Join(parts, "/")
}

// State opens a state's current version (GET /v1/states/NAME). A state
// with no version yet answers an error matching kilolock.ErrNotFound.
func (c *Client) State(ctx context.Context, name string) (*StateFile, error) {
	return c.stateFile(ctx, request{method: http.MethodGet, path: statePath(name), state: name})
}

// Outputs opens a state's current version with its outputs and no
// resources (GET /v1/states/NAME/outputs), as terraform_remote_state reads
// it.
func (c *Client) Outputs(ctx context.Context, name string) (*StateFile, error) {
	return c.stateFile(ctx, request{method: http.MethodGet, path: statePath(name) + "/outputs", state: name})
}

func (c *Client) stateFile(ctx context.Context, r request) (*StateFile, error) {
	resp, err := c.send(ctx, r)
	if err != nil {
		return nil, err
	}
	f := &StateFile{ReadCloser: resp.Body}
	f.Version, _ = strconv.ParseInt(resp.Header.Get("X-Kilolock-Version"), 10, 64)
	f.Serial, _ = strconv.ParseUint(resp.Header.Get("X-Kilolock-Serial"), 10, 64)
	return f, nil
}

// PutState writes a new version of a state (POST /v1/states/NAME?ID=),
// under the lock lockID ("" for an unlocked state), with its checksum.
func (c *Client) PutState(ctx context.Context, name, lockID string, state []byte) (*WriteAnswer, error) {
	sum := md5.Sum(state)
	r := request{method: http.MethodPost, path: statePath(name), body: state, ctype: "application/json", state: name,
		header: http.Header{"Content-Md5": {base64.StdEncoding.EncodeToString(sum[:])}}}
	if lockID != "" {
		r.query = url.Values{"ID": {lockID}}
	}
	var out WriteAnswer
	return &out, c.do(ctx, r, &out)
}

// DeleteState deletes a state and its history (DELETE /v1/states/NAME),
// under the lock lockID; force deletes it although it is locked.
func (c *Client) DeleteState(ctx context.Context, name, lockID string, force bool) (*DeleteAnswer, error) {
	q := url.Values{}
	if lockID != "" {
		q.Set("ID", lockID)
	}
	if force {
		q.Set("force", "true")
	}
	var out DeleteAnswer
	return &out, c.do(ctx, request{method: http.MethodDelete, path: statePath(name), query: q, state: name}, &out)
}

// Lock takes a lock on a state (LOCK /v1/states/NAME); run, when set, is
// the orchestrated apply the lock writes for. A held state answers an
// error matching kilolock.ErrLocked, whose *kilolock.LockedError names the
// holder.
func (c *Client) Lock(ctx context.Context, name string, info kilolock.LockInfo, run string) (*kilolock.Lock, error) {
	r := request{method: "LOCK", path: statePath(name), state: name}.jsonBody(info)
	if run != "" {
		r.query = url.Values{"run": {run}}
	}
	var out kilolock.Lock
	return &out, c.do(ctx, r, &out)
}

// Unlock releases the lock info names (UNLOCK /v1/states/NAME), sending
// back the LockInfo it locked with.
func (c *Client) Unlock(ctx context.Context, name string, info kilolock.LockInfo) (*UnlockAnswer, error) {
	var out UnlockAnswer
	return &out, c.do(ctx, request{method: "UNLOCK", path: statePath(name), state: name}.jsonBody(info), &out)
}

// ForceUnlock releases the lock lockID, or whoever holds the state when
// lockID is "" (POST /v1/state-unlock/NAME), for a run that is gone.
func (c *Client) ForceUnlock(ctx context.Context, name, lockID string) (*UnlockAnswer, error) {
	r := request{method: http.MethodPost, path: "/v1/state-unlock/" + seg(name), state: name}
	if lockID != "" {
		r.query = url.Values{"ID": {lockID}}
	}
	var out UnlockAnswer
	return &out, c.do(ctx, r, &out)
}

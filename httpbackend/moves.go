package httpbackend

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/client"
	"github.com/kilolock/kilolock/history"
	"github.com/kilolock/kilolock/tenancy"
)

// MoveRequest is the wire type the client shares.
type MoveRequest = client.MoveRequest

// moveRoutes registers the moves between states.
func (h *Handler) moveRoutes() {
	h.api("POST /v1/api/moves", h.move)
	h.api("GET /v1/api/states/{name}/moves", h.stateMoves)
}

// stateMoves answers GET /v1/api/states/{name}/moves: the moves the state
// took part in, newest first ({"moves": []} for none).
func (h *Handler) stateMoves(w http.ResponseWriter, r *http.Request) error {
	ms, ok := h.engine.Store().(history.MoveStore)
	recs := []history.MoveRecord{}
	if ok {
		if _, err := h.engine.State(r.Context(), r.PathValue("name")); err != nil {
			return err
		}
		got, err := ms.Moves(r.Context(), r.PathValue("name"))
		if err != nil {
			return err
		}
		recs = append(recs, got...)
	}
	writeJSON(w, http.StatusOK, client.MoveList{Moves: recs})
	return nil
}

// move answers POST /v1/api/moves with a history.MoveResult.
func (h *Handler) move(w http.ResponseWriter, r *http.Request) error {
	body, err := h.readBody(r, lockBodyLimit)
	if err != nil {
		return err
	}
	var req MoveRequest
	if err := decodeJSON(body, &req); err != nil {
		return err
	}
	if req.From == "" || req.To == "" {
		return &kilolock.InvalidError{Code: "state_missing", Message: `a move names both states: "from" and "to"`, Hint: `send {"from": "a", "to": "b", "addresses": [{"from": "module.net"}]}`}
	}
	who := actor(r)
	from, to := req.From, req.To
	if h.auth == AuthToken && !h.operatorCredential(r) {
		if from, err = h.authorizeMoveSide(r, req.From); err != nil {
			return err
		}
		if to, err = h.authorizeMoveSide(r, req.To); err != nil {
			return err
		}
		who = info(r).actor
	}
	o := history.MoveOptions{Actor: who, DryRun: req.DryRun}
	var res *history.MoveResult
	switch req.Operation {
	case "", history.OperationMove:
		res, err = history.Move(r.Context(), h.engine, from, to, req.Addresses, o)
	case history.OperationSplit:
		addrs := make([]string, 0, len(req.Addresses))
		for _, p := range req.Addresses {
			if p.To != "" && p.To != p.From {
				return &kilolock.InvalidError{Code: "invalid_move", Message: "a split keeps addresses: " + p.From + " cannot be renamed to " + p.To, Hint: "split first, then rename in the new state with kl state mv"}
			}
			addrs = append(addrs, p.From)
		}
		res, err = history.Split(r.Context(), h.engine, from, to, addrs, o)
	case history.OperationMerge:
		if len(req.Addresses) > 0 {
			return &kilolock.InvalidError{Code: "invalid_move", Message: "a merge moves everything: it takes no addresses", Hint: `use "operation": "mv" to move some addresses`}
		}
		res, err = history.Merge(r.Context(), h.engine, from, to, o)
	default:
		return &kilolock.InvalidError{Code: "invalid_operation", Message: fmt.Sprintf("unknown move operation %q", req.Operation), Hint: `"mv", "split" or "merge"`}
	}
	if err != nil {
		return err
	}
	// The answer names the states as the caller does.
	res.From, res.To = req.From, req.To
	if !res.DryRun && res.Versions != nil {
		h.auditMove(r, who, req, res)
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

// authorizeMoveSide decides one side of a tenant's move as the
// authenticated lane decides a write to it, and returns its internal name.
func (h *Handler) authorizeMoveSide(r *http.Request, path string) (string, error) {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	if len(segs) != 3 {
		return "", &kilolock.InvalidError{Code: "invalid_state", Message: fmt.Sprintf("%q is not a state of the authenticated lane", path), Hint: "name each state as ws_…/env_…/NAME, as its backend address does"}
	}
	ts, ok := h.engine.Store().(tenancy.TenantStore)
	if !ok {
		return "", &kilolock.RefusedError{Code: "tenancy_unsupported", Message: "the store keeps no workspaces"}
	}
	name, err := tenancy.TenantStateName(segs[0], segs[1], segs[2])
	if err != nil {
		return "", err
	}
	user, secret := credentials(r)
	a, err := ts.Access(r.Context(), tenancy.AccessRequest{Hash: tenancy.HashSecret(secret), WorkspaceID: segs[0], Environment: segs[1], StateName: name})
	if err != nil {
		return "", err
	}
	if a.Token != nil {
		info(r).actor = tokenActor(a.Token)
	}
	if err := decide(a, user, segs[0], segs[1], accessWrite, time.Now()); err != nil {
		h.recordDenial(r, err)
		return "", err
	}
	return name, nil
}

// auditMove records a move in the audit log, naming both versions.
func (h *Handler) auditMove(r *http.Request, who string, req MoveRequest, res *history.MoveResult) {
	ts, ok := h.engine.Store().(tenancy.TenantStore)
	if !ok {
		return
	}
	op := req.Operation
	if op == "" {
		op = history.OperationMove
	}
	e := &kilolock.AuditEntry{Actor: who, Action: "state." + op, From: r.RemoteAddr, RequestID: info(r).id,
		Target: fmt.Sprintf("%s@%d -> %s@%d (%d instances)", req.From, res.Versions.From.Number, req.To, res.Versions.To.Number, len(res.Moved))}
	if err := ts.AppendAudit(r.Context(), e); err != nil {
		h.log.Error("audit a move", "request_id", info(r).id, "err", err)
	}
}

// moveAnswer is the answer to a refused move: 403 for what waiting does
// not change (a quota, an archived state), else 409, with the holder of a
// lock and the counts of a quota when the refusal has them.
func moveAnswer(e *history.MoveError) answer {
	status := http.StatusConflict
	if e.Forbidden {
		status = http.StatusForbidden
	}
	b := errorBody{Error: e.Code, Message: e.Message, Hint: e.Hint}
	if l, ok := e.Err.(*kilolock.LockedError); ok {
		h := l.Holder
		b.Holder = &h
	}
	if q, ok := e.Err.(*kilolock.QuotaError); ok {
		quotaBody(&b, q)
	}
	return answer{status: status, body: b}
}

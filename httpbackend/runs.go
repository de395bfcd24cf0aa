package httpbackend

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/kilolock/kilolock/applyrun"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/client"
	"github.com/kilolock/kilolock/reserve"
)

// maxRunsLimit bounds one page of GET …/runs.
const maxRunsLimit = 1000

// runBodyLimit bounds a run request: MaxRunReservations patterns of a few
// dozen bytes each.
const runBodyLimit int64 = 16 << 20

// runRoutes registers the JSON API of apply runs: what `kl apply
// --orchestrated` (or any platform) drives an orchestrated apply with.
func (h *Handler) runRoutes() {
	h.api("POST /v1/api/states/{name}/runs", h.startRun)
	h.api("GET /v1/api/states/{name}/runs", h.listRuns)
	h.api("POST /v1/api/states/{name}/changed-since", h.changedSince)
	h.api("GET /v1/api/runs/{id}", h.getRun)
	h.api("POST /v1/api/runs/{id}/acquire", h.acquireRun)
	h.api("POST /v1/api/runs/{id}/renew", h.renewRun)
	h.api("POST /v1/api/runs/{id}/end", h.endRun)
	h.api("POST /v1/api/runs/{id}/abort", h.abortRun)
}

// RunRequest is the wire type the client shares.
type RunRequest = client.RunRequest

// RunEndRequest is the wire type the client shares.
type RunEndRequest = client.RunEndRequest

// ChangedSinceRequest is the wire type the client shares.
type ChangedSinceRequest = client.ChangedSinceRequest

// startRun answers POST /v1/api/states/{name}/runs with 201 and the run,
// waiting: take its reservations with …/acquire.
func (h *Handler) startRun(w http.ResponseWriter, r *http.Request) error {
	body, err := h.readBody(r, runBodyLimit)
	if err != nil {
		return err
	}
	var req RunRequest
	if err := decodeJSON(body, &req); err != nil {
		var ie *kilolock.InvalidError
		if errors.As(err, &ie) && ie.Code == "invalid_value" {
			return &kilolock.InvalidError{Code: "invalid_reservation", Message: "a reservation is invalid: " + strings.TrimPrefix(ie.Message, "a value in the body is invalid: "),
				Hint: `a reservation is {"pattern": P, "mode": "read"|"write"}; P is an instance (aws_instance.web[0]), a resource (aws_instance.web), module.NAME.*, output.NAME or *`}
		}
		return err
	}
	var lease time.Duration
	if req.Lease != "" {
		if lease, err = time.ParseDuration(req.Lease); err != nil {
			return &kilolock.InvalidError{Code: "invalid_lease", Message: fmt.Sprintf("lease %q is not a duration", req.Lease), Hint: `give the lease as a Go duration, e.g. "15m" or "90s"`}
		}
		if lease == 0 {
			return &kilolock.InvalidError{Code: "invalid_lease", Message: "a lease of 0 holds nothing", Hint: `give a lease such as "15m", or leave it out for the default`}
		}
	}
	if req.Actor == "" {
		req.Actor = actor(r)
	}
	run, err := applyrun.StartRun(r.Context(), h.engine, r.PathValue("name"), kilolock.RunRequest{
		Actor: req.Actor, Info: req.Info, Reservations: req.Reservations, SourceSerial: req.SourceSerial, Lease: lease,
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, run)
	return nil
}

// listRuns answers GET /v1/api/states/{name}/runs?in_flight=true&limit=N,
// newest first.
func (h *Handler) listRuns(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	limit, err := intParam(q.Get("limit"), "limit", 0, maxRunsLimit)
	if err != nil {
		return err
	}
	inFlight := false
	if s := q.Get("in_flight"); s != "" {
		if inFlight, err = strconv.ParseBool(s); err != nil {
			return &kilolock.InvalidError{Code: "invalid_parameter", Message: fmt.Sprintf("in_flight %q is not true or false", s), Hint: "use in_flight=true to list only waiting and active runs"}
		}
	}
	runs, err := applyrun.Runs(r.Context(), h.engine, kilolock.RunFilter{State: r.PathValue("name"), InFlight: inFlight, Limit: int(limit)})
	if err != nil {
		return err
	}
	if runs == nil {
		runs = []kilolock.ApplyRun{}
	}
	writeJSON(w, http.StatusOK, client.RunList{Runs: runs})
	return nil
}

// getRun answers GET /v1/api/runs/{id}: the run, its status as of now
// (expired once its lease ran out). A running orchestrator asks it every
// second to learn of an abort, so it is one read of the run.
func (h *Handler) getRun(w http.ResponseWriter, r *http.Request) error {
	run, err := applyrun.Run(r.Context(), h.engine, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, run)
	return nil
}

// acquireRun answers POST /v1/api/runs/{id}/acquire: 200 with the run when
// it holds its reservations, 423 naming the blockers when it does not (it
// took nothing and stays waiting; ask again).
func (h *Handler) acquireRun(w http.ResponseWriter, r *http.Request) error {
	run, blockers, err := applyrun.AcquireRun(r.Context(), h.engine, r.PathValue("id"))
	if err != nil {
		return err
	}
	if len(blockers) > 0 {
		return &kilolock.ReservedError{State: run.State, Run: run.ID, Blockers: blockers, Now: time.Now()}
	}
	writeJSON(w, http.StatusOK, run)
	return nil
}

// renewRun answers POST /v1/api/runs/{id}/renew: the run with its lease
// extended, or 409 run_ended when it was aborted or expired, which tells
// its orchestrator to stop.
func (h *Handler) renewRun(w http.ResponseWriter, r *http.Request) error {
	run, err := applyrun.RenewRun(r.Context(), h.engine, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, run)
	return nil
}

// endRun answers POST /v1/api/runs/{id}/end: the run ended as the body
// says, its reservations released.
func (h *Handler) endRun(w http.ResponseWriter, r *http.Request) error {
	body, err := h.readBody(r, lockBodyLimit)
	if err != nil {
		return err
	}
	var req RunEndRequest
	if err := decodeJSON(body, &req); err != nil {
		return err
	}
	run, err := applyrun.EndRun(r.Context(), h.engine, r.PathValue("id"), kilolock.RunEnd{Status: req.Status, By: actor(r), Reason: req.Reason})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, run)
	return nil
}

// abortRun answers POST /v1/api/runs/{id}/abort: the run aborted by the
// caller (X-Kilolock-Actor), its reservations released at once.
func (h *Handler) abortRun(w http.ResponseWriter, r *http.Request) error {
	run, err := applyrun.AbortRun(r.Context(), h.engine, r.PathValue("id"), actor(r))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, run)
	return nil
}

// changedSince answers POST /v1/api/states/{name}/changed-since with the
// addresses among the patterns that changed after the serial:
// {"addresses": […]}, empty when a plan made at that serial still holds.
func (h *Handler) changedSince(w http.ResponseWriter, r *http.Request) error {
	body, err := h.readBody(r, runBodyLimit)
	if err != nil {
		return err
	}
	var req ChangedSinceRequest
	if err := decodeJSON(body, &req); err != nil {
		return err
	}
	for _, p := range req.Patterns {
		if p.IsZero() {
			return &kilolock.InvalidError{Code: "invalid_pattern", Message: "a pattern is empty", Hint: "patterns are addresses, module.x.*, output.NAME or *"}
		}
	}
	addrs, err := applyrun.ChangedSince(r.Context(), h.engine, r.PathValue("name"), req.Serial, req.Patterns)
	if err != nil {
		return err
	}
	if addrs == nil {
		addrs = []string{}
	}
	writeJSON(w, http.StatusOK, client.ChangedAddresses{Addresses: addrs})
	return nil
}

// runLockID returns the apply run a LOCK's URL names (?run=RUN_ID), ""
// for a plain lock.
func runLockID(r *http.Request) (string, error) {
	id := strings.TrimSpace(r.URL.Query().Get("run"))
	if id == "" {
		return "", nil
	}
	return id, kilolock.ValidRunID(id)
}

// reservedHint says how to get past what blocks a run: wait, or clear a
// stale holder.
func reservedHint(state string, bs []reserve.Blocker) string {
	var clear []string
	seen := map[string]bool{}
	for _, b := range bs {
		switch {
		case b.Run != "" && !seen[b.Run]:
			seen[b.Run] = true
			clear = append(clear, "kl apply abort --apply-id "+b.Run)
		case b.Run == "" && b.LockID != "" && !seen[b.LockID]:
			seen[b.LockID] = true
			clear = append(clear, fmt.Sprintf("tofu force-unlock %s (POST /v1/state-unlock/%s?ID=%s)", b.LockID, state, b.LockID))
		}
	}
	hint := "nothing was reserved: acquire again once the holders finish (kl apply --orchestrated waits with --wait-timeout)"
	if len(clear) > 0 {
		hint += "; if a holder is gone, clear it: " + strings.Join(clear, "; ")
	}
	return hint
}

// runEndedHint says what an orchestrator does when its run is over.
func runEndedHint(r *kilolock.ApplyRun) string {
	switch r.Status {
	case kilolock.RunAborted:
		return "the run was aborted: stop its apply, it may write nothing more; start a new orchestrated apply (kl apply --orchestrated) when ready"
	case kilolock.RunExpired:
		return "the run's lease ran out (its orchestrator stopped renewing it): its reservations are free; start a new orchestrated apply"
	}
	return fmt.Sprintf("the run is over; `kl status %s` lists the runs in flight, and a new orchestrated apply starts a new one", r.State)
}

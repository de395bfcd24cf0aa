package httpbackend

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"sync"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/client"
)

// lockState answers LOCK /v1/states/{name} (and POST …/lock): the body is the
// client's LockInfo. A held lock answers 423 with the holder's LockInfo as
// the whole body. With ?run=RUN_ID the lock is that apply run's.
func (h *Handler) lockState(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	if err := kilolock.ValidStateName(name); err != nil {
		return err
	}
	body, err := h.lockBody(r)
	if err != nil {
		return err
	}
	li, err := decodeLockInfo(body)
	if err != nil {
		return err
	}
	info(r).lockID = li.ID
	if who := info(r).workload; who != "" {
		li.Who = who // a CI job's verified identity, not the runner's user@host
	}
	run, err := runLockID(r)
	if err != nil {
		return err
	}
	// With ?run=RUN_ID the lock is an orchestrated apply's: its writes
	// stay within the run's reservations.
	lock, err := h.engine.LockWith(r.Context(), name, *li, kilolock.LockRequest{Run: run, ReadOnly: info(r).readOnly, NoCreate: info(r).noCreate})
	var locked *kilolock.LockedError
	switch {
	case errors.As(err, &locked) && locked.Holder.ID == li.ID:
		// The same lock again: a client retrying a LOCK whose answer it
		// lost. It holds the lock, so say so.
		writeJSON(w, http.StatusOK, &locked.Holder)
		return nil
	case errors.As(err, &locked):
		h.metrics.ObserveLockRefused()
		h.refused.add(li.ID)
		return err
	case err != nil:
		return err
	}
	if h.refused.take(li.ID) {
		h.metrics.ObserveLockWaited() // it was refused before: it waited (-lock-timeout)
	}
	writeJSON(w, http.StatusOK, lock)
	return nil
}

// lockBody is the body of a LOCK request, read once however many times it
// is asked for (the authenticated lane reads it to tell a plan's lock
// before the handler does), with the error of that one read.
func (h *Handler) lockBody(r *http.Request) ([]byte, error) {
	ri := info(r)
	if !ri.lockBodyRead {
		ri.lockBody, ri.lockBodyErr = h.readBody(r, lockBodyLimit)
		ri.lockBodyRead = true
	}
	return ri.lockBody, ri.lockBodyErr
}

// decodeLockInfo reads a LockInfo body: 400 when it is empty, not JSON, or
// has no ID.
func decodeLockInfo(body []byte) (*kilolock.LockInfo, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, &kilolock.InvalidError{Code: "lock_info_missing", Message: "the LOCK body is empty", Hint: `send the LockInfo JSON (with an "ID"), as terraform and tofu do`}
	}
	var li kilolock.LockInfo
	if err := json.Unmarshal(body, &li); err != nil {
		return nil, jsonError(err)
	}
	if li.ID == "" {
		return nil, &kilolock.InvalidError{Code: "lock_id_missing", Message: "the lock info has no ID", Hint: `send LockInfo JSON with an "ID", as terraform and tofu do`}
	}
	return &li, nil
}

// unlockAnswer is the body of a successful unlock.
type unlockAnswer = client.UnlockAnswer

// unlockState answers UNLOCK /v1/states/{name} (and POST …/unlock, DELETE
// …/lock). Three bodies reach it:
//
//   - the full LockInfo of the caller's own lock (a normal unlock, after
//     every operation): releases that lock; another holder's → 409;
//   - a LockInfo with only an ID (what `tofu force-unlock ID` sends since
//     OpenTofu 1.10): a forced unlock of that lock id; another id → 409;
//   - an empty body (what `terraform force-unlock` and OpenTofu before 1.10
//     send: they do not send the id): a forced unlock of whoever holds it.
//
// Unlocking what is not held answers 200: the lock the caller named is not
// held, which is what it asked for, and a client retrying an UNLOCK whose
// answer it lost must not fail. In optimistic mode every one of these
// releases only the holder it names (the empty body excepted), and a normal
// unlock of a lock that is not held answers 200 even while others hold
// theirs.
func (h *Handler) unlockState(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	if err := kilolock.ValidStateName(name); err != nil {
		return err
	}
	body, err := h.lockBody(r) // read once: workload.go may have read it
	if err != nil {
		return err
	}
	var (
		id    string
		force bool
	)
	if len(bytes.TrimSpace(body)) == 0 {
		force = true
	} else {
		li, err := decodeLockInfo(body)
		if err != nil {
			return err
		}
		id, force = li.ID, isForceUnlock(li)
	}
	return h.unlock(w, r, name, id, force)
}

// isForceUnlock tells `tofu force-unlock ID`, which sends a LockInfo with
// nothing but the ID, from a client releasing its own lock, which sends back
// the LockInfo it locked with (Who, Operation and Created always set).
func isForceUnlock(li *kilolock.LockInfo) bool {
	return li.Who == "" && li.Operation == "" && li.Created.IsZero() && li.Version == "" && li.Path == "" && li.Info == ""
}

// stateUnlock answers POST /v1/state-unlock/{name}[?ID=…], for proxies that
// drop the body of an UNLOCK: a forced unlock of the given lock id, or of
// whoever holds the state.
func (h *Handler) stateUnlock(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	if err := kilolock.ValidStateName(name); err != nil {
		return err
	}
	return h.unlock(w, r, name, r.URL.Query().Get("ID"), true)
}

func (h *Handler) unlock(w http.ResponseWriter, r *http.Request, name, id string, force bool) error {
	ri := info(r)
	ri.lockID = id
	released, err := h.engine.UnlockWith(r.Context(), name, id, kilolock.UnlockOptions{Force: force, ReadOnly: ri.readOnly})
	var mismatch *kilolock.LockMismatchError
	switch {
	case errors.Is(err, kilolock.ErrNotFound), errors.As(err, &mismatch) && mismatch.Holder.ID == "":
		h.log.Info("unlock: no lock held", "state", name, "lock_id", id, "forced", force, "request_id", ri.id)
		released = nil
	case mismatch != nil && !force && h.optimistic(r, name):
		// Others holding an optimistic state is the normal case, not a
		// sign that this caller's lock was taken over: its lock is not
		// held, as it asked.
		h.log.Info("unlock: lock not held", "state", name, "lock_id", id, "request_id", ri.id)
		released = nil
	case err != nil:
		return err
	}
	if released == nil {
		released = []kilolock.Lock{}
	}
	writeJSON(w, http.StatusOK, &unlockAnswer{Released: released, Forced: force})
	return nil
}

// optimistic reports whether the state is in optimistic lock mode; false
// when that cannot be read.
func (h *Handler) optimistic(r *http.Request, name string) bool {
	st, err := h.engine.Store().State(r.Context(), name)
	return err == nil && st.LockMode == kilolock.LockOptimistic
}

// refusedLocks remembers lock ids recently answered 423, so that a later
// success of the same id counts as a lock wait (terraform -lock-timeout
// retries with the same id). It forgets everything when full: it feeds a
// metric, nothing else.
type refusedLocks struct {
	mu  sync.Mutex
	max int
	ids map[string]struct{}
}

func newRefusedLocks(max int) *refusedLocks {
	return &refusedLocks{max: max, ids: map[string]struct{}{}}
}

func (s *refusedLocks) add(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.ids) >= s.max {
		clear(s.ids)
	}
	s.ids[id] = struct{}{}
}

func (s *refusedLocks) take(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.ids[id]
	delete(s.ids, id)
	return ok
}

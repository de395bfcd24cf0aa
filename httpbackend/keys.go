package httpbackend

import (
	"context"
	"net/http"
	"sync"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/client"
)

// Encryption at rest: the keys the store's data keys are wrapped by, and
// key rotation, which re-wraps them in the background (kl keys status,
// kl keys rotate).
//
//	GET  /v1/api/keys         {"keys":[{"key_id","states","configured","active"}…],"rotation":{…}|null}
//	POST /v1/api/keys/rotate  202 {"rotation":{…}}: started, or the one running
//
// The rotation is this process's; its progress holds for the whole
// database all the same, as keys' "states" count what every process
// re-wrapped.

type keysAnswer = client.KeysAnswer

// rotation is a process's key rotation: at most one runs at a time.
type rotation struct {
	mu      sync.Mutex
	last    *kilolock.KeyRotation
	running bool
}

func (rt *rotation) status() *kilolock.KeyRotation {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.last == nil {
		return nil
	}
	r := *rt.last
	return &r
}

func (rt *rotation) set(r kilolock.KeyRotation) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.last = &r
}

func (h *Handler) keyRoutes() {
	h.api("GET /v1/api/keys", h.listKeys)
	h.api("POST /v1/api/keys/rotate", h.rotateKeys)
}

func (h *Handler) listKeys(w http.ResponseWriter, r *http.Request) error {
	usage, err := h.engine.KeyUsage(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, keysAnswer{Keys: usage, Rotation: h.rotation.status()})
	return nil
}

// rotateKeys starts a rotation in the background, unless one runs: it
// outlives the request (each of its batches is a transaction of its own,
// so a process stopping midway leaves nothing half done).
func (h *Handler) rotateKeys(w http.ResponseWriter, r *http.Request) error {
	rt := &h.rotation
	rt.mu.Lock()
	if rt.running {
		last := *rt.last
		rt.mu.Unlock()
		writeJSON(w, http.StatusAccepted, client.RotationAnswer{Rotation: last})
		return nil
	}
	// Refuse at once what cannot start: no keys, or not a key store.
	if _, err := h.engine.KeyUsage(r.Context()); err != nil {
		rt.mu.Unlock()
		return err
	}
	rt.running = true
	rt.mu.Unlock()

	started := make(chan kilolock.KeyRotation, 1)
	ctx := context.WithoutCancel(r.Context())
	id := info(r).id
	go func() {
		first := true
		res, err := h.engine.RotateKeys(ctx, func(p kilolock.KeyRotation) {
			rt.set(p)
			if first {
				first = false
				started <- p
			}
		})
		rt.set(res)
		rt.mu.Lock()
		rt.running = false
		rt.mu.Unlock()
		if first {
			started <- res
		}
		if err != nil {
			h.log.Error("key rotation failed", "request_id", id, "rewrapped", res.Done, "remaining", res.Remaining, "err", err)
			return
		}
		h.log.Info("key rotation done", "request_id", id, "active_key", res.Active, "rewrapped", res.Done, "took", res.Finished.Sub(res.Started))
	}()
	writeJSON(w, http.StatusAccepted, client.RotationAnswer{Rotation: <-started})
	return nil
}

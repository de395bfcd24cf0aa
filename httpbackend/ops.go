package httpbackend

import (
	"net/http"
	"time"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/client"
	"github.com/kilolock/kilolock/retention"
)

// opsRoutes registers the operations API: retention policies, pruning and
// pruned-version markers on every server (as rollback and the other
// writes of the JSON API are), and the backup only where the operator
// token guards it: a backup holds every tenant's states, token hashes and
// the audit log.
func (h *Handler) opsRoutes(guarded bool) {
	h.api("GET /v1/api/retention/policies", h.listRetentionPolicies)
	h.api("PUT /v1/api/retention/policies", h.putRetentionPolicy)
	h.api("DELETE /v1/api/retention/policies", h.deleteRetentionPolicy)
	h.api("POST /v1/api/retention/apply", h.applyRetention)
	h.api("GET /v1/api/states/{name}/pruned", h.listPruned)
	if guarded {
		h.api("GET /v1/api/backup", h.backup)
	} else {
		h.api("GET /v1/api/backup", func(http.ResponseWriter, *http.Request) error { return errBackupClosed })
	}
}

// errBackupClosed answers a backup asked of a server without
// authentication.
var errBackupClosed = &httpError{status: http.StatusForbidden, code: "backup_closed",
	message: "this server runs without authentication (--auth=none): it serves no backups, which hold every state, token hash and the audit log",
	hint:    "back up the database directly (kl backup --database URL -o FILE), or start kld with --auth=token --operator-token klo_… and use that token"}

// caller is who an operations request is made by, as the audit log
// records it: the request's credential (the operator), else the client's
// ActorHeader, else defaultActor.
func caller(r *http.Request) kilolock.Caller {
	ri := info(r)
	who := ri.actor
	if who == "" {
		who = actor(r)
	}
	return kilolock.Caller{Actor: who, From: r.RemoteAddr, RequestID: ri.id}
}

func (h *Handler) listRetentionPolicies(w http.ResponseWriter, r *http.Request) error {
	ps, err := retention.RetentionPolicies(r.Context(), h.engine)
	if err != nil {
		return err
	}
	if ps == nil {
		ps = []retention.RetentionPolicy{}
	}
	writeJSON(w, http.StatusOK, client.RetentionPolicyList{Policies: ps})
	return nil
}

// putRetentionPolicy answers PUT /v1/api/retention/policies, whose body is
// {"scope": …, "target": …, "keep_last": N, "keep_days": D}.
func (h *Handler) putRetentionPolicy(w http.ResponseWriter, r *http.Request) error {
	var p retention.RetentionPolicy
	if err := h.controlRequest(r, &p); err != nil {
		return err
	}
	out, err := retention.SetRetentionPolicy(r.Context(), h.engine, caller(r), retention.RetentionPolicy{Scope: p.Scope, Target: p.Target, KeepLast: p.KeepLast, KeepDays: p.KeepDays})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// deleteRetentionPolicy answers DELETE /v1/api/retention/policies?scope=…&target=….
func (h *Handler) deleteRetentionPolicy(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	scope, target := retention.RetentionScope(q.Get("scope")), q.Get("target")
	if err := retention.UnsetRetentionPolicy(r.Context(), h.engine, caller(r), scope, target); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, client.RetentionPolicyDeleted{Scope: scope, Target: target})
	return nil
}

// RetentionRequest is the wire type the client shares.
type RetentionRequest = client.RetentionRequest

// maxPruneBatch bounds the versions one transaction of a request prunes.
const maxPruneBatch = 10_000

func (h *Handler) applyRetention(w http.ResponseWriter, r *http.Request) error {
	var req RetentionRequest
	if err := h.controlRequest(r, &req); err != nil {
		return err
	}
	if req.Batch < 0 || req.Batch > maxPruneBatch {
		return &kilolock.InvalidError{Code: "invalid_parameter", Message: "batch must be from 1 to 10000 (0: the default, 100)", Hint: "send a smaller batch"}
	}
	if req.State != "" {
		if err := kilolock.ValidStateName(req.State); err != nil {
			return err
		}
	}
	rep, err := retention.ApplyRetention(r.Context(), h.engine, retention.RetentionOptions{DryRun: req.DryRun, State: req.State, Batch: req.Batch, By: caller(r)})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, rep)
	return nil
}

// listPruned answers GET /v1/api/states/{name}/pruned?before=M&limit=N
// with the runs of pruned versions numbered below M.
func (h *Handler) listPruned(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	before, err := intParam(q.Get("before"), "before", 0, 1<<62)
	if err != nil {
		return err
	}
	limit, err := intParam(q.Get("limit"), "limit", 0, maxHistoryLimit)
	if err != nil {
		return err
	}
	out, err := retention.PrunedVersions(r.Context(), h.engine, r.PathValue("name"), before, int(limit))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, client.PrunedList{Pruned: out})
	return nil
}

// backupIdle is how long a backup's client may stop reading before the
// server gives up (and ends the snapshot transaction the backup holds).
const backupIdle = 2 * time.Minute

// backup answers GET /v1/api/backup with a backup of the whole store
// (retention.BackupStore), streamed as it is read. Once the first bytes are
// sent a failure cannot become an error answer: the connection is cut, so
// that the client sees a broken download, never a whole-looking one (and
// a backup's last line and checksum tell a cut file anyway).
func (h *Handler) backup(w http.ResponseWriter, r *http.Request) error {
	bw := &backupResponse{w: w, rc: http.NewResponseController(w)}
	sum, err := retention.Backup(r.Context(), h.engine, bw)
	if err != nil && !bw.started {
		return err
	}
	if err != nil {
		h.log.Error("backup cut short", "request_id", info(r).id, "err", err)
		panic(http.ErrAbortHandler)
	}
	h.log.Info("backup", "request_id", info(r).id, "rows", sum.Rows(), "bytes", sum.Bytes, "locks_excluded", sum.Excluded[0].Rows)
	return nil
}

// backupResponse sends the answer's headers with the first bytes, and
// moves the write deadline on as bytes go.
type backupResponse struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	started bool
}

func (b *backupResponse) Write(p []byte) (int, error) {
	if !b.started {
		b.started = true
		b.w.Header().Set("Content-Type", "application/gzip")
		b.w.Header().Set("Content-Disposition", `attachment; filename="kilolock-backup.json.gz"`)
		b.w.WriteHeader(http.StatusOK)
	}
	_ = b.rc.SetWriteDeadline(time.Now().Add(backupIdle)) // not every writer has deadlines
	return b.w.Write(p)
}

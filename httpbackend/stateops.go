package httpbackend

import (
	"net/http"
	"strings"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/client"
	"github.com/kilolock/kilolock/history"
)

// ActorHeader names who asks for a server-made version (rollback, state
// operation, import) when the request carries no identity of its own.
const ActorHeader = client.ActorHeader

// defaultActor is recorded on a server-made version when the request names
// nobody.
const defaultActor = "kl"

// actor is who a server-made version is recorded as made by: the
// client-sent ActorHeader, else defaultActor. (When authentication lands,
// the request's identity comes first.)
func actor(r *http.Request) string {
	if a := strings.TrimSpace(r.Header.Get(ActorHeader)); a != "" {
		return a
	}
	return defaultActor
}

// versionRef parses a version reference parameter; empty means @latest.
func versionRef(s string) (kilolock.VersionRef, error) {
	if s == "" {
		return kilolock.Latest, nil
	}
	return kilolock.ParseVersionRef(s)
}

// requireParam refuses a request without a required query parameter.
func requireParam(v, name, hint string) error {
	if v == "" {
		return &kilolock.InvalidError{Code: "parameter_missing", Message: "the request has no " + name + " parameter", Hint: hint}
	}
	return nil
}

// showVersion answers GET /v1/api/states/{name}/versions/{ref}/summary.
func (h *Handler) showVersion(w http.ResponseWriter, r *http.Request) error {
	ref, err := kilolock.ParseVersionRef(r.PathValue("ref"))
	if err != nil {
		return err
	}
	view, err := history.Show(r.Context(), h.engine, r.PathValue("name"), ref)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, view)
	return nil
}

// showInstance answers GET /v1/api/states/{name}/instance?ref=&address=.
func (h *Handler) showInstance(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	ref, err := versionRef(q.Get("ref"))
	if err != nil {
		return err
	}
	if err := requireParam(q.Get("address"), "address", "name an instance: ?address=aws_instance.web[0]"); err != nil {
		return err
	}
	view, err := history.ShowInstance(r.Context(), h.engine, r.PathValue("name"), ref, q.Get("address"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, view)
	return nil
}

// diffVersions answers GET /v1/api/states/{name}/diff?from=&to=; to
// defaults to @latest.
func (h *Handler) diffVersions(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	if err := requireParam(q.Get("from"), "from", "compare two versions: ?from=@1&to=@latest"); err != nil {
		return err
	}
	from, err := kilolock.ParseVersionRef(q.Get("from"))
	if err != nil {
		return err
	}
	to, err := versionRef(q.Get("to"))
	if err != nil {
		return err
	}
	d, err := history.Diff(r.Context(), h.engine, r.PathValue("name"), from, to)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, d)
	return nil
}

// addressHistory answers GET /v1/api/states/{name}/address-history?address=.
func (h *Handler) addressHistory(w http.ResponseWriter, r *http.Request) error {
	address := r.URL.Query().Get("address")
	if err := requireParam(address, "address", "name an instance or a resource: ?address=aws_instance.web"); err != nil {
		return err
	}
	changes, err := history.AddressHistory(r.Context(), h.engine, r.PathValue("name"), address)
	if err != nil {
		return err
	}
	if changes == nil {
		changes = []history.AddressChange{}
	}
	writeJSON(w, http.StatusOK, client.AddressChanges{Changes: changes})
	return nil
}

// RollbackRequest is the wire type the client shares.
type RollbackRequest = client.RollbackRequest

// RollbackResponse is the wire type the client shares.
type RollbackResponse = client.RollbackResponse

// rollback answers POST /v1/api/states/{name}/rollback.
func (h *Handler) rollback(w http.ResponseWriter, r *http.Request) error {
	body, err := h.readBody(r, lockBodyLimit)
	if err != nil {
		return err
	}
	var req RollbackRequest
	if err := decodeJSON(body, &req); err != nil {
		return err
	}
	if req.To == "" {
		return &kilolock.InvalidError{Code: "version_missing", Message: `the rollback has no "to" version`, Hint: `send {"to": "@3"}`}
	}
	ref, err := kilolock.ParseVersionRef(req.To)
	if err != nil {
		return err
	}
	ctx, name := r.Context(), r.PathValue("name")
	var res *history.RollbackResult
	switch o := (history.RollbackOptions{Actor: actor(r)}); {
	case !req.Apply:
		var plan *history.RollbackPlan
		if req.Address == "" {
			plan, err = history.PlanRollback(ctx, h.engine, name, ref)
		} else {
			plan, err = history.PlanRollbackResource(ctx, h.engine, name, req.Address, ref)
		}
		if plan != nil {
			res = &history.RollbackResult{Plan: *plan}
		}
	case req.Address == "":
		res, err = history.Rollback(ctx, h.engine, name, ref, o)
	default:
		res, err = history.RollbackResource(ctx, h.engine, name, req.Address, ref, o)
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, RollbackResponse{RollbackResult: *res, DryRun: !req.Apply})
	return nil
}

// StateRmRequest is the wire type the client shares.
type StateRmRequest = client.StateRmRequest

// stateRm answers POST /v1/api/states/{name}/state/rm.
func (h *Handler) stateRm(w http.ResponseWriter, r *http.Request) error {
	body, err := h.readBody(r, lockBodyLimit)
	if err != nil {
		return err
	}
	var req StateRmRequest
	if err := decodeJSON(body, &req); err != nil {
		return err
	}
	res, err := history.StateRm(r.Context(), h.engine, r.PathValue("name"), req.Addresses, history.StateOpOptions{Actor: actor(r), DryRun: req.DryRun})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

// StateMvRequest is the wire type the client shares.
type StateMvRequest = client.StateMvRequest

// stateMv answers POST /v1/api/states/{name}/state/mv.
func (h *Handler) stateMv(w http.ResponseWriter, r *http.Request) error {
	body, err := h.readBody(r, lockBodyLimit)
	if err != nil {
		return err
	}
	var req StateMvRequest
	if err := decodeJSON(body, &req); err != nil {
		return err
	}
	res, err := history.StateMv(r.Context(), h.engine, r.PathValue("name"), req.From, req.To, history.StateOpOptions{Actor: actor(r), DryRun: req.DryRun})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

// stateList answers GET /v1/api/states/{name}/state/list?pattern=.
func (h *Handler) stateList(w http.ResponseWriter, r *http.Request) error {
	list, err := history.StateList(r.Context(), h.engine, r.PathValue("name"), r.URL.Query().Get("pattern"))
	if err != nil {
		return err
	}
	if list == nil {
		list = []history.InstanceSummary{}
	}
	writeJSON(w, http.StatusOK, client.InstanceList{Instances: list})
	return nil
}

// export answers GET /v1/api/states/{name}/export?ref= with the version's
// state file, as `tofu state push` takes it.
func (h *Handler) export(w http.ResponseWriter, r *http.Request) error {
	ref, err := versionRef(r.URL.Query().Get("ref"))
	if err != nil {
		return err
	}
	data, err := history.Export(r.Context(), h.engine, r.PathValue("name"), ref)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store") // state holds secrets
	w.WriteHeader(http.StatusOK)
	w.Write(data)
	return nil
}

// ImportResponse is the wire type the client shares.
type ImportResponse = client.ImportResponse

// importState answers POST /v1/api/states/{name}/import?force=true|false;
// the body is the state file.
func (h *Handler) importState(w http.ResponseWriter, r *http.Request) error {
	force := false
	switch f := r.URL.Query().Get("force"); f {
	case "", "false", "0":
	case "true", "1":
		force = true
	default:
		return &kilolock.InvalidError{Code: "invalid_parameter", Message: "force " + f + " is not true or false", Hint: "use ?force=true"}
	}
	body, err := h.readBody(r, h.bodyLimit)
	if err != nil {
		return err
	}
	res, err := history.Import(r.Context(), h.engine, r.PathValue("name"), body, history.ImportOptions{Actor: actor(r), Force: force})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, ImportResponse{Version: res.Version, Stats: res.Stats, Unchanged: res.Unchanged})
	return nil
}

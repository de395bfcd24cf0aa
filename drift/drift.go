package drift

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/kilolock/kilolock"

	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/history"
)

// SourceRefresh is the Source of a version that accepted a drift check's
// refresh-only plan (kl drift check --accept).
const SourceRefresh kilolock.Source = "refresh"

// Kinds of drift.
const (
	DriftChanged = "changed" // the real object's attributes differ from the recorded ones
	DriftDeleted = "deleted" // the real object is gone
)

// DriftChange is one attribute path whose real value differs from the
// recorded one; sensitive values are SensitiveMask. Recorded is absent for
// a path only the real object has, Real for one only the record has.
type DriftChange struct {
	Path     string `json:"path"`
	Kind     string `json:"kind"` // "added", "removed" or "changed", from the record to the real object
	Recorded any    `json:"recorded,omitempty"`
	Real     any    `json:"real,omitempty"`
}

// DriftRecord is what one drift check found of one instance object.
type DriftRecord struct {
	InstanceID string        `json:"instance_id"`
	Address    string        `json:"address"`
	Type       string        `json:"type"`
	Kind       string        `json:"kind"` // DriftChanged or DriftDeleted
	Changes    []DriftChange `json:"changes"`
	// Version is the version number checked; Check, Checked and Actor are
	// the check's.
	Version int64     `json:"version"`
	Check   int64     `json:"check_id"`
	Checked time.Time `json:"checked_at"`
	Actor   string    `json:"checked_by"`
}

// DriftCheck is one check of a state against its real infrastructure.
type DriftCheck struct {
	ID      int64     `json:"id"`
	Version int64     `json:"version"`
	Checked time.Time `json:"checked_at"`
	Actor   string    `json:"actor"`
	// Scope are the instance IDs the check refreshed; nil for the whole
	// state. Open records in the scope that the check does not list
	// drifted again are closed.
	Scope   []string      `json:"scope"`
	Drifted []DriftRecord `json:"drifted"`
}

// DriftStore is the optional capability of a Store that keeps drift
// checks. Find it with a type assertion: s.(DriftStore).
//
// A record is open until a later check whose scope holds its instance is
// recorded, or a version after the one checked changes the instance: the
// second is read from the instances' intervals, so no write closes it and
// it cannot be missed.
type DriftStore interface {
	// RecordDrift stores a check of version c.Version of a state in one
	// transaction: it closes the open records of the instances in c.Scope
	// (every one when nil) and adds c.Drifted. It sets c.ID and c.Checked
	// (and each record's Check, Checked, Actor and Version). ErrNotFound
	// when the state or the version does not exist.
	RecordDrift(ctx context.Context, state string, c *DriftCheck) error
	// Drift lists a state's open drift records by address. ErrNotFound
	// when the state does not exist; an empty list when nothing drifted.
	Drift(ctx context.Context, state string) ([]DriftRecord, error)
	// DriftCounts returns, for each of the states named (every state when
	// names is nil) that was ever checked, its open drift records; a state
	// never checked is not in the map.
	DriftCounts(ctx context.Context, names []string) (map[string]int, error)
}

// drifts returns the engine's store as a DriftStore.
func drifts(e *kilolock.Engine) (DriftStore, error) {
	ds, ok := e.Store().(DriftStore)
	if !ok {
		return nil, &kilolock.InvalidError{Code: "drift_unsupported", Message: "this store keeps no drift checks", Hint: "use the SQLite or PostgreSQL store"}
	}
	return ds, nil
}

// DriftReport is what a refresh-only plan of the real CLI found, as
// `kl drift check` sends it: against which state (its lineage and serial,
// as the plan read it), which addresses it refreshed, and the real objects
// of the instances that drifted.
type DriftReport struct {
	Lineage string `json:"lineage"`
	Serial  uint64 `json:"serial"`
	// Scope are the instance or resource addresses the plan targeted;
	// empty for the whole state.
	Scope []string `json:"scope,omitempty"`
	// Drifted are the instances the plan's resource_drift lists.
	Drifted []DriftedInstance `json:"drifted"`
}

// DriftedInstance is one instance of a plan's resource_drift: its real
// attributes (null when the object is gone) and which of them are
// sensitive (terraform-json's after_sensitive).
type DriftedInstance struct {
	Address       string          `json:"address"`
	Deposed       string          `json:"deposed,omitempty"`
	Real          json.RawMessage `json:"real"`
	RealSensitive json.RawMessage `json:"real_sensitive,omitempty"`
}

// MaxDriftScope bounds the addresses of one report's scope and its drifted
// instances.
const MaxDriftScope = 100_000

// RecordDrift records a drift check of a state from r: the version the
// plan read (by r.Serial, in r.Lineage), and per drifted instance the
// attribute paths whose real value differs from the recorded one, with
// both values, sensitive ones masked (in the record or in the real object)
// before anything is stored. It writes no state version. An *InvalidError
// for a report whose lineage is not the state's, that names no version of
// it, or an instance that version does not hold; ErrEncrypted for a
// client-side encrypted version.
func RecordDrift(ctx context.Context, e *kilolock.Engine, name string, r *DriftReport, by kilolock.Caller) (*DriftCheck, error) {
	if err := kilolock.ValidStateName(name); err != nil {
		return nil, err
	}
	ds, err := drifts(e)
	if err != nil {
		return nil, err
	}
	if len(r.Scope) > MaxDriftScope || len(r.Drifted) > MaxDriftScope {
		return nil, &kilolock.InvalidError{Code: "invalid_drift_report", Message: fmt.Sprintf("a drift report names at most %d addresses", MaxDriftScope), Hint: "check the whole state (no --address) instead"}
	}
	st, err := e.State(ctx, name)
	if err != nil {
		return nil, err
	}
	v, err := e.Resolve(ctx, st, kilolock.VersionRef{Kind: kilolock.RefSerial, N: r.Serial})
	if err != nil {
		return nil, &kilolock.InvalidError{Code: "drift_version_unknown", Message: fmt.Sprintf("the plan read serial %d of state %s, which no version of it has: %v", r.Serial, name, err),
			Hint: "run the check in the configuration whose backend is this state, after tofu init"}
	}
	if r.Lineage != v.Lineage {
		return nil, &kilolock.InvalidError{Code: "drift_lineage_mismatch", Message: fmt.Sprintf("the plan read lineage %s; state %s has lineage %s", kilolock.Clip(r.Lineage), name, v.Lineage),
			Hint: "run the check in the configuration whose backend is this state"}
	}
	_, g, err := e.VersionGraph(ctx, st, kilolock.VersionRef{Kind: kilolock.RefNumber, N: uint64(v.Number)})
	if err != nil {
		return nil, err
	}
	byID := make(map[string]*graph.Instance, len(g.Instances))
	for i := range g.Instances {
		byID[g.Instances[i].ID()] = &g.Instances[i]
	}
	c := &DriftCheck{Version: v.Number, Actor: by.Who(), Drifted: []DriftRecord{}}
	if len(r.Scope) > 0 {
		c.Scope = []string{}
		for _, a := range r.Scope {
			ids, err := instancesAt(g, a)
			if err != nil {
				return nil, err
			}
			c.Scope = append(c.Scope, ids...)
		}
	}
	for _, d := range r.Drifted {
		addr, err := graph.ParseAddress(d.Address)
		if err != nil {
			return nil, &kilolock.InvalidError{Code: "invalid_address", Message: fmt.Sprintf("drifted address %q: %v", d.Address, err), Hint: "send the addresses as the plan's resource_drift names them"}
		}
		id := addr.String()
		if d.Deposed != "" {
			id += " " + d.Deposed
		}
		in, ok := byID[id]
		if !ok {
			return nil, &kilolock.InvalidError{Code: "unknown_address", Message: fmt.Sprintf("version @%d of state %s holds no %s", v.Number, name, id),
				Hint: "the plan read another version than the report names; run the check again"}
		}
		rec, err := driftRecord(in, d)
		if err != nil {
			return nil, err
		}
		c.Drifted = append(c.Drifted, *rec)
		if c.Scope != nil {
			c.Scope = append(c.Scope, id)
		}
	}
	if err := ds.RecordDrift(ctx, name, c); err != nil {
		return nil, err
	}
	e.Logger().Info("drift checked", "state", name, "version", c.Version, "drifted", len(c.Drifted), "actor", c.Actor)
	return c, nil
}

// instancesAt lists the IDs of the instance objects of g at address (an
// instance or a resource address): an *InvalidError when it holds none.
func instancesAt(g *graph.State, address string) ([]string, error) {
	canon := address
	if p, err := graph.ParseAddress(address); err == nil {
		canon = p.String()
	} else {
		return nil, &kilolock.InvalidError{Code: "invalid_address", Message: fmt.Sprintf("address %q: %v", address, err), Hint: "addresses look like aws_instance.web or aws_instance.web[0]"}
	}
	var ids []string
	for i := range g.Instances {
		if kilolock.MatchesAddress(&g.Instances[i], canon) {
			ids = append(ids, g.Instances[i].ID())
		}
	}
	if len(ids) == 0 {
		return nil, &kilolock.InvalidError{Code: "unknown_address", Message: fmt.Sprintf("the state holds nothing at %s", canon), Hint: "kl state list NAME shows its addresses"}
	}
	return ids, nil
}

// driftRecord compares the recorded object in with the real one d
// reports, masking what is sensitive in either.
func driftRecord(in *graph.Instance, d DriftedInstance) (*DriftRecord, error) {
	rec := &DriftRecord{InstanceID: in.ID(), Address: in.Address(), Type: in.Resource.Type, Kind: DriftChanged, Changes: []DriftChange{}}
	if len(d.Real) == 0 || string(d.Real) == "null" {
		rec.Kind = DriftDeleted
		return rec, nil
	}
	changes, err := graph.RealChanges(in.Object, d.Real, d.RealSensitive)
	if err != nil {
		return nil, &kilolock.InvalidError{Code: "invalid_drift_report", Message: fmt.Sprintf("the real object of %s: %v", in.Address(), err), Hint: "send the attributes the plan's resource_drift gives as after"}
	}
	for _, c := range changes {
		rec.Changes = append(rec.Changes, DriftChange{Path: c.Path, Kind: c.Kind, Recorded: c.Before, Real: c.After})
	}
	return rec, nil
}

// Drift lists a state's open drift records by address. ErrNotFound when
// the state does not exist.
func Drift(ctx context.Context, e *kilolock.Engine, name string) ([]DriftRecord, error) {
	if err := kilolock.ValidStateName(name); err != nil {
		return nil, err
	}
	ds, err := drifts(e)
	if err != nil {
		return nil, err
	}
	return ds.Drift(ctx, name)
}

// DriftCounts returns the open drift records of each state named (every
// state when names is nil) that was ever checked; a store without drift
// checks gives an empty map.
func DriftCounts(ctx context.Context, e *kilolock.Engine, names []string) (map[string]int, error) {
	ds, ok := e.Store().(DriftStore)
	if !ok {
		return map[string]int{}, nil
	}
	return ds.DriftCounts(ctx, names)
}

// AcceptRefresh writes the refreshed state of a refresh-only plan (the
// state document a saved plan holds, which `tofu apply PLAN` would write)
// as a new version whose source is SourceRefresh, with the current serial
// + 1. It is refused (a *ConflictError, ReasonStaleSerial) unless the
// state is still at the lineage and serial the plan read, and while a
// writer holds the state; only the instance objects the refresh changed
// cost rows. The drift records of the instances it changes close with it.
// A refresh that changed nothing writes nothing: the version is nil.
func AcceptRefresh(ctx context.Context, e *kilolock.Engine, name string, refreshed []byte, actor string) (*kilolock.Version, error) {
	if err := kilolock.ValidStateName(name); err != nil {
		return nil, err
	}
	g, err := graph.Parse(refreshed)
	if err != nil {
		return nil, kilolock.ParseError(err)
	}
	v, _, err := e.Edit(ctx, name, kilolock.Edit{Operation: "accept refresh", Source: SourceRefresh, Actor: actor,
		Plan: func(_ kilolock.Version, cur, next *graph.State) bool {
			cs := history.Changes(cur, next)
			return !cs.Empty()
		},
		Apply: func(st *kilolock.State, cur *graph.State) (*graph.State, error) {
			if g.Lineage != st.Lineage || g.Serial != st.Serial {
				return nil, &kilolock.ConflictError{Reason: kilolock.ReasonStaleSerial, LatestSerial: st.Serial,
					Message: fmt.Sprintf("the refresh read serial %d of lineage %s; the state is at serial %d of lineage %s", g.Serial, g.Lineage, st.Serial, st.Lineage),
					Hint:    "the state moved since the check: run kl drift check --accept again"}
			}
			next := *g
			return &next, nil
		}})
	if err != nil {
		return nil, err
	}
	return v, nil
}

package inventory

import (
	"context"

	"github.com/kilolock/kilolock/tenancy"
)

// Store is the capability of a kilolock.Store that reads the current
// instance objects of many states at once. store/sqlstore implements it.
type Store interface {
	// ScanCurrent calls each with the current instance objects that pass
	// f, of the states of f.Scope, in order of (Row.StateID,
	// Row.InstanceID) after f.After, one at a time, and stops when each
	// returns false. A Row and its Object are only valid during the call.
	// It reads the clear copy of an object (sensitive values masked when
	// the store seals them, in the clear otherwise: callers mask). No
	// state in scope, or none that matches, is no call and no error.
	ScanCurrent(ctx context.Context, f ScanFilter, each func(*Row) bool) error
	// ScanDuplicates calls each, as ScanCurrent does, with the current
	// managed objects, not deposed, of type typ ("" for every type) of the
	// states of scope (nil: every state) whose IdentityKey another state of
	// scope records too, the objects of one key together, in order of
	// (Row.StateID, Row.InstanceID) within it. It reads the IdentityKey
	// each commit recorded, through an index, so that it reads the objects
	// of the duplicates only, not every object.
	ScanDuplicates(ctx context.Context, scope *tenancy.QueryScope, typ string, each func(*Row) bool) error
}

// ScanFilter is what a store narrows a scan by, with its indexes. Each
// field set must hold; the empty filter passes every managed object.
type ScanFilter struct {
	// Scope, when not nil, holds the state-name prefixes of the states to
	// read (a tenant's environments); nil reads every state.
	Scope *tenancy.QueryScope
	// StateLike, when not empty, are LIKE patterns (escape '\'): a
	// state is read when its name is LIKE one of them.
	StateLike []string
	// Type is a resource type, matched exactly.
	Type string
	// Name is a resource name, matched exactly.
	Name string
	// Module is a module address (`module.a`): objects in it or below.
	Module string
	// Data reads data sources too.
	Data bool
	// Text, when not "", is lowercase text of at least MinIndexedText
	// characters that the object's SearchText holds, found through the
	// store's text index (a prefilter: the caller checks the masked
	// object).
	Text string
	// After is where the previous page stopped.
	After Cursor
}

// Cursor is a position in scan order: after the object InstanceID of the
// state StateID. The zero Cursor is the start.
type Cursor struct {
	StateID    int64  `json:"s"`
	InstanceID string `json:"i"`
}

// Row is one current instance object of a state.
type Row struct {
	StateID    int64
	State      string // the state's internal name
	Version    int64  // the state's current version number
	InstanceID string // address plus deposed key (graph.Instance.ID)
	Address    string
	Module     string
	Mode       string
	Type       string
	Name       string
	Deposed    string
	Object     []byte // the instance object's clear JSON
}

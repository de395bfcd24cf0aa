package store

import (
	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/store/sqlstore"
)

// SchemaChange is what Open did to a database's schema: the version it
// had, the one it has, the migrations applied.
type SchemaChange = sqlstore.SchemaChange

// SchemaTooNewError is Open's refusal of a database a newer KiloLock
// migrated: it names both schema versions, and its Hint what to do.
type SchemaTooNewError = sqlstore.SchemaTooNewError

// Schema returns what Open did to st's schema; ok is false for a store
// this package did not open.
func Schema(st kilolock.Store) (change SchemaChange, ok bool) {
	s, ok := st.(interface{ Schema() sqlstore.SchemaChange })
	if !ok {
		return SchemaChange{}, false
	}
	return s.Schema(), true
}

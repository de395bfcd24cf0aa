package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/store/sqlstore"
)

//go:embed migrations/*.sql
var migrations embed.FS

// MigrateLock is the key of the advisory lock that serializes migrations
// ("kilolock" in ASCII): a process that waits to migrate shows in
// pg_locks as locktype advisory, classid 1802071151 and objid 1819239275
// (its high and low 32 bits).
const MigrateLock int64 = 0x6b696c6f6c6f636b

// roleSetUp is what migrate found of the query role: its login, or why
// there is none.
type roleSetUp struct {
	login   *queryRole
	refusal error
	// tenant and tenantRefusal are the tenant role's; schema is the
	// store's.
	tenant        *queryRole
	tenantRefusal error
	schema        string
}

// migrate applies the migrations the database lacks, all in one
// transaction under a transaction-scoped advisory lock, so that replicas
// (or kld migrate) starting together apply each migration exactly once:
// the first to take the lock applies them, the others wait for it and find
// nothing to do. With withRole it sets up the query role in the same
// transaction. A database a newer release migrated is refused
// (*sqlstore.SchemaTooNewError): this release's code would not know what
// its schema means. Replicas already serving are not asked again, so a
// rolling upgrade's old replicas serve on until they are replaced
// (migrations only ever add).
func (s *Store) migrate(ctx context.Context, withRole bool) (roleSetUp, error) {
	var role roleSetUp
	ms, err := sqlstore.Migrations(migrations)
	if err != nil {
		return role, err
	}
	s.schema, err = sqlstore.Migrate(ctx, s.d, sqlstore.Migrator{
		Lock: fmt.Sprintf("SELECT pg_advisory_xact_lock(%d)", MigrateLock),
		Table: `CREATE TABLE IF NOT EXISTS kl_schema_version (
			version    INT PRIMARY KEY,
			name       TEXT NOT NULL,
			applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
		)`,
		After: func(ctx context.Context, tx sqlstore.Tx) error {
			if !withRole {
				return nil
			}
			role.login, role.refusal = setUpQueryRole(ctx, tx)
			var refused *kilolock.RefusedError
			if role.refusal != nil && !errors.As(role.refusal, &refused) {
				return role.refusal
			}
			role.tenant, role.tenantRefusal = setUpTenantRole(ctx, tx)
			if role.tenantRefusal != nil && !errors.As(role.tenantRefusal, &refused) {
				return role.tenantRefusal
			}
			return tx.QueryRow(ctx, `SELECT current_schema()`).Scan(&role.schema)
		},
	}, ms)
	return role, err
}

// Schema is what Open did to the database's schema.
func (s *Store) Schema() sqlstore.SchemaChange { return s.schema }

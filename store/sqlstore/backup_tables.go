package sqlstore

import "strings"

// BackupTables is every table a backup carries, in the order Restore
// loads them (a table after the tables its foreign keys name), with the
// columns of each in a store-neutral type. It is the one list of what a
// backup holds: a migration that adds a table or a column adds it here
// too, as one entry — Backup refuses a database with a table or column the
// list does not name (see checkCoverage), so none is ever left behind
// silently. Tables that are no data of users are in notBackedUp instead.
var BackupTables = []BackupTable{
	table("states", "id", "id int", "name text", "created_at time", "lineage text", "current_version int",
		"current_version_id int", "serial int", "lock_mode text", "allow_lineage_change bool", "shared_plan_locks bool",
		"require_client_encryption bool", "client_encryption text"),
	table("state_versions", "id", "id int", "state_id int", "number int", "serial int", "lineage text",
		"terraform_version text", "source text", "actor text", "lock_id text", "base_serial int", "created_at time",
		"added int", "changed int", "removed int", "instance_count int", "format text", "check_results text",
		"managed_count int", "merged bool"),
	table("state_moves", "id", "id int", "from_state_id int", "from_version int", "to_state_id int", "to_version int",
		"instances int", "actor text", "created_at time"),
	table("state_keys", "state_id", "state_id int", "key_id text", "wrapped bytes", "created_at time", "wrapped_at time"),
	table("version_raw", "version_id", "version_id int", "raw bytes", "sealed bool"),
	table("payloads", "state_id, hash", "state_id int", "hash bytes", "body text", "sealed bytes"),
	table("instance_intervals", "state_id, instance_id, valid_from", "state_id int", "instance_id text", "address text",
		"module text", "mode text", "type text", "name text", "index_key text", "deposed text", "each text",
		"provider text", "status text", "hash bytes", "valid_from int", "valid_to int", "ident_key text", "ident_hash bytes",
		"spelling bytes", "canonical_hash bytes", "search_text text"),
	table("output_intervals", "state_id, name, valid_from", "state_id int", "name text", "hash bytes", "sensitive bool",
		"valid_from int", "valid_to int"),
	table("rejected_commits", "id", "id int", "state_id int", "created_at time", "lock_id text", "actor text",
		"reason text", "addresses text", "latest_serial int", "base_serial int", "winner_actor text",
		"winner_lock_id text", "winner_version int", "hint text"),
	table("workspaces", "id", "id text", "name text", "kind text", "lifecycle text", "created_at time"),
	table("environments", "public_id", "public_id text", "slug text", "workspace_id text", "created_at time",
		"require_client_encryption bool"),
	table("workspace_members", "workspace_id, user_id", "workspace_id text", "user_id text", "role text"),
	table("tokens", "id", "id text", "kind text", "name text", "secret_hash text", "environment_id text",
		"scope text", "user_id text", "created_at time", "last_used_at time", "expires_at time"),
	table("token_grants", "token_id, environment_id", "token_id text", "environment_id text", "created_at time"),
	table("state_holds", "name", "name text", "lifecycle text"),
	table("trust_policies", "id", "id text", "environment_id text", "issuer text", "audience text", "claims text",
		"claim_globs text", "scope text", "state_pattern text", "max_ttl_ms int", "created_at time"),
	table("audit_log", "id", "id int", "at time", "actor text", "action text", "target text", "remote text",
		"denied bool", "reason text", "request_id text"),
	table("apply_runs", "id", "id text", "state_id int", "actor text", "info text", "status text",
		"source_serial int", "lease_ms int", "created_at time", "acquired_at time", "renewed_at time",
		"expires_at time", "ended_at time", "ended_by text", "reason text"),
	table("run_reservations", "run_id, pattern", "run_id text", "state_id int", "pattern text", "mode text", "held bool"),
	table("quotas", "scope, target", "scope text", "target text", "soft int", "hard int", "unlimited bool",
		"updated_at time"),
	table("quota_events", "id", "id int", "state_id int", "created_at time", "level text", "scope text",
		"target text", "limit_from text", "current_count int", "result_count int", "soft int", "hard int",
		"version int", "lock_id text", "actor text"),
	table("retention_policies", "scope, target", "scope text", "target text", "keep_last int", "keep_days int",
		"updated_at time", "updated_by text"),
	table("version_pins", "state_id, number, reason", "state_id int", "number int", "reason text", "actor text",
		"created_at time", "expires_at time"),
	table("pruned_versions", "state_id, number", "state_id int", "number int", "version_id int", "serial int",
		"source text", "actor text", "created_at time", "pruned_at time", "pruned_by text", "policy text"),
	table("state_tags", "state_id, name", "state_id int", "name text", "version int", "description text",
		"actor text", "created_at time"),
	table("drift_checks", "id", "id int", "state_id int", "version int", "checked_at time", "actor text",
		"scope text", "drifted int"),
	table("drift_records", "id", "id int", "check_id int", "state_id int", "instance_id text", "address text",
		"type text", "kind text", "changes text", "version int", "closed_by int"),
}

// notBackedUp are the tables a backup leaves out, and why. locks is
// counted in the backup's header (BackupSummary.Excluded); the others are
// the database's own bookkeeping, which the restoring store keeps anew.
var notBackedUp = map[string]string{
	"locks":             "held locks belong to the processes holding them, which do not follow the data: a restored store starts unlocked",
	"kl_schema_version": "each store records its own migrations",
	"kl_settings":       "the PostgreSQL query role's login, made anew by each database",
	"sqlite_sequence":   "SQLite's own counters, set again by the restored ids",
	"kl_query_scopes":   "the scope of one tenant's query in flight, written and removed by kld around that query",
	// The SQLite store's text index: an FTS5 table, what FTS5 keeps of it,
	// the intervals its rows stand for and the ids that left it, all kept
	// from instance_intervals.search_text as a restore writes it.
	"instance_text":         textIndex,
	"instance_text_data":    textIndex,
	"instance_text_idx":     textIndex,
	"instance_text_docsize": textIndex,
	"instance_text_config":  textIndex,
	"instance_text_rows":    textIndex,
	"instance_text_gone":    textIndex,
}

const textIndex = "the SQLite store's text index of the current objects, made anew from instance_intervals.search_text as the restore writes it"

// BackupTable is one table of BackupTables: its name, the columns it is
// read in order of (its primary key), and its columns.
type BackupTable struct {
	Name    string
	OrderBy string
	Columns []BackupColumn
}

// BackupColumn is a column and its store-neutral type: "int", "text",
// "bool", "time" (a timestamp: TEXT on SQLite, TIMESTAMPTZ on PostgreSQL)
// or "bytes". Every column may be NULL.
type BackupColumn struct {
	Name string
	Type string
}

// table builds a BackupTable from "name type" strings.
func table(name, orderBy string, columns ...string) BackupTable {
	t := BackupTable{Name: name, OrderBy: orderBy}
	for _, c := range columns {
		n, typ, _ := strings.Cut(c, " ")
		t.Columns = append(t.Columns, BackupColumn{Name: n, Type: typ})
	}
	return t
}

// names returns the table's column names.
func (t *BackupTable) names() []string {
	out := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		out[i] = c.Name
	}
	return out
}

// backupTable returns the entry of BackupTables named name, or nil.
func backupTable(name string) *BackupTable {
	for i := range BackupTables {
		if BackupTables[i].Name == name {
			return &BackupTables[i]
		}
	}
	return nil
}

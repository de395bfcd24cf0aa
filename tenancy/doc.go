// Package tenancy is KiloLock's multi-tenant control plane: workspaces,
// environments, members, tokens and personal access tokens, their grants,
// state holds (archive, restore), quotas set per workspace, environment or
// state, and a tenant's SQL scoped to its environments.
//
// A Store that keeps tenants implements TenantStore (the SQLite and
// PostgreSQL stores do); Control validates and audits every change on it:
//
//	c := tenancy.NewControl(st.(tenancy.TenantStore))
//	ws, err := c.CreateWorkspace(ctx, kilolock.Caller{Actor: "operator"}, "acme", tenancy.WorkspaceOrganization, "alice")
//
// Workload identity (OIDC trust policies) is tenancy/trust.
package tenancy

package klcli

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/alecthomas/kong"
	"github.com/kilolock/kilolock/client"
	"github.com/kilolock/kilolock/tenancy"
	"github.com/kilolock/kilolock/tenancy/trust"
)

// TrustCmds are kl trust add|list|remove: the trust policies of workload
// identity, through a server's control API (--server with the operator
// token) or on a database directly (--database), audited either way.
type TrustCmds struct {
	Add struct {
		JSONFlag
		Env       string   `required:"" placeholder:"ENV" help:"Environment ID (env_…) the tokens reach."`
		Issuer    string   `required:"" placeholder:"URL" help:"The issuer URL, HTTPS, exactly as the tokens' iss spells it: https://token.actions.githubusercontent.com (GitHub), https://gitlab.com (GitLab), the cluster's issuer (Kubernetes)."`
		Audience  string   `required:"" placeholder:"AUD" help:"The audience the job requests its token for, matched exactly."`
		Claim     []string `sep:"none" placeholder:"K=V" help:"A claim the token must carry with exactly this value, e.g. repository=org/app; repeat for several."`
		ClaimGlob []string `sep:"none" placeholder:"K=PATTERN" help:"A claim the token must carry matching the pattern (* any run of characters, ? one), e.g. ref=refs/heads/*; repeat for several."`
		Scope     string   `required:"" enum:"read,read-write,outputs" help:"What the tokens may do: read-write, read (reads and plans), or outputs (reads states' outputs only)."`
		State     string   `placeholder:"PATTERN" help:"Only the environment's states whose names match, e.g. 'app-*' (default: every state)."`
		MaxTTL    string   `name:"max-ttl" placeholder:"DURATION" help:"Longest lifetime (exp - iat) of a token accepted, 1m to 24h (default 1h)."`
	} `cmd:"" help:"Trust the OIDC ID tokens of CI jobs that match: they reach one environment with a scope, no secret stored in CI. Prints the policy's id (trs_…)." example:"kl trust add --env env_0123456789abcdef --issuer https://token.actions.githubusercontent.com --audience https://kl.example.com --claim repository=acme/infra --scope read-write"`
	List struct {
		JSONFlag
		Env string `placeholder:"ENV" help:"Only the policies of this environment (env_…)."`
	} `cmd:"" help:"List the trust policies." example:"kl trust list"`
	Remove struct {
		JSONFlag
		ID string `arg:"" help:"Trust policy ID (trs_…)."`
	} `cmd:"" help:"Remove a trust policy: the next request with a token only it accepted is refused (401)." example:"kl trust remove trs_0123456789abcdef"`
}

// Run runs the subcommand.
func (c *TrustCmds) Run(ctx context.Context, g *Globals, k *kong.Context) error {
	switch k.Selected().Name {
	case "add":
		a := &c.Add
		p := trust.Policy{EnvironmentID: a.Env, Issuer: a.Issuer, Audience: a.Audience, Scope: tenancy.Scope(a.Scope), StatePattern: a.State}
		var err error
		if p.Claims, err = trust.ParseClaims(a.Claim); err != nil {
			return err
		}
		if p.ClaimGlobs, err = trust.ParseClaims(a.ClaimGlob); err != nil {
			return err
		}
		if a.MaxTTL != "" {
			d, err := time.ParseDuration(a.MaxTTL)
			if err != nil {
				return &UsageError{Message: fmt.Sprintf("--max-ttl %q is not a duration", a.MaxTTL), Hint: "e.g. --max-ttl 15m or 1h"}
			}
			p.MaxTTL = trust.Duration(d)
		}
		return g.with(ctx, a.JSON, func(cli *CLI) error { return cli.AddTrustPolicy(ctx, p) })
	case "list":
		return listed(ctx, g, c.List.JSON, func(api *client.Client) ([]trust.Policy, error) { return api.TrustPolicies(ctx, c.List.Env) },
			[]string{"ID", "ENVIRONMENT", "ISSUER", "AUDIENCE", "CLAIMS", "SCOPE", "STATES", "MAX TTL", "CREATED"}, func(p trust.Policy) []string {
				return []string{p.ID, p.EnvironmentID, cell(p.Issuer), cell(p.Audience), cell(claimsText(&p)), string(p.Scope), cell(statesText(p.StatePattern)), p.MaxTTL.String(), formatTime(p.Created)}
			})
	case "remove":
		id := c.Remove.ID
		return said(ctx, g, c.Remove.JSON, func(api *client.Client) (*client.Removed, error) { return api.RemoveTrustPolicy(ctx, id) },
			func(*client.Removed) (any, string) {
				return map[string]string{"removed": id}, fmt.Sprintf("Removed trust policy %s.\n", cell(id))
			})
	}
	return unknownCommand(k)
}

// Help is kl trust --help's long text.
func (c *TrustCmds) Help() string {
	return `A CI job sends the ID token its platform mints (GitHub Actions, GitLab CI, a
Kubernetes service account) as the HTTP backend's password, with the workspace
id as username (TF_HTTP_USERNAME, TF_HTTP_PASSWORD). kld accepts it when a
trust policy of the path's environment names its issuer (HTTPS, exactly), its
audience, and claims it carries (--claim exactly, --claim-glob with * and ?),
and its lifetime is at most --max-ttl. The request acts as the policy's scope,
and is named by the policy, the token's sub and its repository, ref and run.

  kl trust add --env env_… --issuer https://token.actions.githubusercontent.com \
    --audience https://kl.example.com --claim repository=org/app \
    --claim-glob ref=refs/heads/* --scope read-write

docs/workload-identity.md has the snippets for GitHub Actions, GitLab CI and
Kubernetes.`
}

// AddTrustPolicy adds a policy and prints its id.
func (c *CLI) AddTrustPolicy(ctx context.Context, p trust.Policy) error {
	out, err := c.api().AddTrustPolicy(ctx, p)
	if err != nil {
		return err
	}
	return c.say(out, "%s\nTrust policy %s: tokens of %s for %s with %s reach %s (%s, %s, max TTL %s).\n",
		out.ID, out.ID, cell(out.Issuer), cell(out.Audience), claimsText(out), out.EnvironmentID, out.Scope, statesText(out.StatePattern), out.MaxTTL)
}

// claimsText spells a policy's claims: exact ones as K=V, globs as K~P.
func claimsText(p *trust.Policy) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(p.Claims)) {
		parts = append(parts, k+"="+p.Claims[k])
	}
	for _, k := range slices.Sorted(maps.Keys(p.ClaimGlobs)) {
		parts = append(parts, k+"~"+p.ClaimGlobs[k])
	}
	return strings.Join(parts, " ")
}

func statesText(pattern string) string {
	if pattern == "" {
		return "every state"
	}
	return "states " + pattern
}

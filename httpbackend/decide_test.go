package httpbackend

import (
	"errors"
	"flag"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kilolock/kilolock/tenancy"
)

var decideSeed = flag.Uint64("decide.seed", 0, "seed of TestDecideProperties (0: a new one)")

// TestDecideProperties draws random Access reads and requests and checks
// the lane's decision against what the checklist promises: nothing passes
// without a live, unexpired token, a workspace it belongs to, its environment by
// public id and (for a PAT) membership and grant; no write passes a hold;
// every refusal has the status its code implies, a message and a hint, and
// names a public id only to a caller who may use that environment (or to a
// member, the one it named).
func TestDecideProperties(t *testing.T) {
	seed := *decideSeed
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("seed %d (-decide.seed to replay)", seed)
	rng := rand.New(rand.NewPCG(seed, seed>>1))
	pick := func(n int) int { return rng.IntN(n) }

	const ws, otherWS = "ws_aaaaaaaaaaaaaaaa", "ws_bbbbbbbbbbbbbbbb"
	envs := []*tenancy.Environment{
		{PublicID: "env_1111111111111111", Slug: "prod", WorkspaceID: ws},
		{PublicID: "env_2222222222222222", Slug: "dev", WorkspaceID: ws},
		{PublicID: "env_3333333333333333", Slug: "prod", WorkspaceID: otherWS},
	}
	statusOf := map[string]int{
		"credentials_invalid": 401, "credentials_expired": 401, "scope_mismatch": 403, "token_read_only": 403, "token_outputs_only": 403, "grant_missing": 403,
		"membership_missing": 403, "workspace_suspended": 403, "state_archived": 403,
		"workspace_not_found": 404, "environment_not_found": 404,
	}
	passed := 0
	for range 200000 {
		a := &tenancy.Access{State: tenancy.LifecycleActive}
		switch pick(5) {
		case 0: // unknown or revoked
		case 1:
			a.Token = &tenancy.Token{ID: "tok_op", Kind: tenancy.TokenOperator}
		case 2, 3:
			a.Token = &tenancy.Token{ID: "tok_auto", Kind: tenancy.TokenAutomation, Scope: []tenancy.Scope{tenancy.ScopeRead, tenancy.ScopeReadWrite, tenancy.ScopeOutputs}[pick(3)]}
			if pick(8) > 0 {
				a.Home = envs[pick(len(envs))]
				a.Token.EnvironmentID = a.Home.PublicID
			}
		default:
			a.Token = &tenancy.Token{ID: "tok_pat", Kind: tenancy.TokenPersonal, UserID: "alice"}
		}
		pathWS := []string{ws, otherWS, "ws_cccccccccccccccc"}[pick(3)]
		if pathWS != "ws_cccccccccccccccc" {
			a.Workspace = &tenancy.Workspace{ID: pathWS, Lifecycle: []tenancy.Lifecycle{tenancy.LifecycleActive, tenancy.LifecycleSuspended}[pick(2)]}
		}
		// The path's environment segment: a public id or a slug, of this
		// workspace's environments or not; Access resolves it as a store would.
		seg := []string{"env_1111111111111111", "env_2222222222222222", "env_3333333333333333", "prod", "dev", "env_9999999999999999"}[pick(6)]
		if a.Workspace != nil {
			for _, e := range envs {
				if e.WorkspaceID == pathWS && e.PublicID == seg {
					a.Environment = e
				}
			}
			if a.Environment == nil {
				for _, e := range envs {
					if e.WorkspaceID == pathWS && e.Slug == seg {
						a.Environment = e
					}
				}
			}
		}
		if a.Token != nil && a.Token.Kind == tenancy.TokenPersonal && a.Workspace != nil {
			a.Member = pick(3) > 0
			a.Granted = a.Environment != nil && pick(3) > 0
		}
		if pick(4) == 0 {
			a.State = tenancy.LifecycleArchived
		}
		now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
		if a.Token != nil && pick(4) == 0 {
			a.Token.Expires = now.Add(time.Duration(pick(3)-1) * time.Hour) // past, now, or future
		}
		user := []string{"", pathWS, otherWS}[pick(3)]
		kind := access(pick(5))

		err := decide(a, user, pathWS, seg, kind, now)
		if err == nil {
			passed++
			tok := a.Token
			ok := tok != nil && !tok.Expired(now) && (user == "" || user == pathWS)
			switch {
			case !ok:
			case tok.Kind == tenancy.TokenAutomation:
				reads := kind == accessRead || kind == accessOutputs
				ok = a.Home != nil && a.Home.WorkspaceID == pathWS && a.Home.PublicID == seg &&
					(tok.Scope == tenancy.ScopeReadWrite || tok.Scope == tenancy.ScopeRead && (reads || kind == accessPlanLock || kind == accessUnlock) || tok.Scope == tenancy.ScopeOutputs && kind == accessOutputs)
			case tok.Kind == tenancy.TokenPersonal:
				ok = a.Workspace != nil && a.Member && a.Granted && a.Environment != nil && a.Environment.PublicID == seg
			default:
				ok = false
			}
			if ok && kind == accessWrite {
				ok = a.Workspace.Lifecycle == tenancy.LifecycleActive && a.State == tenancy.LifecycleActive
			}
			if !ok {
				t.Fatalf("allowed: access %+v token %+v user %q path %s/%s kind %d", a, a.Token, user, pathWS, seg, kind)
			}
			continue
		}
		var he *httpError
		if !errors.As(err, &he) {
			t.Fatalf("decide returned %T %v, want an httpError", err, err)
		}
		if want, known := statusOf[he.code]; !known || he.status != want || he.message == "" || he.hint == "" {
			t.Fatalf("refusal %+v: want a known code with its status, a message and a hint", he)
		}
		if he.status >= http.StatusInternalServerError {
			t.Fatalf("refusal %+v is a server error", he)
		}
		// A public id appears only when the caller may use it.
		for _, e := range envs {
			if !strings.Contains(he.message+he.hint, e.PublicID) {
				continue
			}
			mayUse := (a.Home != nil && a.Home.PublicID == e.PublicID) ||
				(a.Token != nil && a.Token.Kind == tenancy.TokenPersonal && a.Granted && a.Environment == e)
			// A member may be told about the environment of its workspace
			// it named itself (grant_missing names what to ask for).
			echoed := e.PublicID == seg && a.Member && a.Environment == e
			if !mayUse && !echoed {
				t.Fatalf("refusal %+v names %s to a caller without access (access %+v)", he, e.PublicID, a)
			}
		}
	}
	if passed == 0 {
		t.Fatal("no request passed: the generator is broken")
	}
	t.Logf("%d of 200000 passed", passed)
}

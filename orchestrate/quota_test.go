package orchestrate

import (
	"errors"
	"strings"
	"testing"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/client"
	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/graph/graphtest"
	"github.com/kilolock/kilolock/quota"
)

// TestAdmissionQuiet: a quiet admission (an apply's under
// KL_LOG_LEVEL=warn) says nothing of a plan that fits every limit, and
// still shows one past one; a plan past a hard limit is a
// *kilolock.QuotaError, and Check fails with it.
func TestAdmissionQuiet(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *kilolock.Engine, clients map[string]*client.Client) {
		ctx := t.Context()
		st, err := graphtest.Decode(graphtest.Generate(2, 200, graph.FormatCompact))
		if err != nil {
			t.Fatal(err)
		}
		st.Serial = 1
		if _, err := e.Write(ctx, "demo", graphtest.Encode(st, graph.FormatCompact), kilolock.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		for name, c := range clients {
			t.Run(name, func(t *testing.T) {
				admit := func(quiet bool) (string, error) {
					var out strings.Builder
					a := &Admission{Client: c, State: "demo", Out: &out, Prefix: "kl: ", Quiet: quiet}
					err := a.Check(ctx, quota.PlanChanges{Create: 5})
					return out.String(), err
				}
				if got, err := admit(false); err != nil || !strings.Contains(got, "kl: quota: the plan creates 5") {
					t.Errorf("admission at info: %q, %v", got, err)
				}
				if got, err := admit(true); err != nil || got != "" {
					t.Errorf("quiet admission of a plan within its limits: %q, %v", got, err)
				}
			})
		}
		qs := e.Store().(kilolock.QuotaStore)
		if err := qs.SetQuota(ctx, kilolock.QuotaTarget{Scope: quota.ScopeState, Target: "demo"}, &quota.Limit{Hard: 6}); err != nil {
			t.Fatal(err)
		}
		for name, c := range clients {
			t.Run(name+"/past a hard limit", func(t *testing.T) {
				var out strings.Builder
				err := (&Admission{Client: c, State: "demo", Out: &out, Prefix: "kl: ", Quiet: true}).Check(ctx, quota.PlanChanges{Create: 5})
				if got := out.String(); !strings.Contains(got, "FAIL state demo: 7 managed instance(s) would exceed the hard limit of 6") {
					t.Errorf("quiet admission past a hard limit: %q", got)
				}
				var qe *kilolock.QuotaError
				if !errors.As(err, &qe) || !qe.Admission {
					t.Errorf("Check past a hard limit = %v, want the admission's *kilolock.QuotaError", err)
				}
			})
		}
	})
}

// TestNoAdmission: a nil Admission (no backend to ask) admits anything.
func TestNoAdmission(t *testing.T) {
	var a *Admission
	if err := a.Check(t.Context(), quota.PlanChanges{Create: 1 << 20}); err != nil {
		t.Fatalf("nil Admission.Check = %v", err)
	}
}

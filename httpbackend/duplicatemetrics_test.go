package httpbackend

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kilolock/kilolock/tenancy"
)

// TestDuplicateMetrics: kl_duplicate_objects counts, by state, the
// objects another state records too; a scrape without credentials reads
// the sum and no tenant's name, the operator's by state. Both stores.
func TestDuplicateMetrics(t *testing.T) { eachAuthEnv(t, testDuplicateMetrics) }

func testDuplicateMetrics(t *testing.T, env *testEnv, ts tenancy.TenantStore) {
	tenants, marker := seedCrossTenant(t, env, ts)
	// Tenant 1 applies tenant 0's object into a state of its own.
	f := tenants[1]
	doc := stateDoc(t, "lin-copy", 1, map[string]string{"web": marker(0, 0)})
	if w := env.do("POST", f.path(0, "copy"), doc, append(bearer(f.auto[0]), "Content-MD5", md5Of(doc))...); w.Code != 200 {
		t.Fatalf("seed the copy: %d %s", w.Code, w.Body)
	}
	var names []string
	for _, s := range []struct {
		f     *tenantFixture
		env   int
		state string
	}{{tenants[0], 0, "main"}, {tenants[1], 0, "copy"}} {
		name, err := tenancy.TenantStateName(s.f.ws.ID, s.f.envs[s.env].PublicID, s.state)
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}

	anonymous := env.do("GET", "/metrics", nil).Body.String()
	if !strings.Contains(anonymous, "kl_duplicate_objects 2\n") {
		t.Errorf("anonymous /metrics:\n%s", grepLines(anonymous, "kl_duplicate"))
	}
	for _, f := range tenants {
		for _, e := range f.envs {
			if strings.Contains(anonymous, f.ws.ID) || strings.Contains(anonymous, e.PublicID) {
				t.Fatalf("anonymous /metrics names a tenant's workspace or environment:\n%s", grepLines(anonymous, f.ws.ID))
			}
		}
	}
	operator := env.do("GET", "/metrics", nil, bearer(operatorSecret)...).Body.String()
	for _, name := range names {
		if want := fmt.Sprintf("kl_duplicate_objects{state=%q} 1\n", name); !strings.Contains(operator, want) {
			t.Errorf("the operator's /metrics lacks %s:\n%s", want, grepLines(operator, "kl_duplicate"))
		}
	}
	if n := strings.Count(operator, "kl_duplicate_objects{"); n != 2 {
		t.Errorf("the operator's /metrics has %d series of kl_duplicate_objects, want 2", n)
	}
}

package trust

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Identity is who a verified ID token speaks for: the policy that accepted
// it, and the token's subject and the claims that name a CI job.
type Identity struct {
	Policy  *Policy // the policy that accepted the token: environment, scope, states
	Issuer  string
	Subject string // sub: "repo:org/app:ref:refs/heads/main", "system:serviceaccount:ci:deployer"
	// Repository is GitHub's repository or GitLab's project_path.
	Repository string
	Ref        string // ref, as both spell it
	// RunID is GitHub's run_id or GitLab's pipeline_id.
	RunID   string
	Expires time.Time
}

// identityClaims are the claims an Identity keeps, by field, in the order
// they are looked for: GitHub's name first, then GitLab's.
var identityClaims = []struct {
	names []string
	field func(*Identity) *string
}{
	{[]string{"repository", "project_path"}, func(i *Identity) *string { return &i.Repository }},
	{[]string{"ref"}, func(i *Identity) *string { return &i.Ref }},
	{[]string{"run_id", "pipeline_id"}, func(i *Identity) *string { return &i.RunID }},
}

// String names the identity in the audit log, kld's log, a lock's holder
// and history's actor: "trs_… sub:… repository:… ref:… run:…", each value
// clipped and free of spaces and control characters, so that one token
// cannot forge a second field.
func (i *Identity) String() string {
	var b strings.Builder
	b.WriteString(i.Policy.ID)
	for _, f := range []struct{ name, value string }{{"sub", i.Subject}, {"repository", i.Repository}, {"ref", i.Ref}, {"run", i.RunID}} {
		if f.value != "" {
			fmt.Fprintf(&b, " %s:%s", f.name, field(f.value))
		}
	}
	return b.String()
}

// field makes a claim value safe for one space-separated field.
func field(s string) string {
	if c, clipped := clip(s, 128); clipped {
		s = c + "…"
	}
	return strings.Map(func(r rune) rune {
		if r <= ' ' || r == 0x7f || r == utf8.RuneError {
			return '_'
		}
		return r
	}, s)
}

// short quotes a value taken from a token for a message, clipped: the
// token is not trusted when the message is written.
func short(s string) string {
	if c, clipped := clip(s, 80); clipped {
		return fmt.Sprintf("%q…", c)
	}
	return fmt.Sprintf("%q", s)
}

// clip cuts s to at most most bytes, at a character's start.
func clip(s string, most int) (string, bool) {
	if len(s) <= most {
		return s, false
	}
	cut := most
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut], true
}

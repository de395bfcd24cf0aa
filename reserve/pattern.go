package reserve

import (
	"fmt"
	"strings"

	"github.com/kilolock/kilolock/graph"
)

// Pattern names a set of addresses of one state:
//
//   - everything: every instance and output
//     output.NAME                one root module output
//     module.a.*  (or module.a)  everything in every instance of module call a
//     module.a["x"].*            everything in one instance of it
//     aws_instance.web           every instance of a resource (deposed objects too)
//     aws_instance.web[0]        one instance (and its deposed objects)
//
// A module step written without a key covers every instance of that call,
// as Terraform's -target does: `module.a.aws_instance.web` covers
// `module.a["x"].aws_instance.web[0]`. The zero Pattern is invalid; make
// one with Parse.
type Pattern struct {
	all     bool
	output  string
	modules []graph.ModuleStep
	open    bool   // everything under modules
	res     string // "aws_instance.web" or "data.t.n"
	key     graph.IndexKey
	hasKey  bool
	text    string // canonical spelling
}

// Parse parses a pattern (see Pattern). Addresses are spelled as the CLIs
// print them; the canonical spelling is Pattern.String.
func Parse(s string) (Pattern, error) {
	var p Pattern
	switch {
	case s == "*":
		p.all = true
	case strings.HasPrefix(s, "output."):
		name := s[len("output."):]
		if !validOutputName(name) {
			return p, fmt.Errorf("%q: an output name is letters, digits, '_' and '-', starting with a letter or '_'", s)
		}
		p.output = name
	case strings.HasSuffix(s, ".*") || (strings.HasPrefix(s, "module.") && isModulePath(s)):
		steps, err := graph.ParseModulePath(strings.TrimSuffix(s, ".*"))
		if err != nil || len(steps) == 0 {
			return p, fmt.Errorf("%q: only a module path may end in .*, as in module.network.*", s)
		}
		p.modules, p.open = steps, true
	default:
		a, err := graph.ParseAddress(s)
		if err != nil {
			return p, fmt.Errorf("%q is not an address or pattern: %v", s, err)
		}
		if a.Resource.Module != "" {
			if p.modules, err = graph.ParseModulePath(a.Resource.Module); err != nil {
				return p, fmt.Errorf("%q: %v", s, err)
			}
		}
		r := a.Resource
		r.Module = ""
		p.res = r.Address()
		p.key, p.hasKey = a.Key, a.HasKey
	}
	keyed := 0
	for _, m := range p.modules {
		if m.HasKey {
			keyed++
		}
	}
	if keyed > MaxKeyedModules {
		return Pattern{}, fmt.Errorf("%q: at most %d module calls with an index key are supported in one address", s, MaxKeyedModules)
	}
	p.text = p.format()
	return p, nil
}

// MustParse is Parse for patterns known to be valid; it panics otherwise.
func MustParse(s string) Pattern {
	p, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return p
}

// isModulePath reports whether s parses as a module path alone.
func isModulePath(s string) bool {
	_, err := graph.ParseModulePath(s)
	return err == nil
}

func validOutputName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		switch {
		case c == '_', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case i > 0 && (c == '-' || c >= '0' && c <= '9'):
		default:
			return false
		}
	}
	return true
}

func (p Pattern) format() string {
	switch {
	case p.all:
		return "*"
	case p.output != "":
		return "output." + p.output
	}
	var b strings.Builder
	for i, m := range p.modules {
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(m.String())
	}
	if p.open {
		b.WriteString(".*")
		return b.String()
	}
	if b.Len() > 0 {
		b.WriteByte('.')
	}
	b.WriteString(p.res)
	if p.hasKey {
		b.WriteString(p.key.String())
	}
	return b.String()
}

// String returns the pattern's canonical spelling.
func (p Pattern) String() string { return p.text }

// IsZero reports whether p is the zero Pattern (never parsed).
func (p Pattern) IsZero() bool { return p.text == "" }

// MarshalText encodes the canonical spelling.
func (p Pattern) MarshalText() ([]byte, error) { return []byte(p.text), nil }

// UnmarshalText parses a pattern.
func (p *Pattern) UnmarshalText(b []byte) error {
	q, err := Parse(string(b))
	if err != nil {
		return err
	}
	*p = q
	return nil
}

// keysMeet reports whether two steps' keys can name one instance: a step
// without a key stands for every key.
func keysMeet(aHas bool, a graph.IndexKey, bHas bool, b graph.IndexKey) bool {
	return !aHas || !bHas || a == b
}

// Intersects reports whether some address is named by both p and q.
func (p Pattern) Intersects(q Pattern) bool {
	if p.all || q.all {
		return true
	}
	if p.output != "" || q.output != "" {
		return p.output == q.output
	}
	n := min(len(p.modules), len(q.modules))
	for i := range n {
		a, b := p.modules[i], q.modules[i]
		if a.Name != b.Name || !keysMeet(a.HasKey, a.Key, b.HasKey, b.Key) {
			return false
		}
	}
	switch {
	case len(p.modules) < len(q.modules):
		return p.open
	case len(q.modules) < len(p.modules):
		return q.open
	case p.open || q.open:
		return true
	}
	return p.res == q.res && keysMeet(p.hasKey, p.key, q.hasKey, q.key)
}

// Covers reports whether every address q names is named by p too.
func (p Pattern) Covers(q Pattern) bool {
	if p.all {
		return true
	}
	if q.all {
		return false
	}
	if p.output != "" || q.output != "" {
		return p.output == q.output
	}
	if len(p.modules) > len(q.modules) {
		return false
	}
	for i, a := range p.modules {
		b := q.modules[i]
		if a.Name != b.Name || (a.HasKey && (!b.HasKey || a.Key != b.Key)) {
			return false
		}
	}
	switch {
	case len(p.modules) < len(q.modules):
		return p.open
	case p.open:
		return true
	case q.open:
		return false
	}
	return p.res == q.res && (!p.hasKey || (q.hasKey && p.key == q.key))
}

// deposedMarker separates an instance object's address from its deposed
// key in graph.Instance.ID.
const deposedMarker = " (deposed object "

// ParseKey parses what a state change names — an instance object's
// graph.Instance.ID (an address, plus " (deposed object KEY)" for a
// deposed object) or "output.NAME" — as the Pattern of exactly that
// address.
func ParseKey(id string) (Pattern, error) {
	if i := strings.LastIndex(id, deposedMarker); i > 0 && strings.HasSuffix(id, ")") {
		id = id[:i]
	}
	return Parse(id)
}

// MaxKeyedModules is the most module steps with an index key a pattern
// may have: CoveringSpellings lists 2^n spellings for n of them.
const MaxKeyedModules = 8

// CoveringSpellings returns the canonical spellings of every pattern that
// covers what p names: "*", the module patterns of each prefix of its
// module path (each step with its key or without), and, for a resource or
// an instance, its resource with and without the instance key. A store
// finds the reservations covering a changed address with one indexed
// lookup of these spellings, at a cost independent of how many
// reservations are held.
func CoveringSpellings(p Pattern) []string {
	out := []string{"*"}
	switch {
	case p.all:
		return out
	case p.output != "":
		return append(out, p.text)
	}
	paths := []string{""} // the spellings of the module steps so far
	for _, m := range p.modules {
		next := make([]string, 0, 2*len(paths))
		for _, a := range paths {
			if a != "" {
				a += "."
			}
			next = append(next, a+"module."+m.Name)
			if m.HasKey {
				next = append(next, a+m.String())
			}
		}
		paths = next
		for _, a := range paths {
			out = append(out, a+".*")
		}
	}
	if p.open {
		return out
	}
	for _, a := range paths {
		if a != "" {
			a += "."
		}
		out = append(out, a+p.res)
		if p.hasKey {
			out = append(out, a+p.res+p.key.String())
		}
	}
	return out
}

package graph

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Address is a parsed resource or resource instance address, as users and
// the CLIs write them: `module.a["x"].module.b.data.t.n[0]`.
type Address struct {
	// Resource holds Module (the module path with its index keys, as
	// Resource.Module keeps it), Mode, Type and Name.
	Resource Resource
	// Key is the instance key; HasKey says one was written (`aws_instance.web`
	// names the resource, `aws_instance.web[0]` one instance).
	Key    IndexKey
	HasKey bool
}

// String returns the canonical spelling of the address.
func (a Address) String() string {
	if a.HasKey {
		return a.Resource.Address() + a.Key.String()
	}
	return a.Resource.Address()
}

// ModuleStep is one module call of a module path: its name and, when the
// path names one instance of it, the key.
type ModuleStep struct {
	Name   string
	Key    IndexKey
	HasKey bool
}

// String returns the step as an address spells it: `module.a["x"]`.
func (m ModuleStep) String() string {
	if m.HasKey {
		return "module." + m.Name + m.Key.String()
	}
	return "module." + m.Name
}

var identRun = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*`)

// addressParser reads an address from the front of rest.
type addressParser struct{ rest string }

func (p *addressParser) ident() (string, error) {
	id := identRun.FindString(p.rest)
	if id == "" {
		return "", fmt.Errorf("expected a name at %q", p.rest)
	}
	p.rest = p.rest[len(id):]
	return id, nil
}

func (p *addressParser) dot() error {
	if !strings.HasPrefix(p.rest, ".") {
		return fmt.Errorf("expected '.' at %q", p.rest)
	}
	p.rest = p.rest[1:]
	return nil
}

// modules reads the `module.NAME[KEY].` steps at the front.
func (p *addressParser) modules() ([]ModuleStep, error) {
	var steps []ModuleStep
	for strings.HasPrefix(p.rest, "module.") {
		p.rest = p.rest[len("module."):]
		id, err := p.ident()
		if err != nil {
			return nil, err
		}
		m := ModuleStep{Name: id}
		if strings.HasPrefix(p.rest, "[") {
			if m.Key, err = parseKey(&p.rest); err != nil {
				return nil, err
			}
			m.HasKey = true
		}
		steps = append(steps, m)
		if p.rest == "" {
			break
		}
		if err := p.dot(); err != nil {
			return nil, err
		}
	}
	return steps, nil
}

// ParseModulePath parses a module path such as `module.a["x"].module.b`
// ("" for the root module).
func ParseModulePath(s string) ([]ModuleStep, error) {
	if s == "" {
		return nil, nil
	}
	p := &addressParser{rest: s}
	steps, err := p.modules()
	if err != nil {
		return nil, err
	}
	if p.rest != "" || strings.HasSuffix(s, ".") {
		return nil, fmt.Errorf("%q is not a module path", s)
	}
	return steps, nil
}

// ParseAddress parses a resource or resource instance address. Index keys
// are numbers or HCL-quoted strings, as Terraform writes them.
func ParseAddress(s string) (Address, error) {
	var a Address
	p := &addressParser{rest: s}
	steps, err := p.modules()
	if err != nil {
		return a, err
	}
	if p.rest == "" {
		return a, fmt.Errorf("%q names a module, not a resource", s)
	}
	mods := make([]string, len(steps))
	for i, m := range steps {
		mods[i] = m.String()
	}
	a.Resource.Module = strings.Join(mods, ".")
	a.Resource.Mode = "managed"
	if strings.HasPrefix(p.rest, "data.") {
		a.Resource.Mode, p.rest = "data", p.rest[len("data."):]
	}
	if a.Resource.Type, err = p.ident(); err != nil {
		return a, err
	}
	if err := p.dot(); err != nil {
		return a, err
	}
	if a.Resource.Name, err = p.ident(); err != nil {
		return a, err
	}
	if strings.HasPrefix(p.rest, "[") {
		if a.Key, err = parseKey(&p.rest); err != nil {
			return a, err
		}
		a.HasKey = true
	}
	if p.rest != "" {
		return a, fmt.Errorf("unexpected %q after the address", p.rest)
	}
	return a, nil
}

// unescapeTemplate undoes HCL's escapes of template sequences in a quoted
// key.
var unescapeTemplate = strings.NewReplacer("$${", "${", "%%{", "%{")

// parseKey parses `[0]` or `["k"]` (HCL string syntax) off the front of *s.
func parseKey(s *string) (IndexKey, error) {
	r := (*s)[1:]
	if strings.HasPrefix(r, `"`) {
		i := 1
		for ; i < len(r); i++ {
			if r[i] == '\\' {
				i++
			} else if r[i] == '"' {
				break
			}
		}
		if i >= len(r) || !strings.HasPrefix(r[i+1:], "]") {
			return IndexKey{}, fmt.Errorf("unterminated index key in %q", *s)
		}
		str, err := strconv.Unquote(r[:i+1])
		if err != nil {
			return IndexKey{}, fmt.Errorf("index key %s: %v", r[:i+1], err)
		}
		str = unescapeTemplate.Replace(str)
		*s = r[i+2:]
		return IndexKey{Kind: StringKey, Str: str}, nil
	}
	end := strings.IndexByte(r, ']')
	if end < 0 {
		return IndexKey{}, fmt.Errorf("unterminated index key in %q", *s)
	}
	n, err := strconv.ParseInt(r[:end], 10, 64)
	if err != nil || n < 0 {
		return IndexKey{}, fmt.Errorf("index key %q is neither a number nor a quoted string", r[:end])
	}
	*s = r[end+1:]
	return IndexKey{Kind: IntKey, Int: n}, nil
}

package history

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/kilolock/kilolock"

	"github.com/kilolock/kilolock/graph"
)

// StateOpOptions describe a native state operation.
type StateOpOptions struct {
	Actor  string // who asked, recorded on the new version
	DryRun bool   // compute the plan, write nothing
}

// StateOpResult is the outcome of a native state operation.
type StateOpResult struct {
	Plan ChangePlan `json:"plan"`
	// Version is the new version; nil for a dry run.
	Version *kilolock.Version   `json:"version,omitempty"`
	Stats   kilolock.WriteStats `json:"stats"`
	DryRun  bool                `json:"dry_run"`
}

// StateList lists the instance objects of the current version whose
// address matches pattern: every one for "", else a pattern with '*'
// (matching any run of characters, dots and brackets included), or a
// prefix that ends where an address part does (`module.demo` lists the
// module, `aws_instance.web` every instance of that resource).
// ErrNotFound when the state does not exist or has no version;
// ErrEncrypted for a client-side encrypted state.
func StateList(ctx context.Context, e *kilolock.Engine, name, pattern string) ([]InstanceSummary, error) {
	g, _, err := e.Graph(ctx, name)
	if err != nil {
		return nil, err
	}
	match := addressMatcher(pattern)
	out := []InstanceSummary{}
	for i := range g.Instances {
		if in := &g.Instances[i]; match(in.Address()) {
			out = append(out, Summarize(in))
		}
	}
	return out, nil
}

// addressMatcher returns the test of StateList's pattern on an instance
// address: "" matches every one; a pattern with '*' matches with '*'
// standing for any run of characters; any other, the address itself or
// an address it is a prefix of up to a part boundary.
func addressMatcher(pattern string) func(address string) bool {
	if pattern == "" {
		return func(string) bool { return true }
	}
	if strings.Contains(pattern, "*") {
		parts := strings.Split(pattern, "*")
		for i := range parts {
			parts[i] = regexp.QuoteMeta(parts[i])
		}
		re := regexp.MustCompile("^" + strings.Join(parts, ".*") + "$")
		return re.MatchString
	}
	return func(a string) bool {
		return a == pattern || strings.HasPrefix(a, pattern) && (a[len(pattern)] == '.' || a[len(pattern)] == '[')
	}
}

// StateShow is ShowInstance at the current version.
func StateShow(ctx context.Context, e *kilolock.Engine, name, address string) (*InstanceView, error) {
	return ShowInstance(ctx, e, name, kilolock.Latest, address)
}

// matchesRm reports whether state rm of address removes in: its instance
// address, its resource address, or a module it is in.
func matchesRm(in *graph.Instance, address string) bool {
	if kilolock.MatchesAddress(in, address) {
		return true
	}
	m := in.Resource.Module
	return strings.HasPrefix(address, "module.") && (m == address || strings.HasPrefix(m, address+".") || strings.HasPrefix(m, address+"["))
}

// StateRm removes the instance objects at addrs — instance addresses
// (with their deposed objects), resource addresses (all their instances)
// or module addresses (everything in them; `module.b` covers every
// instance of the module call, `module.b[0]` one) — as a new version with source
// "state-op", like `tofu state rm` but server-side. An address that
// matches nothing is an *InvalidError naming it, and nothing is removed.
// Refused with a *LockedError naming the holder while the state is held;
// ErrNotFound when the state does not exist; ErrEncrypted when it is
// client-side encrypted.
func StateRm(ctx context.Context, e *kilolock.Engine, name string, addrs []string, o StateOpOptions) (*StateOpResult, error) {
	if len(addrs) == 0 {
		return nil, &kilolock.InvalidError{Code: "address_missing", Message: "state rm needs at least one address", Hint: "name instances, resources or modules as `kl state list` shows them"}
	}
	w := serverWrite{operation: "state rm", source: kilolock.SourceStateOp, actor: o.Actor, dryRun: o.DryRun}
	plan, v, stats, err := commitEdit(ctx, e, name, w, func(st *kilolock.State, cur *graph.State) (*graph.State, error) {
		hit := make([]bool, len(addrs))
		next := *cur
		next.Instances = make([]graph.Instance, 0, len(cur.Instances))
		for i := range cur.Instances {
			keep := true
			for j, a := range addrs {
				if matchesRm(&cur.Instances[i], a) {
					hit[j], keep = true, false
				}
			}
			if keep {
				next.Instances = append(next.Instances, cur.Instances[i])
			}
		}
		var unknown []string
		for j, a := range addrs {
			if !hit[j] {
				unknown = append(unknown, a)
			}
		}
		if len(unknown) > 0 {
			return nil, &kilolock.InvalidError{Code: "unknown_address", Message: fmt.Sprintf("state %s holds nothing at %s; nothing was removed", name, strings.Join(unknown, ", ")),
				Hint: "`kl state list " + name + "` shows the addresses it holds"}
		}
		return &next, nil
	})
	if err != nil {
		return nil, err
	}
	return &StateOpResult{Plan: *plan, Version: v, Stats: stats, DryRun: o.DryRun}, nil
}

// StateMv moves the instance object(s) at from to to, as a new version
// with source "state-op": a rename (`a.x` → `a.y`), an index key change
// (`a.x[0]` → `a.x[1]`, `a.x["k"]`), or a move into or out of a module
// (`time_sleep.slow_a` → `module.demo.time_sleep.slow_a`). from is an
// instance address (the object and its deposed objects move) or a
// resource address (every instance moves, keeping its key; to must then be
// a resource address too). Every "dependencies" list naming the moved
// resource is rewritten to name the new one (or, when instances remain at
// the old resource, to name both), since dependencies are recorded by
// resource address without index keys.
//
// An *InvalidError when from matches nothing, when an address does not
// parse, when the resource type or mode would change, or when to is
// already taken. Refused with a *LockedError naming the holder while the
// state is held; ErrNotFound when the state does not exist.
func StateMv(ctx context.Context, e *kilolock.Engine, name, from, to string, o StateOpOptions) (*StateOpResult, error) {
	w := serverWrite{operation: "state mv", source: kilolock.SourceStateOp, actor: o.Actor, dryRun: o.DryRun}
	plan, v, stats, err := commitEdit(ctx, e, name, w, func(st *kilolock.State, cur *graph.State) (*graph.State, error) {
		return moveInstances(cur, name, from, to)
	})
	if err != nil {
		return nil, err
	}
	return &StateOpResult{Plan: *plan, Version: v, Stats: stats, DryRun: o.DryRun}, nil
}

func moveInstances(cur *graph.State, name, from, to string) (*graph.State, error) {
	invalid := func(code, format string, args ...any) error {
		return &kilolock.InvalidError{Code: code, Message: fmt.Sprintf(format, args...), Hint: "addresses look like `aws_instance.web`, `aws_instance.web[0]`, `module.demo.aws_instance.web[\"k\"]`; `kl state list " + name + "` shows them"}
	}
	src, err := graph.ParseAddress(from)
	if err != nil {
		return nil, invalid("invalid_address", "from address %q: %v", from, err)
	}
	dst, err := graph.ParseAddress(to)
	if err != nil {
		return nil, invalid("invalid_address", "to address %q: %v", to, err)
	}
	var moved []int
	instanceLevel := true
	for i := range cur.Instances {
		if cur.Instances[i].Address() == from {
			moved = append(moved, i)
		}
	}
	if len(moved) == 0 {
		instanceLevel = false
		if src.HasKey {
			return nil, invalid("unknown_address", "state %s holds no instance %s", name, from)
		}
		for i := range cur.Instances {
			if cur.Instances[i].Resource.Address() == from {
				moved = append(moved, i)
			}
		}
	}
	if len(moved) == 0 {
		return nil, invalid("unknown_address", "state %s holds nothing at %s", name, from)
	}
	if !instanceLevel && dst.HasKey {
		return nil, invalid("invalid_move", "%s is a resource with %d instances; move it to a resource address without an index key", from, len(moved))
	}
	first := cur.Instances[moved[0]].Resource
	if dst.Resource.Mode != first.Mode || dst.Resource.Type != first.Type {
		return nil, invalid("invalid_move", "cannot move %s to %s: a move cannot change the resource type or mode", from, to)
	}

	idx := cur.Index()
	isMoved := make(map[int]bool, len(moved))
	for _, i := range moved {
		isMoved[i] = true
	}
	next := *cur
	next.Instances = append([]graph.Instance(nil), cur.Instances...)
	for _, i := range moved {
		in := &cur.Instances[i]
		r := in.Resource
		r.Module, r.Type, r.Name = dst.Resource.Module, dst.Resource.Type, dst.Resource.Name
		key, setKey := in.Key, (*graph.IndexKey)(nil)
		if instanceLevel && dst.Key != in.Key {
			key, setKey = dst.Key, &dst.Key
			if r.Each != "" {
				r.Each = map[graph.KeyKind]string{graph.NoKey: "", graph.IntKey: "list", graph.StringKey: "map"}[key.Kind]
			}
		}
		probe := graph.Instance{Resource: r, Key: key, Deposed: in.Deposed}
		if j, taken := idx[probe.ID()]; taken && !isMoved[j] {
			return nil, invalid("destination_exists", "cannot move %s to %s: state %s already holds %s; remove it first (`kl state rm`) or pick another address", from, to, name, probe.ID())
		}
		obj := in.Object
		if setKey != nil {
			if obj, err = rewriteObject(obj, setKey, nil); err != nil {
				return nil, fmt.Errorf("move %s: %w", in.ID(), err)
			}
		}
		if next.Instances[i], err = graph.NewInstance(r, obj); err != nil {
			return nil, fmt.Errorf("move %s: %w", in.ID(), err)
		}
	}

	// Dependencies name resources by their configuration address: module
	// path and resource, no index keys.
	oldDep, newDep := configAddress(first), configAddress(next.Instances[moved[0]].Resource)
	if oldDep == newDep {
		return &next, nil
	}
	remains := false
	for i := range next.Instances {
		if configAddress(next.Instances[i].Resource) == oldDep {
			remains = true
		}
	}
	for i := range next.Instances {
		in := &next.Instances[i]
		deps, changed := []string(nil), false
		for _, d := range in.Dependencies {
			if d == oldDep {
				changed = true
				deps = append(deps, newDep)
				if remains {
					deps = append(deps, oldDep)
				}
				continue
			}
			deps = append(deps, d)
		}
		if !changed {
			continue
		}
		sort.Strings(deps)
		deps = compactStrings(deps)
		obj, err := rewriteObject(in.Object, nil, deps)
		if err != nil {
			return nil, fmt.Errorf("rewrite the dependencies of %s: %w", in.ID(), err)
		}
		if *in, err = graph.NewInstance(in.Resource, obj); err != nil {
			return nil, fmt.Errorf("rewrite the dependencies of %s: %w", in.ID(), err)
		}
	}
	return &next, nil
}

func compactStrings(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// configAddress is a resource's address with every index key dropped, as
// Terraform records dependencies: `module.a.aws_instance.web`.
func configAddress(r graph.Resource) string {
	r.Module = stripKeys(r.Module)
	return r.Address()
}

// stripKeys drops the bracketed index keys of a module path.
func stripKeys(s string) string {
	if !strings.Contains(s, "[") {
		return s
	}
	var b strings.Builder
	depth, inStr := 0, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case inStr:
			if c == '\\' {
				i++
			} else if c == '"' {
				inStr = false
			}
		case c == '"' && depth > 0:
			inStr = true
		case c == '[':
			depth++
		case c == ']':
			depth--
		case depth == 0:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// rewriteObject returns a compact instance object with its index_key set
// to key (removed for graph.NoKey; first when added) unless key is nil,
// and its dependencies set to deps unless deps is nil. Every other member
// keeps its bytes and its place.
func rewriteObject(obj []byte, key *graph.IndexKey, deps []string) ([]byte, error) {
	type member struct {
		name  string
		value json.RawMessage
	}
	d := json.NewDecoder(bytes.NewReader(obj))
	d.UseNumber()
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("instance object is not a JSON object")
	}
	var members []member
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return nil, err
		}
		var m member
		m.name, _ = t.(string)
		if err := d.Decode(&m.value); err != nil {
			return nil, err
		}
		members = append(members, m)
	}
	set := func(name string, value []byte, first bool) {
		for i := range members {
			if members[i].name == name {
				members[i].value = value
				return
			}
		}
		if first {
			members = append([]member{{name, value}}, members...)
		} else {
			members = append(members, member{name, value})
		}
	}
	if key != nil {
		if key.Kind == graph.NoKey {
			kept := members[:0]
			for _, m := range members {
				if m.name != "index_key" {
					kept = append(kept, m)
				}
			}
			members = kept
		} else {
			set("index_key", []byte(key.JSON()), true)
		}
	}
	if deps != nil {
		b, err := graph.EncodeJSON(deps)
		if err != nil {
			return nil, err
		}
		set("dependencies", b, false)
	}
	var b bytes.Buffer
	b.Grow(len(obj) + 64)
	b.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			b.WriteByte(',')
		}
		name, err := graph.EncodeJSON(m.name)
		if err != nil {
			return nil, err
		}
		b.Write(name)
		b.WriteByte(':')
		b.Write(m.value)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

package reserve

import (
	"fmt"
	"slices"
	"strings"

	tfjson "github.com/hashicorp/terraform-json"

	"github.com/kilolock/kilolock/quota"
)

// Analysis is what a plan (read from `tofu show -json PLANFILE` with
// terraform-json) will write and read, and the reservations that cover it.
type Analysis struct {
	Writes       []Change
	Reads        []Pattern
	Reservations []Reservation
	Actions      Actions
	// Quota is what the plan changes of what quotas count.
	Quota quota.PlanChanges
}

// Analyze reads a plan. Every resource change whose actions are not a
// no-op is a write of its instance (a deposed object's change too), and
// so is every output change. What the written resources read is taken
// from the configuration (the references of their arguments, followed
// through module input variables) and from the prior state (each written
// instance's recorded dependencies); it is reserved for reading, except
// where it is written as well.
func Analyze(p *tfjson.Plan) (*Analysis, error) {
	if p == nil {
		return nil, fmt.Errorf("no plan")
	}
	a := &Analysis{Quota: quota.CountPlan(p)}
	var rs []Reservation
	written := map[string]bool{} // config addresses of written resources, by module path
	type site struct {
		module []string // module call names, outermost first
		res    string   // "type.name" or "data.type.name"
	}
	var sites []site
	for _, rc := range p.ResourceChanges {
		if rc == nil || rc.Change == nil || rc.Change.Actions.NoOp() || len(rc.Change.Actions) == 0 {
			continue
		}
		pat, err := Parse(rc.Address)
		if err != nil {
			return nil, fmt.Errorf("plan resource change %q: %v", rc.Address, err)
		}
		a.Writes = append(a.Writes, Change{Address: rc.Address, Actions: actionStrings(rc.Change.Actions), Deposed: rc.DeposedKey})
		rs = append(rs, Reservation{Pattern: pat, Mode: Write})
		count(&a.Actions, rc)
		mods := modulePathNames(pat)
		res := pat.res
		k := strings.Join(mods, ".") + "|" + res
		if !written[k] {
			written[k] = true
			sites = append(sites, site{module: mods, res: res})
		}
	}
	for _, name := range sortedKeys(p.OutputChanges) {
		oc := p.OutputChanges[name]
		if oc == nil || oc.Actions.NoOp() || len(oc.Actions) == 0 {
			continue
		}
		pat, err := Parse("output." + name)
		if err != nil {
			return nil, fmt.Errorf("plan output change %q: %v", name, err)
		}
		a.Writes = append(a.Writes, Change{Address: pat.String(), Actions: actionStrings(oc.Actions)})
		rs = append(rs, Reservation{Pattern: pat, Mode: Write})
		a.Actions.Outputs++
	}

	reads := map[string]Pattern{}
	addRead := func(p Pattern) { reads[p.String()] = p }
	for _, s := range sites {
		for _, ref := range configReferences(p.Config, s.module, s.res) {
			addRead(ref)
		}
	}
	for _, dep := range priorDependencies(p, written, func(mods []string, res string) string { return strings.Join(mods, ".") + "|" + res }) {
		addRead(dep)
	}
	writes := NewIndex(nil)
	for _, r := range rs {
		writes.Add(Hold{Reservation: r})
	}
	for _, k := range sortedKeys(reads) {
		r := reads[k]
		covered := false
		writes.Meeting(r, func(h Hold) bool {
			covered = h.Pattern.Covers(r)
			return !covered
		})
		if !covered {
			a.Reads = append(a.Reads, r)
			rs = append(rs, Reservation{Pattern: r, Mode: Read})
		}
	}
	var err error
	a.Reservations, err = Normalize(rs)
	return a, err
}

func actionStrings(as tfjson.Actions) []string {
	out := make([]string, len(as))
	for i, x := range as {
		out[i] = string(x)
	}
	return out
}

func count(a *Actions, rc *tfjson.ResourceChange) {
	acts := rc.Change.Actions
	switch {
	case acts.Read():
		a.Read++
	case rc.Mode == tfjson.DataResourceMode:
		// a data source's delete or update leaves no managed instance
	case acts.Replace():
		a.Replace++
	case acts.Create():
		a.Create++
	case acts.Delete(), acts.Forget():
		a.Delete++
	case acts.Update():
		a.Update++
	}
}

// modulePathNames returns the module call names of an instance pattern.
func modulePathNames(p Pattern) []string {
	out := make([]string, len(p.modules))
	for i, m := range p.modules {
		out[i] = m.Name
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// configReferences returns what resource res of the module at path reads,
// from its argument expressions; references to the module's input
// variables are followed to the arguments of the module call, in the
// calling module. References to locals are not: the JSON plan does not
// describe locals.
func configReferences(cfg *tfjson.Config, path []string, res string) []Pattern {
	if cfg == nil || cfg.RootModule == nil {
		return nil
	}
	mods := []*tfjson.ConfigModule{cfg.RootModule}
	var calls []*tfjson.ModuleCall
	for _, name := range path {
		c := mods[len(mods)-1].ModuleCalls[name]
		if c == nil || c.Module == nil {
			return nil
		}
		calls = append(calls, c)
		mods = append(mods, c.Module)
	}
	var r *tfjson.ConfigResource
	for _, cr := range mods[len(mods)-1].Resources {
		if resourceKey(cr) == res {
			r = cr
			break
		}
	}
	if r == nil {
		return nil
	}
	var out []Pattern
	var visit func(depth int, refs []string, seen map[string]bool)
	visit = func(depth int, refs []string, seen map[string]bool) {
		for _, ref := range refs {
			if name, ok := strings.CutPrefix(ref, "var."); ok && depth > 0 {
				name, _, _ = strings.Cut(name, ".")
				k := fmt.Sprint(depth, name)
				if seen[k] {
					continue
				}
				seen[k] = true
				if e := calls[depth-1].Expressions[name]; e != nil {
					visit(depth-1, expressionRefs(e), seen)
				}
				continue
			}
			if p, ok := referencePattern(path[:depth], ref); ok {
				out = append(out, p)
			}
		}
	}
	var refs []string
	for _, e := range r.Expressions {
		refs = append(refs, expressionRefs(e)...)
	}
	refs = append(refs, r.DependsOn...)
	if r.CountExpression != nil {
		refs = append(refs, r.CountExpression.References...)
	}
	if r.ForEachExpression != nil {
		refs = append(refs, r.ForEachExpression.References...)
	}
	visit(len(path), refs, map[string]bool{})
	return out
}

func resourceKey(cr *tfjson.ConfigResource) string {
	if cr.Mode == tfjson.DataResourceMode {
		return "data." + cr.Type + "." + cr.Name
	}
	return cr.Type + "." + cr.Name
}

// expressionRefs returns the references of an expression and of any
// nested block inside it.
func expressionRefs(e *tfjson.Expression) []string {
	if e == nil || e.ExpressionData == nil {
		return nil
	}
	refs := slices.Clone(e.References)
	for _, block := range e.NestedBlocks {
		for _, inner := range block {
			refs = append(refs, expressionRefs(inner)...)
		}
	}
	return refs
}

// referencePattern turns a reference made in the module at path
// (`aws_instance.web.id`, `data.t.n`, `module.m.out`) into the pattern of
// the resource or module it reads; false for what is not state (var.,
// local., each., count., path., terraform., self).
func referencePattern(path []string, ref string) (Pattern, bool) {
	parts := strings.Split(ref, ".")
	var s string
	switch parts[0] {
	case "var", "local", "each", "count", "path", "terraform", "self":
		return Pattern{}, false
	case "module":
		if len(parts) < 2 {
			return Pattern{}, false
		}
		name, _, _ := strings.Cut(parts[1], "[")
		s = "module." + name + ".*"
	case "data":
		if len(parts) < 3 {
			return Pattern{}, false
		}
		s = "data." + parts[1] + "." + trimKey(parts[2])
	default:
		if len(parts) < 2 {
			return Pattern{}, false
		}
		s = parts[0] + "." + trimKey(parts[1])
	}
	prefix := ""
	for _, m := range path {
		prefix += "module." + m + "."
	}
	p, err := Parse(prefix + s)
	return p, err == nil
}

func trimKey(s string) string {
	name, _, _ := strings.Cut(s, "[")
	return name
}

// priorDependencies returns the recorded dependencies of the written
// instances in the plan's prior state, as patterns (Terraform records them
// as config addresses, `module.a.aws_instance.web`).
func priorDependencies(p *tfjson.Plan, written map[string]bool, key func([]string, string) string) []Pattern {
	if p.PriorState == nil || p.PriorState.Values == nil {
		return nil
	}
	var out []Pattern
	var walk func(m *tfjson.StateModule)
	walk = func(m *tfjson.StateModule) {
		if m == nil {
			return
		}
		for _, r := range m.Resources {
			pat, err := Parse(r.Address)
			if err != nil || !written[key(modulePathNames(pat), pat.res)] {
				continue
			}
			for _, d := range r.DependsOn {
				if dp, err := Parse(d); err == nil {
					out = append(out, dp)
				}
			}
		}
		for _, c := range m.ChildModules {
			walk(c)
		}
	}
	walk(p.PriorState.Values.RootModule)
	return out
}

// OutOfScope returns the writes that no pattern of scope covers; output
// changes are never out of scope (they follow from what is in it).
func (a *Analysis) OutOfScope(scope []Pattern) []Change {
	x := NewIndex(nil)
	for _, p := range scope {
		x.Add(Hold{Reservation: Reservation{Pattern: p, Mode: Write}})
	}
	var out []Change
	for _, w := range a.Writes {
		if strings.HasPrefix(w.Address, "output.") {
			continue
		}
		p, err := Parse(w.Address)
		if err != nil {
			out = append(out, w)
			continue
		}
		covered := false
		x.Meeting(p, func(h Hold) bool {
			covered = h.Pattern.Covers(p)
			return !covered
		})
		if !covered {
			out = append(out, w)
		}
	}
	return out
}

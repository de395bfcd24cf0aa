package history

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/graph"
)

// Operations of a move between states, as MoveResult.Operation names them.
const (
	OperationMove  = "mv"
	OperationSplit = "split"
	OperationMerge = "merge"
)

// MoveOptions describe a move between states.
type MoveOptions struct {
	Actor  string // who asked, recorded on both versions
	DryRun bool   // compute what moves and the edges it cuts, write nothing
}

// MovedInstance is one instance object that moves: its address in the
// source and in the target (the same unless renamed).
type MovedInstance struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// Edge kinds of a CrossEdge.
const (
	// EdgeLeftOnMoved: an instance left in the source depends on a moved
	// resource.
	EdgeLeftOnMoved = "left_depends_on_moved"
	// EdgeMovedOnLeft: a moved instance depends on a resource left in the
	// source.
	EdgeMovedOnLeft = "moved_depends_on_left"
	// EdgeOutput: an output of the source holds a value of a moved
	// instance (state records no output's references, so this is what
	// its value shows: it likely reads it).
	EdgeOutput = "output_reads_moved"
)

// CrossEdge is a dependency that the move makes cross two states: after
// it, the configurations must pass the value by a data source or a
// remote state output instead.
type CrossEdge struct {
	Kind string `json:"kind"`
	From string `json:"from"` // the dependent: an instance, or output.NAME
	To   string `json:"to"`   // what it depends on (a resource's configuration address)
}

// MoveResult is the outcome of a move between states, or its preview.
type MoveResult struct {
	Operation string          `json:"operation"` // OperationMove, OperationSplit, OperationMerge
	From      string          `json:"from"`
	To        string          `json:"to"`
	Moved     []MovedInstance `json:"moved"`
	Edges     []CrossEdge     `json:"edges"`
	// Versions are the two versions made; nil for a dry run.
	Versions *MoveVersions       `json:"versions,omitempty"`
	Stats    kilolock.WriteStats `json:"stats"`
	DryRun   bool                `json:"dry_run"`
	Archived bool                `json:"archived,omitempty"` // a merge archived From
	// Config says what each configuration must do now.
	Config []string `json:"config"`
}

// MovePair is one address to move and where to: To empty (or equal)
// keeps it, otherwise it is renamed on the way, as StateMv renames within
// one state. From is an instance, a resource (every instance) or a module
// (everything under it) address.
type MovePair struct {
	From string `json:"from"`
	To   string `json:"to,omitempty"`
}

// Move moves instances from state from to the existing state to, in one
// transaction (MoveStore): a new version of each with source
// "move", or neither. Dependencies recorded on the moved objects are kept
// (rewritten only by a rename). An *InvalidError when an address matches
// nothing or does not parse; a *MoveError (code
// destination_exists) when the target already holds a moved address; the
// store's refusals otherwise (see MoveStore).
func Move(ctx context.Context, e *kilolock.Engine, from, to string, pairs []MovePair, o MoveOptions) (*MoveResult, error) {
	if len(pairs) == 0 {
		return nil, &kilolock.InvalidError{Code: "address_missing", Message: "a move needs at least one address", Hint: "name instances, resources or modules as `kl state list " + from + "` shows them"}
	}
	return move(ctx, e, OperationMove, from, to, pairs, false, false, o)
}

// Split makes the new state to, in the environment of from (its name is
// of that environment), with its own lineage, from's lock mode and a copy
// of from's own quota, holding what addrs name, moved out of from.
func Split(ctx context.Context, e *kilolock.Engine, from, to string, addrs []string, o MoveOptions) (*MoveResult, error) {
	if len(addrs) == 0 {
		return nil, &kilolock.InvalidError{Code: "address_missing", Message: "a split needs at least one address", Hint: "name instances, resources or modules as `kl state list " + from + "` shows them"}
	}
	if environmentOf(from) != environmentOf(to) {
		return nil, &kilolock.InvalidError{Code: "invalid_split", Message: fmt.Sprintf("a split makes its new state in the environment of %s; %s is elsewhere", from, to),
			Hint: "name the new state in the same environment, then move across environments with kl state mv --to-state if you must"}
	}
	pairs := make([]MovePair, len(addrs))
	for i, a := range addrs {
		pairs[i] = MovePair{From: a}
	}
	return move(ctx, e, OperationSplit, from, to, pairs, true, false, o)
}

// environmentOf is the "ws_….env_…." prefix of a tenant's internal state
// name, "" for a state of the local lane.
func environmentOf(name string) string {
	if !strings.HasPrefix(name, "ws_") {
		return ""
	}
	ws, rest, ok := strings.Cut(name, ".")
	env, _, ok2 := strings.Cut(rest, ".")
	if !ok || !ok2 {
		return ""
	}
	return ws + "." + env + "."
}

// Merge moves every instance of from into into, and archives from (its
// history kept; it is not deleted).
func Merge(ctx context.Context, e *kilolock.Engine, from, into string, o MoveOptions) (*MoveResult, error) {
	return move(ctx, e, OperationMerge, from, into, nil, false, true, o)
}

func move(ctx context.Context, e *kilolock.Engine, op, from, to string, pairs []MovePair, create, all bool, o MoveOptions) (*MoveResult, error) {
	ms, ok := e.Store().(MoveStore)
	if !ok {
		return nil, &kilolock.RefusedError{Code: "moves_unsupported", Message: "this store cannot move instances between states in one transaction", Hint: "use the SQLite or PostgreSQL store"}
	}
	if from == to {
		return nil, &MoveError{Code: MoveSameState, State: from, Message: fmt.Sprintf("state %q cannot move instances to itself between states", from), Hint: "to rename within one state use `kl state mv NAME FROM TO` without --to-state"}
	}
	m := &moveEdit{op: op, actor: o.Actor, from: from, to: to, create: create, all: all, pairs: pairs, dryRun: o.DryRun,
		res: &MoveResult{Operation: op, From: from, To: to, DryRun: o.DryRun, Archived: all && !o.DryRun}}
	for attempt := 0; ; attempt++ {
		err := m.once(ctx, e, ms)
		if errors.Is(err, kilolock.ErrStale) && attempt < staleRetries {
			continue
		}
		if err != nil {
			return nil, err
		}
		m.res.Config = configSteps(m.res)
		return m.res, nil
	}
}

// staleRetries bounds how often a move is recomputed after another writer
// committed to either state first, as the engine bounds its writes'.
const staleRetries = 200

// moveEdit is one move between states, recomputed from both states'
// current versions until it commits (or is refused).
type moveEdit struct {
	op, actor, from, to string
	create, all, dryRun bool
	pairs               []MovePair
	res                 *MoveResult
}

// current reads state name and its current content for a move: a plain
// writer's lock refuses the move; an apply run's does not by itself (its
// reservations, checked by the store, refuse only a move of what they
// cover).
func (m *moveEdit) current(ctx context.Context, e *kilolock.Engine, name string) (*kilolock.State, *graph.State, error) {
	st, err := e.State(ctx, name)
	if err != nil {
		return nil, nil, err
	}
	for i := range st.Locks {
		if l := &st.Locks[i]; l.PlainWriter() {
			return nil, nil, MoveRefusal(name, &kilolock.LockedError{State: name, Holder: l.Info})
		}
	}
	if st.Current == 0 {
		return nil, nil, fmt.Errorf("state %q has no version yet: %w", name, kilolock.ErrNotFound)
	}
	_, cur, err := e.VersionGraph(ctx, st, kilolock.Latest)
	if err != nil {
		return nil, nil, MoveRefusal(name, err)
	}
	return st, cur, nil
}

// once computes the move from both states' current versions and commits
// it through the store's MoveStore, in one transaction; a dry run stops
// before committing.
func (m *moveEdit) once(ctx context.Context, e *kilolock.Engine, ms MoveStore) error {
	stFrom, curFrom, err := m.current(ctx, e, m.from)
	if err != nil {
		return err
	}
	var (
		stTo  *kilolock.State
		curTo *graph.State
	)
	if m.create {
		switch _, err := e.State(ctx, m.to); {
		case err == nil:
			return &MoveError{Code: MoveStateExists, State: m.to, Message: fmt.Sprintf("state %q exists already; a split makes a new state", m.to), Hint: "pick a new name, or move into the existing state with `kl state mv --to-state`"}
		case !errors.Is(err, kilolock.ErrNotFound):
			return err
		}
		stTo = &kilolock.State{Name: m.to}
		curTo = &graph.State{Version: 4, Lineage: newLineage(), TerraformVersion: curFrom.TerraformVersion, Format: curFrom.Format}
	} else if stTo, curTo, err = m.current(ctx, e, m.to); err != nil {
		return err
	}
	nextFrom, nextTo, moved, err := moveBetween(curFrom, curTo, m.from, m.to, m.pairs, m.all)
	if err != nil {
		return err
	}
	m.res.Moved = moved
	m.res.Edges = crossEdges(curFrom, nextFrom, moved)
	if m.dryRun {
		return nil
	}
	ids := make([]string, 0, len(moved))
	for _, mv := range moved {
		ids = append(ids, mv.From)
	}
	vs, stats, err := e.CommitTogether(ctx, []kilolock.NextVersion{
		{State: stFrom, Cur: curFrom, Next: nextFrom, Source: kilolock.SourceMove, Actor: m.actor},
		{State: stTo, Cur: curTo, Next: nextTo, New: m.create, Source: kilolock.SourceMove, Actor: m.actor},
	}, func(cs []*kilolock.Commit) ([]*kilolock.Version, kilolock.WriteStats, error) {
		vFrom, vTo, stats, err := ms.Move(ctx, &MoveCommit{From: m.from, To: m.to, FromCommit: cs[0], ToCommit: cs[1], Create: m.create, ArchiveFrom: m.all, Moved: ids})
		return []*kilolock.Version{vFrom, vTo}, stats, err
	})
	if err != nil {
		return err
	}
	m.res.Versions = &MoveVersions{From: vs[0], To: vs[1]}
	m.res.Stats = stats
	e.Logger().Info("move between states", "operation", m.op, "from", m.from, "from_version", vs[0].Number, "to", m.to, "to_version", vs[1].Number,
		"instances", len(moved), "actor", m.actor)
	return nil
}

// newLineage is a random (version 4) UUID, as Terraform makes lineages:
// a split's new state's.
func newLineage() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// MoveVersions are the two versions a move made.
type MoveVersions struct {
	From *kilolock.Version `json:"from"`
	To   *kilolock.Version `json:"to"`
}

// moveBetween computes both states' next content: what pairs name (every
// instance when all) leaves from and enters to, renamed as asked.
func moveBetween(cf, ct *graph.State, from, to string, pairs []MovePair, all bool) (*graph.State, *graph.State, []MovedInstance, error) {
	invalid := func(code, format string, args ...any) error {
		return &kilolock.InvalidError{Code: code, Message: fmt.Sprintf(format, args...), Hint: "addresses look like `aws_instance.web`, `aws_instance.web[0]`, `module.net`; `kl state list " + from + "` shows them"}
	}
	taken := make([]bool, len(cf.Instances))
	var out []graph.Instance
	var moved []MovedInstance
	if all {
		for i := range cf.Instances {
			taken[i] = true
			out = append(out, cf.Instances[i])
			moved = append(moved, MovedInstance{From: cf.Instances[i].ID(), To: cf.Instances[i].ID()})
		}
		if len(out) == 0 {
			return nil, nil, nil, invalid("nothing_to_move", "state %s holds no instance to merge", from)
		}
	}
	for _, p := range pairs {
		var sel graph.State
		sel.Instances = nil
		for i := range cf.Instances {
			if matchesRm(&cf.Instances[i], p.From) {
				if taken[i] {
					return nil, nil, nil, invalid("address_repeated", "%s is named twice in one move", cf.Instances[i].ID())
				}
				taken[i] = true
				sel.Instances = append(sel.Instances, cf.Instances[i])
			}
		}
		if len(sel.Instances) == 0 {
			return nil, nil, nil, invalid("unknown_address", "state %s holds nothing at %s; nothing moved", from, p.From)
		}
		renamed, err := rename(&sel, from, p)
		if err != nil {
			return nil, nil, nil, err
		}
		for i := range sel.Instances {
			moved = append(moved, MovedInstance{From: sel.Instances[i].ID(), To: renamed.Instances[i].ID()})
		}
		out = append(out, renamed.Instances...)
	}
	nf := *cf
	nf.Instances = make([]graph.Instance, 0, len(cf.Instances)-len(moved))
	for i := range cf.Instances {
		if !taken[i] {
			nf.Instances = append(nf.Instances, cf.Instances[i])
		}
	}
	idx := ct.Index()
	seen := map[string]bool{}
	for i := range out {
		id := out[i].ID()
		if _, ok := idx[id]; ok || seen[id] {
			return nil, nil, nil, &MoveError{Code: MoveDestinationExists, State: to,
				Message: fmt.Sprintf("state %s already holds %s; nothing moved", to, id),
				Hint:    "remove it from " + to + " first (`kl state rm`), or rename on the way with --to"}
		}
		seen[id] = true
	}
	nt := *ct
	nt.Instances = append(append(make([]graph.Instance, 0, len(ct.Instances)+len(out)), ct.Instances...), out...)
	sort.Slice(moved, func(i, j int) bool { return moved[i].From < moved[j].From })
	return &nf, &nt, moved, nil
}

// rename returns sel's instances as p.To names them, in sel's order.
func rename(sel *graph.State, from string, p MovePair) (*graph.State, error) {
	if p.To == "" || p.To == p.From {
		return sel, nil
	}
	if strings.HasPrefix(p.From, "module.") && !isResourceAddress(p.From) {
		if !strings.HasPrefix(p.To, "module.") || isResourceAddress(p.To) {
			return nil, &kilolock.InvalidError{Code: "invalid_move", Message: fmt.Sprintf("%s is a module; move it to a module address, not %s", p.From, p.To), Hint: "for example --from module.net --to module.network"}
		}
		oldCfg, newCfg := stripKeys(p.From), stripKeys(p.To)
		next := &graph.State{Instances: make([]graph.Instance, len(sel.Instances))}
		for i := range sel.Instances {
			in := &sel.Instances[i]
			r := in.Resource
			r.Module = p.To + strings.TrimPrefix(r.Module, p.From)
			var deps []string
			for _, d := range in.Dependencies {
				if d == oldCfg || strings.HasPrefix(d, oldCfg+".") {
					d = newCfg + strings.TrimPrefix(d, oldCfg)
				}
				deps = append(deps, d)
			}
			obj := in.Object
			if len(deps) > 0 {
				var err error
				if obj, err = rewriteObject(obj, nil, deps); err != nil {
					return nil, fmt.Errorf("move %s: %w", in.ID(), err)
				}
			}
			n, err := graph.NewInstance(r, obj)
			if err != nil {
				return nil, fmt.Errorf("move %s: %w", in.ID(), err)
			}
			next.Instances[i] = n
		}
		return next, nil
	}
	return moveInstances(sel, from, p.From, p.To)
}

// isResourceAddress reports whether a parses as a resource or instance
// address (module.x alone does not).
func isResourceAddress(a string) bool {
	_, err := graph.ParseAddress(a)
	return err == nil
}

// crossEdges are the dependencies the move cuts: between what stays in
// the source (next) and what moved, and source outputs holding a moved
// instance's value.
func crossEdges(cur, next *graph.State, moved []MovedInstance) []CrossEdge {
	movedIDs := map[string]bool{}
	for _, m := range moved {
		movedIDs[m.From] = true
	}
	movedCfg, leftCfg := map[string]bool{}, map[string]bool{}
	for i := range cur.Instances {
		in := &cur.Instances[i]
		if movedIDs[in.ID()] {
			movedCfg[configAddress(in.Resource)] = true
		} else {
			leftCfg[configAddress(in.Resource)] = true
		}
	}
	edges := []CrossEdge{}
	for i := range cur.Instances {
		in := &cur.Instances[i]
		isMoved := movedIDs[in.ID()]
		for _, d := range in.Dependencies {
			switch {
			case !isMoved && movedCfg[d] && !leftCfg[d]:
				edges = append(edges, CrossEdge{Kind: EdgeLeftOnMoved, From: in.ID(), To: d})
			case isMoved && leftCfg[d] && !movedCfg[d]:
				edges = append(edges, CrossEdge{Kind: EdgeMovedOnLeft, From: in.ID(), To: d})
			}
		}
	}
	for i := range next.Outputs {
		o := &next.Outputs[i]
		v := outputString(o.Object)
		if len(v) < 3 {
			continue
		}
		for j := range cur.Instances {
			in := &cur.Instances[j]
			if movedIDs[in.ID()] && bytes.Contains(attributes(in.Object), v) {
				edges = append(edges, CrossEdge{Kind: EdgeOutput, From: "output." + o.Name, To: in.ID()})
				break
			}
		}
	}
	return edges
}

// attributes is the raw "attributes" member of an instance object.
func attributes(obj []byte) []byte {
	var o struct {
		Attributes json.RawMessage `json:"attributes"`
	}
	if json.Unmarshal(obj, &o) != nil {
		return nil
	}
	return o.Attributes
}

// outputString is the JSON string an output's value is (quotes included),
// nil for any other value or a sensitive one.
func outputString(obj []byte) []byte {
	var o struct {
		Value     any  `json:"value"`
		Sensitive bool `json:"sensitive"`
	}
	if json.Unmarshal(obj, &o) != nil || o.Sensitive {
		return nil
	}
	s, ok := o.Value.(string)
	if !ok {
		return nil
	}
	b, err := graph.EncodeJSON(s)
	if err != nil {
		return nil
	}
	return b
}

// configSteps says what each configuration must do after (or, for a dry
// run, to follow) the move.
func configSteps(r *MoveResult) []string {
	var blocks []string
	seen := map[string]bool{}
	for _, m := range r.Moved {
		in := m.From
		if i := strings.LastIndex(in, " (deposed"); i >= 0 {
			in = in[:i]
		}
		a, err := graph.ParseAddress(in)
		var b string
		if err == nil {
			res := a.Resource
			b = configAddress(res)
		} else {
			b = in
		}
		if mod := topModule(b); mod != "" {
			b = mod
		}
		if !seen[b] {
			seen[b] = true
			blocks = append(blocks, b)
		}
	}
	what := strings.Join(blocks, ", ")
	steps := []string{
		fmt.Sprintf("Move the configuration blocks of %s from the configuration of state %s to that of state %s%s.", what, r.From, r.To, renamed(r)),
		fmt.Sprintf("Remove them from %s's configuration before its next apply: applying %s while its configuration still declares them would try to create the objects again, since %s no longer holds them.", r.From, r.From, r.From),
		"Then `tofu plan` in both configurations shows no changes; nothing must be created again.",
	}
	if len(r.Edges) > 0 {
		steps = append(steps, fmt.Sprintf("%d dependency edge(s) now cross the two states: pass those values with a terraform_remote_state data source or a data source lookup instead.", len(r.Edges)))
	}
	if r.Operation == OperationMerge {
		steps = append(steps, fmt.Sprintf("State %s is archived: point its backend users at %s.", r.From, r.To))
	}
	return steps
}

func renamed(r *MoveResult) string {
	for _, m := range r.Moved {
		if m.From != m.To {
			return ", renamed as the move did (`moved` blocks are not needed: the state already holds the new addresses)"
		}
	}
	return ""
}

// topModule is the first module call of a configuration address
// (module.net of module.net.aws_x.y), "" outside modules.
func topModule(a string) string {
	if !strings.HasPrefix(a, "module.") {
		return ""
	}
	rest := a[len("module."):]
	if i := strings.IndexByte(rest, '.'); i >= 0 {
		return a[:len("module.")+i]
	}
	return a
}

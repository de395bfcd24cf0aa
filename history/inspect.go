package history

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/kilolock/kilolock"

	"github.com/kilolock/kilolock/graph"
)

// InstanceSummary names one instance object of a version.
type InstanceSummary struct {
	// Address is the instance address; ID adds " (deposed object KEY)"
	// for a deposed object.
	Address string `json:"address"`
	ID      string `json:"id"`
	Module  string `json:"module,omitempty"`
	Mode    string `json:"mode"`
	Type    string `json:"type"`
	Name    string `json:"name"`
	Deposed string `json:"deposed,omitempty"`
	Status  string `json:"status,omitempty"` // "" or "tainted"
}

// Summarize names one instance as listings show it.
func Summarize(in *graph.Instance) InstanceSummary {
	return InstanceSummary{Address: in.Address(), ID: in.ID(), Module: in.Resource.Module, Mode: in.Resource.Mode,
		Type: in.Resource.Type, Name: in.Resource.Name, Deposed: in.Deposed, Status: in.Status}
}

// OutputSummary names one output of a version.
type OutputSummary struct {
	Name      string `json:"name"`
	Sensitive bool   `json:"sensitive"`
}

// VersionView is a version's record with the instances and outputs it
// holds: what `kl show` prints.
type VersionView struct {
	Version   kilolock.Version  `json:"version"`
	Current   bool              `json:"current"`
	Instances []InstanceSummary `json:"instances"`
	Outputs   []OutputSummary   `json:"outputs"`
}

// InstanceView is one instance object of a version with its attributes,
// sensitive values (and the provider's private data) masked.
type InstanceView struct {
	Version kilolock.Version `json:"version"`
	InstanceSummary
	Provider     string   `json:"provider"`
	Attributes   any      `json:"attributes"`
	Dependencies []string `json:"dependencies"`
}

// InstanceDiff is an instance that differs between two versions, with the
// attribute paths that differ.
type InstanceDiff struct {
	Address string                  `json:"address"` // the instance ID
	Changes []graph.AttributeChange `json:"changes"`
}

// OutputDiff is an output that differs between two versions.
type OutputDiff struct {
	Name    string                  `json:"name"`
	Changes []graph.AttributeChange `json:"changes"`
}

// ChangeSet is what turns one version's content into another's: instance
// IDs added and removed, instances changed with their attribute paths, and
// the same for outputs. Every list is sorted and never nil.
type ChangeSet struct {
	Added          []string       `json:"added"`
	Removed        []string       `json:"removed"`
	Changed        []InstanceDiff `json:"changed"`
	OutputsAdded   []string       `json:"outputs_added"`
	OutputsRemoved []string       `json:"outputs_removed"`
	OutputsChanged []OutputDiff   `json:"outputs_changed"`
}

// Empty reports whether nothing changes.
func (c *ChangeSet) Empty() bool {
	return len(c.Added)+len(c.Removed)+len(c.Changed)+len(c.OutputsAdded)+len(c.OutputsRemoved)+len(c.OutputsChanged) == 0
}

// Changes compares a with b at address level (graph.Diff) and, for what
// changed, at attribute level, masked by graph's one rule with the
// secrets of both versions' sensitive outputs.
func Changes(a, b *graph.State) ChangeSet {
	d := graph.Diff(a, b)
	secrets := graph.OutputSecrets(a.Outputs).Join(graph.OutputSecrets(b.Outputs))
	cs := ChangeSet{Added: nonNilStrings(d.Added), Removed: nonNilStrings(d.Removed), Changed: []InstanceDiff{},
		OutputsAdded: nonNilStrings(d.OutputsAdded), OutputsRemoved: nonNilStrings(d.OutputsRemoved), OutputsChanged: []OutputDiff{}}
	if len(d.Changed) > 0 {
		ai, bi := a.Index(), b.Index()
		for _, id := range d.Changed {
			cs.Changed = append(cs.Changed, InstanceDiff{Address: id, Changes: graph.InstanceChanges(&a.Instances[ai[id]], &b.Instances[bi[id]], secrets)})
		}
	}
	if len(d.OutputsChanged) > 0 {
		ao, bo := a.OutputIndex(), b.OutputIndex()
		for _, n := range d.OutputsChanged {
			cs.OutputsChanged = append(cs.OutputsChanged, OutputDiff{Name: n, Changes: graph.OutputChanges(&a.Outputs[ao[n]], &b.Outputs[bo[n]], secrets)})
		}
	}
	return cs
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// StateDiff is the difference between two versions of a state: From's
// content turned into To's.
type StateDiff struct {
	State string           `json:"state"`
	From  kilolock.Version `json:"from"`
	To    kilolock.Version `json:"to"`
	ChangeSet
	// Opaque says From or To is client-side encrypted: the versions are
	// compared as whole documents, and what changed in them cannot be
	// listed (ChangeSet is empty).
	Opaque bool `json:"opaque,omitempty"`
	// Identical, set for an Opaque diff, says whether both documents are
	// the same bytes.
	Identical *bool `json:"identical,omitempty"`
}

// Show returns a version's record and the instances and outputs it holds.
// ErrNotFound when the state does not exist, a *VersionNotFoundError when
// the version does not, ErrEncrypted for a client-side encrypted version.
func Show(ctx context.Context, e *kilolock.Engine, name string, ref kilolock.VersionRef) (*VersionView, error) {
	st, err := e.State(ctx, name)
	if err != nil {
		return nil, err
	}
	d, g, err := e.VersionGraph(ctx, st, ref)
	if err != nil {
		return nil, err
	}
	view := &VersionView{Version: d.Version, Current: d.Version.Number == st.Current,
		Instances: make([]InstanceSummary, 0, len(g.Instances)), Outputs: make([]OutputSummary, 0, len(g.Outputs))}
	for i := range g.Instances {
		view.Instances = append(view.Instances, Summarize(&g.Instances[i]))
	}
	for _, o := range g.Outputs {
		view.Outputs = append(view.Outputs, OutputSummary{Name: o.Name, Sensitive: graph.OutputSensitive(o.Object)})
	}
	return view, nil
}

// ShowInstance returns one instance object of a version — address is an
// instance address, or the ID of a deposed object — with sensitive values
// masked. Errors as for Show, and ErrNotFound when the version holds no
// object at address.
func ShowInstance(ctx context.Context, e *kilolock.Engine, name string, ref kilolock.VersionRef, address string) (*InstanceView, error) {
	st, err := e.State(ctx, name)
	if err != nil {
		return nil, err
	}
	d, g, err := e.VersionGraph(ctx, st, ref)
	if err != nil {
		return nil, err
	}
	i, ok := g.Index()[address]
	if !ok {
		return nil, fmt.Errorf("version @%d of state %s holds no instance %s (see `kl state list`): %w", d.Version.Number, name, address, kilolock.ErrNotFound)
	}
	in := &g.Instances[i]
	m, err := graph.MaskedObject(in.Object, graph.OutputSecrets(g.Outputs))
	if err != nil {
		return nil, fmt.Errorf("instance %s: %w", address, err)
	}
	deps := in.Dependencies
	if deps == nil {
		deps = []string{}
	}
	return &InstanceView{Version: d.Version, InstanceSummary: Summarize(in), Provider: in.Resource.Provider, Attributes: m["attributes"], Dependencies: deps}, nil
}

// Diff compares two versions of a state: what turns from's content into
// to's, by address and, for changed instances and outputs, by attribute
// path, with values sensitive in either version masked. Lineage, serial
// and check results are not compared. When either version is client-side
// encrypted the two are compared as whole documents (StateDiff.Opaque).
// Errors as for Show.
func Diff(ctx context.Context, e *kilolock.Engine, name string, from, to kilolock.VersionRef) (*StateDiff, error) {
	st, err := e.State(ctx, name)
	if err != nil {
		return nil, err
	}
	// An encrypted version has no graph, but its body.
	da, ga, err := e.VersionGraph(ctx, st, from)
	if err != nil && (da == nil || !errors.Is(err, kilolock.ErrEncrypted)) {
		return nil, err
	}
	db, gb, err := e.VersionGraph(ctx, st, to)
	if err != nil && (db == nil || !errors.Is(err, kilolock.ErrEncrypted)) {
		return nil, err
	}
	if ga == nil || gb == nil {
		doc, err := db.Bytes()
		if err != nil {
			return nil, err
		}
		same := da.Equal(doc)
		none := ChangeSet{Added: []string{}, Removed: []string{}, Changed: []InstanceDiff{}, OutputsAdded: []string{}, OutputsRemoved: []string{}, OutputsChanged: []OutputDiff{}}
		return &StateDiff{State: name, From: da.Version, To: db.Version, Opaque: true, Identical: &same, ChangeSet: none}, nil
	}
	return &StateDiff{State: name, From: da.Version, To: db.Version, ChangeSet: Changes(ga, gb)}, nil
}

// AddressChange is one version's change to one instance object.
type AddressChange struct {
	Version kilolock.Version `json:"version"`
	Address string           `json:"address"` // the instance ID
	Kind    string           `json:"kind"`    // "added", "changed" or "removed"
	// Changes are the attribute paths that changed (Kind "changed").
	Changes []graph.AttributeChange `json:"changes,omitempty"`
}

// AddressHistory lists every version that added, changed or removed the
// instance at address — or, for a resource address, any of its instances
// — newest first, with the attribute paths that changed, masked by graph's
// one rule with the secrets of the sensitive outputs of the versions
// either side of each change. Its cost is that of the intervals of the
// address and of the outputs of those versions, not of their instances.
// ErrNotFound when the state does not exist or no version ever held
// address.
func AddressHistory(ctx context.Context, e *kilolock.Engine, name, address string) ([]AddressChange, error) {
	if err := kilolock.ValidStateName(name); err != nil {
		return nil, err
	}
	ivs, err := e.Store().InstanceHistory(ctx, name, address)
	if err != nil {
		return nil, err
	}
	if len(ivs) == 0 {
		return nil, fmt.Errorf("no version of state %s ever held %s: %w", name, address, kilolock.ErrNotFound)
	}
	st, err := e.State(ctx, name)
	if err != nil {
		return nil, err
	}
	secrets := versionSecrets(ctx, e, name)
	// Intervals of one ID never overlap: an interval that begins where the
	// ID's previous one ended is a change, else an addition; one that ends
	// where no other begins is a removal.
	type key struct {
		id string
		at int64
	}
	starts := map[key]int{}
	for i := range ivs {
		starts[key{ivs[i].Instance.ID(), ivs[i].ValidFrom}] = i
	}
	var out []AddressChange
	for i := range ivs {
		iv := &ivs[i]
		id := iv.Instance.ID()
		if iv.ValidTo == 0 {
			continue
		}
		if j, ok := starts[key{id, iv.ValidTo}]; ok {
			s, err := secrets(iv.ValidTo)
			if err != nil {
				return nil, err
			}
			out = append(out, AddressChange{Version: kilolock.Version{Number: iv.ValidTo}, Address: id, Kind: "changed", Changes: graph.InstanceChanges(&iv.Instance, &ivs[j].Instance, s)})
			delete(starts, key{id, iv.ValidTo})
		} else {
			out = append(out, AddressChange{Version: kilolock.Version{Number: iv.ValidTo}, Address: id, Kind: "removed"})
		}
	}
	for k := range starts {
		out = append(out, AddressChange{Version: kilolock.Version{Number: k.at}, Address: k.id, Kind: "added"})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Version.Number != out[j].Version.Number {
			return out[i].Version.Number > out[j].Version.Number
		}
		return out[i].Address < out[j].Address
	})
	records := map[int64]*kilolock.Version{}
	for i := range out {
		n := out[i].Version.Number
		if records[n] == nil {
			if records[n], err = e.Resolve(ctx, st, kilolock.VersionRef{Kind: kilolock.RefNumber, N: uint64(n)}); err != nil {
				return nil, err
			}
		}
		out[i].Version = *records[n]
	}
	return out, nil
}

// versionSecrets returns what gives the secrets (graph.OutputSecrets) of
// the version that made a change and of the one before it, each version's
// read once: its outputs without a row of its instances where the store
// can (kilolock.IndexReader). A version retention pruned has no secrets
// left to read.
func versionSecrets(ctx context.Context, e *kilolock.Engine, name string) func(changedAt int64) (graph.Secrets, error) {
	read := map[int64]graph.Secrets{}
	of := func(n int64) (graph.Secrets, error) {
		if s, ok := read[n]; ok || n < 1 {
			return s, nil
		}
		var (
			snap *kilolock.Snapshot
			err  error
		)
		if ir, ok := e.Store().(kilolock.IndexReader); ok {
			snap, err = ir.SnapshotOutputs(ctx, name, n)
		} else {
			snap, err = e.Store().Snapshot(ctx, name, n)
		}
		if errors.Is(err, kilolock.ErrNotFound) {
			return graph.Secrets{}, nil
		}
		if err != nil {
			return graph.Secrets{}, err
		}
		read[n] = graph.OutputSecrets(snap.Outputs)
		return read[n], nil
	}
	return func(at int64) (graph.Secrets, error) {
		before, err := of(at - 1)
		if err != nil {
			return before, err
		}
		after, err := of(at)
		return before.Join(after), err
	}
}

// Rejections lists a state's refused commits, newest first: what the store
// recorded of each 409 or 403 a writer got (see kilolock.Rejection).
func Rejections(ctx context.Context, e *kilolock.Engine, name string, limit int) ([]kilolock.Rejection, error) {
	if err := kilolock.ValidStateName(name); err != nil {
		return nil, err
	}
	return e.Store().Rejections(ctx, name, limit)
}

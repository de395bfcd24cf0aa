package storekit

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/kilolock/kilolock"

	"github.com/kilolock/kilolock/graph"
)

// PreparedCommit is a Commit checked and reduced to what a store writes:
// one upsert per instance ID and per output name (the last one given),
// removals of what is not also upserted, each once, and hashes recomputed
// from the objects. The order is that of the Commit (an ID's first
// appearance for a repeated upsert).
type PreparedCommit struct {
	Upserts        []PreparedInstance
	Removed        []string // instance IDs
	OutputUpserts  []PreparedOutput
	OutputsRemoved []string // output names
}

// PreparedInstance is an upsert checked against its object: Instance is
// the Commit's own instance when its fields and hash are those
// graph.NewInstance reads from its resource and object (every instance a
// parse gives), else one rebuilt that way. It may be lean (its Object nil:
// Commit.Object reads it). It points into the Commit, so a PreparedCommit
// is valid only as long as its Commit is unchanged.
type PreparedInstance struct {
	Instance *graph.Instance
	ID       string // Instance.ID()
}

// PreparedOutput is an output whose hash was recomputed from its object,
// with the sensitive flag read from the object's JSON.
type PreparedOutput struct {
	Name      string
	Hash      graph.Hash
	Body      string // the compact JSON object
	Sensitive bool
}

// PrepareCommit checks c and reduces it to what a store writes. Stores call
// it outside their transaction, before CheckCommit runs inside it: the work
// (rebuilding and hashing every object) needs no state and holds no lock.
//
// It returns an *InvalidError (code "invalid_commit") when c is nil, when a
// serial does not fit an int64, when an upsert's object is malformed or
// names another instance than its ID, when a given Hash is not that of the
// object, or when an output has no name or a malformed object. A zero Hash
// is not checked. Hash is the address of the object's exact bytes, the key
// a store keeps its payload under (and checks every loaded body against):
// two spellings of one object are two payloads, each served back as it was
// sent. Whether an upsert is a change by meaning is decided before the
// commit, by the Engine (graph.Instance.Equal).
func PrepareCommit(c *kilolock.Commit) (*PreparedCommit, error) {
	if c == nil {
		return nil, &kilolock.InvalidError{Code: "invalid_commit", Message: "nil commit"}
	}
	if c.Version.Serial > math.MaxInt64 || c.Version.BaseSerial > math.MaxInt64 {
		return nil, invalidCommit("serial %d is out of range", max(c.Version.Serial, c.Version.BaseSerial))
	}
	p := &PreparedCommit{}
	if len(c.Upserts) > 0 {
		p.Upserts = make([]PreparedInstance, 0, len(c.Upserts))
	}
	upserted := make(map[string]int, len(c.Upserts))
	for i := range c.Upserts {
		in, id, err := checkUpsert(&c.Upserts[i])
		if err != nil {
			return nil, err
		}
		if j, ok := upserted[id]; ok {
			p.Upserts[j].Instance = in
			continue
		}
		upserted[id] = len(p.Upserts)
		p.Upserts = append(p.Upserts, PreparedInstance{Instance: in, ID: id})
	}
	seen := map[string]bool{}
	for _, id := range c.Removed {
		if _, ok := upserted[id]; ok || seen[id] {
			continue
		}
		seen[id] = true
		p.Removed = append(p.Removed, id)
	}

	outputs := make(map[string]int, len(c.OutputUpserts))
	for _, o := range c.OutputUpserts {
		if o.Name == "" {
			return nil, invalidCommit("an output has no name")
		}
		var head struct {
			Sensitive bool `json:"sensitive"`
		}
		if err := json.Unmarshal(o.Object, &head); err != nil {
			return nil, invalidCommit("output %s: %v", o.Name, err)
		}
		out := graph.NewOutput(o.Name, o.Object)
		if !o.Hash.IsZero() && o.Hash != out.Hash {
			return nil, invalidCommit("output %s: hash %s is not the hash of its object (%s)", o.Name, o.Hash, out.Hash)
		}
		po := PreparedOutput{Name: o.Name, Hash: out.Hash, Body: string(o.Object), Sensitive: head.Sensitive}
		if i, ok := outputs[o.Name]; ok {
			p.OutputUpserts[i] = po
			continue
		}
		outputs[o.Name] = len(p.OutputUpserts)
		p.OutputUpserts = append(p.OutputUpserts, po)
	}
	clear(seen)
	for _, name := range c.OutputsRemoved {
		if _, ok := outputs[name]; ok || seen[name] {
			continue
		}
		seen[name] = true
		p.OutputsRemoved = append(p.OutputsRemoved, name)
	}
	return p, nil
}

// checkUpsert checks in against its object and returns it (or, when a
// field differs from what the object says, an instance rebuilt from it)
// with its ID. Rebuilt to be checked, it is kept only when it differs: a
// first write of a large state would otherwise hold every instance twice
// while the store writes them. A lean instance was made by a parse from
// the object it checked; the store reads the object back as it writes
// it, checking its hash (Commit.Object).
func checkUpsert(in *graph.Instance) (*graph.Instance, string, error) {
	if in.IsLean() {
		return in, in.ID(), nil
	}
	inst, err := graph.NewInstance(in.Resource, in.Object)
	if err != nil {
		return nil, "", invalidCommit("%v", err)
	}
	id := inst.ID()
	// Both have in's resource, so equal keys give equal IDs: the claimed
	// ID is built only when they differ.
	if (in.Key != inst.Key || in.Deposed != inst.Deposed) && in.ID() != id {
		return nil, "", invalidCommit("instance %s: its object says it is %s", in.ID(), id)
	}
	if !in.Hash.IsZero() && in.Hash != inst.Hash {
		return nil, "", invalidCommit("instance %s: hash %s is not the hash of its object (%s)", id, in.Hash, inst.Hash)
	}
	if !sameHead(in, &inst) {
		in = &inst
	}
	return in, id, nil
}

// sameHead reports whether in holds what graph.NewInstance read from its
// object into want: the hash and every field a store keeps.
func sameHead(in, want *graph.Instance) bool {
	return in.Hash == want.Hash && in.Key == want.Key && in.Deposed == want.Deposed &&
		in.Status == want.Status && slices.Equal(in.Dependencies, want.Dependencies)
}

// EncodeRejection checks r for a store's RecordRejection and returns its
// Addresses as the JSON array stores keep ("[]" for none). A nil r, or a
// serial above math.MaxInt64, is an *InvalidError (code
// "invalid_rejection").
func EncodeRejection(r *kilolock.Rejection) (addresses string, err error) {
	switch {
	case r == nil:
		return "", &kilolock.InvalidError{Code: "invalid_rejection", Message: "nil rejection"}
	case r.LatestSerial > math.MaxInt64 || r.BaseSerial > math.MaxInt64:
		return "", &kilolock.InvalidError{Code: "invalid_rejection", Message: fmt.Sprintf("serial %d is out of range", max(r.LatestSerial, r.BaseSerial))}
	}
	b, err := json.Marshal(nonNilStrings(r.Addresses))
	if err != nil {
		return "", &kilolock.InvalidError{Code: "invalid_rejection", Message: err.Error()}
	}
	return string(b), nil
}

// DecodeAddresses reads back the Addresses EncodeRejection encoded: never
// nil.
func DecodeAddresses(stored string) ([]string, error) {
	var a []string
	if err := json.Unmarshal([]byte(stored), &a); err != nil {
		return nil, fmt.Errorf("stored rejection addresses: %v", err)
	}
	return nonNilStrings(a), nil
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// invalidCommit is the answer to a commit whose parts the Engine would not
// have built (see kilolock.Commit.Object, which answers so too).
func invalidCommit(format string, args ...any) error {
	return &kilolock.InvalidError{Code: "invalid_commit", Message: fmt.Sprintf(format, args...), Hint: "build instances with graph.NewInstance and outputs with graph.NewOutput"}
}

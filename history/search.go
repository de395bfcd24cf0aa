package history

import (
	"bytes"
	"context"
	"strings"

	"github.com/kilolock/kilolock"

	"github.com/kilolock/kilolock/graph"
)

// DefaultSearchLimit is how many matches Search returns when
// SearchQuery.Limit is 0.
const DefaultSearchLimit = 500

// SearchQuery selects instance objects of a state's current version: each
// field that is set must match.
type SearchQuery struct {
	// Type is a resource type, matched exactly (`aws_instance`).
	Type string `json:"type,omitempty"`
	// Name is part of a resource name, matched without regard to case.
	Name string `json:"name,omitempty"`
	// Address is a pattern as StateList takes it: `module.net`,
	// `aws_instance.web`, `module.*.aws_subnet.*`.
	Address string `json:"address,omitempty"`
	// Text is part of the instance's attributes (keys or values) as JSON,
	// matched without regard to case, with sensitive values masked first:
	// a secret is never found by its value.
	Text string `json:"text,omitempty"`
	// Limit is the most matches returned (0: DefaultSearchLimit); Total
	// still counts them all.
	Limit int `json:"limit,omitempty"`
}

// SearchResult is what Search found.
type SearchResult struct {
	Version kilolock.Version  `json:"version"`
	Matches []InstanceSummary `json:"matches"`
	// Total counts every match; more than len(Matches) when the limit cut
	// the list.
	Total int `json:"total"`
}

// Search lists the instance objects of a state's current version that
// match q, in state order. Its cost is one pass over the current version
// (cached), plus decoding the attributes of the instances the other fields
// let through when q.Text is set. Errors as for StateList.
func Search(ctx context.Context, e *kilolock.Engine, name string, q SearchQuery) (*SearchResult, error) {
	g, v, err := e.Graph(ctx, name)
	if err != nil {
		return nil, err
	}
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultSearchLimit
	}
	match := addressMatcher(q.Address)
	nameLower, text := strings.ToLower(q.Name), []byte(strings.ToLower(q.Text))
	res := &SearchResult{Version: *v, Matches: []InstanceSummary{}}
	secrets := graph.OutputSecrets(g.Outputs)
	for i := range g.Instances {
		in := &g.Instances[i]
		if q.Type != "" && in.Resource.Type != q.Type ||
			q.Name != "" && !strings.Contains(strings.ToLower(in.Resource.Name), nameLower) ||
			!match(in.Address()) {
			continue
		}
		if len(text) > 0 && !attributesContain(in, secrets, text) {
			continue
		}
		res.Total++
		if len(res.Matches) < limit {
			res.Matches = append(res.Matches, Summarize(in))
		}
	}
	return res, nil
}

// attributesContain reports whether the attributes of in, as JSON and
// masked as the views show them, contain lower (lowercase): a search never
// finds an instance by a secret it would not show.
func attributesContain(in *graph.Instance, secrets graph.Secrets, lower []byte) bool {
	m, err := graph.MaskedObject(in.Object, secrets)
	if err != nil {
		return false
	}
	b, err := graph.EncodeJSON(m["attributes"])
	if err != nil {
		return false
	}
	return bytes.Contains(bytes.ToLower(b), lower)
}

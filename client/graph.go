package client

import (
	"context"
	"net/http"
	"strconv"

	"github.com/kilolock/kilolock/history"
)

// ConeOptions choose a dependency cone: the version (Ref "" for the
// latest), which way it follows edges (history.Dependencies, the zero
// value, or history.Dependents: the blast radius) and how far (Depth 0:
// every edge away).
type ConeOptions struct {
	Ref       string
	Direction history.Direction
	Depth     int
}

// Cone is the dependency cone of addresses (GET /v1/api/states/NAME/graph).
func (c *Client) Cone(ctx context.Context, name string, addresses []string, o ConeOptions) (*history.ConeView, error) {
	q := refQuery(o.Ref)
	q["address"] = addresses
	q.Set("direction", o.Direction.String())
	if o.Depth > 0 {
		q.Set("depth", strconv.Itoa(o.Depth))
	}
	var out history.ConeView
	return &out, c.do(ctx, request{method: http.MethodGet, path: apiState(name) + "/graph", query: q, state: name}, &out)
}

// Slice opens a state file holding addresses and their cone (history.
// SliceDependencies, the default, SliceDependents or SliceNone), every
// output, the version's lineage and serial; ref "" is the latest (GET
// /v1/api/states/NAME/slice). Close it.
func (c *Client) Slice(ctx context.Context, name, ref string, addresses []string, cone history.SliceCone) (*StateFile, error) {
	q := refQuery(ref)
	q["address"] = addresses
	if cone != "" {
		q.Set("cone", string(cone))
	}
	return c.stateFile(ctx, request{method: http.MethodGet, path: apiState(name) + "/slice", query: q, state: name})
}

package quota

import (
	tfjson "github.com/hashicorp/terraform-json"
)

// Counts reports whether an instance object counts toward a quota: a
// managed resource's current object. Data sources do not count, nor do
// deposed objects: a create_before_destroy replacement holds both objects
// only while it runs, so it never spikes past a limit it fits at rest.
func Counts(mode, deposed string) bool { return mode == "managed" && deposed == "" }

// PlanChanges are a plan's changes to what quotas count: managed
// resources' current objects.
type PlanChanges struct {
	Create  int64 `json:"create"`
	Delete  int64 `json:"delete"` // forgotten ones included
	Replace int64 `json:"replace"`
}

// Delta is how many managed instances the changes add: +1 for each
// create, -1 for each delete, 0 for a replace.
func (c PlanChanges) Delta() int64 { return c.Create - c.Delete }

// CountPlan counts a plan's changes as quotas do: creates, deletes (and
// forgets) and replaces of managed resources' current objects; updates,
// reads, data sources and changes to deposed objects count nothing.
func CountPlan(p *tfjson.Plan) PlanChanges {
	var c PlanChanges
	for _, rc := range p.ResourceChanges {
		if rc == nil || rc.Change == nil || rc.Mode != tfjson.ManagedResourceMode || rc.DeposedKey != "" {
			continue
		}
		a := rc.Change.Actions
		switch {
		case a.Replace():
			c.Replace++
		case a.Create():
			c.Create++
		case a.Delete(), a.Forget():
			c.Delete++
		}
	}
	return c
}

// PlanDelta is how many managed instances a plan adds to its state:
// CountPlan(p).Delta().
func PlanDelta(p *tfjson.Plan) int64 { return CountPlan(p).Delta() }

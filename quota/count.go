package quota

import (
	tfjson "github.com/hashicorp/terraform-json"
)

// Counts reports whether an instance object counts toward a quota: a
// managed resource's current object. Data sources do not count, nor do
// deposed objects: a create_before_destroy replacement holds both objects
// only while it runs, so it never spikes past a limit it fits at rest.
func Counts(mode, deposed string) bool { return mode == "managed" && deposed == "" }

// PlanDelta is how many managed instances a plan adds to its state:
// +1 for each create, -1 for each delete (and forget), 0 for a replace, an
// update, a read or a change to a deposed object.
func PlanDelta(p *tfjson.Plan) int64 {
	var d int64
	for _, rc := range p.ResourceChanges {
		if rc == nil || rc.Change == nil || rc.Mode != tfjson.ManagedResourceMode || rc.DeposedKey != "" {
			continue
		}
		a := rc.Change.Actions
		switch {
		case a.Replace():
		case a.Create():
			d++
		case a.Delete(), a.Forget():
			d--
		}
	}
	return d
}

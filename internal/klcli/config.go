package klcli

import (
	"context"
	"fmt"
)

// StateConfigJSON is the JSON output of SetAllowLineageChange.
type StateConfigJSON struct {
	OK                 bool   `json:"ok"`
	State              string `json:"state"`
	AllowLineageChange bool   `json:"allow_lineage_change"`
}

// SetAllowLineageChange allows (or forbids again) the next writes to a state
// to carry another lineage, for a deliberate `state push -force` of a state
// from another lineage.
func (c *CLI) SetAllowLineageChange(ctx context.Context, name string, allow bool) error {
	if err := c.Backend.SetAllowLineageChange(ctx, name, allow); err != nil {
		return err
	}
	if c.JSON {
		return c.writeJSON(StateConfigJSON{OK: true, State: name, AllowLineageChange: allow})
	}
	var err error
	if allow {
		_, err = fmt.Fprintf(c.Out, "state %s: lineage change allowed; the next write may carry another lineage\n", name)
	} else {
		_, err = fmt.Fprintf(c.Out, "state %s: lineage change refused; writes must keep the stored lineage\n", name)
	}
	return err
}

package history

import (
	"context"
	"fmt"
	"strings"

	"github.com/kilolock/kilolock"
)

// moveWarning is what a rollback of state name to version target must
// say about the moves it would undo on this side alone: the other state
// still holds (or still lacks) what moved, and the reverse move to run
// instead. "" when no move of name is newer than target, or the store
// keeps no moves.
func moveWarning(ctx context.Context, e *kilolock.Engine, name string, target int64) string {
	ms, ok := e.Store().(MoveStore)
	if !ok {
		return ""
	}
	recs, err := ms.Moves(ctx, name)
	if err != nil {
		e.Logger().Warn("reading a state's moves for a rollback warning failed", "state", name, "err", err)
		return ""
	}
	var parts []string
	for _, m := range recs {
		switch {
		case m.From == name && m.FromVersion > target:
			parts = append(parts, fmt.Sprintf("@%d moved %d instance(s) to %s (%s @%d), which still holds them: rolling back %s alone would put them in both states; "+
				"move them back instead with `kl state mv %s --from ADDR --to-state %s` (`kl diff %s @%d @%d` lists them)",
				m.FromVersion, m.Instances, m.To, m.To, m.ToVersion, name, m.To, name, name, m.FromVersion-1, m.FromVersion))
		case m.To == name && m.ToVersion > target:
			parts = append(parts, fmt.Sprintf("@%d received %d instance(s) from %s (%s @%d), which no longer holds them: rolling back %s alone would leave them in neither state; "+
				"move them back instead with `kl state mv %s --from ADDR --to-state %s` (`kl diff %s @%d @%d` lists them)",
				m.ToVersion, m.Instances, m.From, m.From, m.FromVersion, name, name, m.From, name, m.ToVersion-1, m.ToVersion))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "Moves between states since then: " + strings.Join(parts, "; ") + "."
}

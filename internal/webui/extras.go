package webui

import (
	"context"

	"github.com/kilolock/kilolock/drift"
)

// Extras are what other parts of the engine add to the pages. Each is a
// small function the page calls when it is set; a nil one hides its
// column, so a feature lands by setting one field in httpbackend.
type Extras struct {
	// DriftCounts returns, for the states named (internal names), how many
	// instances the latest drift check found drifted; a state missing
	// from the map has never been checked. Shown as a column of the
	// states page.
	DriftCounts func(ctx context.Context, names []string) (map[string]int, error)
	// Tags returns a state's tags by the version number they name, shown
	// on the versions of the timeline.
	Tags func(ctx context.Context, name string) (map[int64][]string, error)
	// Drift returns a state's open drift records (masked), shown on its
	// page.
	Drift func(ctx context.Context, name string) ([]drift.DriftRecord, error)
}

package history

import (
	"cmp"

	"github.com/kilolock/kilolock"
)

// PrunedOnPage returns the runs of pruned versions that a page of history
// (page, asked with opts) shows among its versions, from all the runs
// below opts.Before: those above the page's oldest version and, on the
// last page (fewer versions than the limit), those below it too.
func PrunedOnPage(all []kilolock.PrunedRange, page []kilolock.Version, opts kilolock.HistoryOptions) []kilolock.PrunedRange {
	if len(page) < cmp.Or(opts.Limit, 50) {
		return all
	}
	oldest := page[len(page)-1].Number
	var out []kilolock.PrunedRange
	for _, p := range all {
		if p.From > oldest {
			out = append(out, p)
		}
	}
	return out
}

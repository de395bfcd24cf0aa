package history_test

import (
	"fmt"
	"testing"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/history"
)

// TestPrunedOnPage: a full page shows the pruned runs above its oldest
// version, the last page every run below Before.
func TestPrunedOnPage(t *testing.T) {
	all := []kilolock.PrunedRange{{From: 9, To: 9}, {From: 5, To: 7}, {From: 1, To: 2}}
	page := []kilolock.Version{{Number: 10}, {Number: 8}, {Number: 4}}
	for _, tc := range []struct {
		opts kilolock.HistoryOptions
		want string
	}{
		{kilolock.HistoryOptions{Limit: 3}, "[@9 @5-@7]"},
		{kilolock.HistoryOptions{Limit: 4}, "[@9 @5-@7 @1-@2]"},
		{kilolock.HistoryOptions{}, "[@9 @5-@7 @1-@2]"}, // the default limit, 50
	} {
		if got := fmt.Sprint(history.PrunedOnPage(all, page, tc.opts)); got != tc.want {
			t.Errorf("limit %d: %s, want %s", tc.opts.Limit, got, tc.want)
		}
	}
	if got := history.PrunedOnPage(all, page[:1], kilolock.HistoryOptions{Limit: 1}); len(got) != 0 {
		t.Errorf("a full page of @10 alone: %v, want no run (all are below it)", got)
	}
}

package kilolock

import (
	"slices"
	"testing"
)

// TestKeptAround: the versions an error about a pruned one names are the
// kept ones nearest to it, across runs of other policies that touch it,
// and the kept runs it lists leave every pruned one out, clipped when
// there are many.
func TestKeptAround(t *testing.T) {
	runs := func(rs ...[2]int64) []PrunedRange { // newest first, as the store lists them
		var out []PrunedRange
		for i := len(rs) - 1; i >= 0; i-- {
			out = append(out, PrunedRange{From: rs[i][0], To: rs[i][1]})
		}
		return out
	}
	tests := []struct {
		name        string
		pruned      []PrunedRange
		in          int // index into pruned, -1 for none
		first, last int64
		nearest     []int64
		kept        string
	}{
		{"inside", runs([2]int64{3, 5}), 0, 1, 9, []int64{2, 6}, "@1…@2, @6…@9"},
		{"adjacent runs of two policies", runs([2]int64{3, 5}, [2]int64{6, 7}), 1, 1, 9, []int64{2, 8}, "@1…@2, @8…@9"},
		{"the first ones", runs([2]int64{1, 4}), 0, 5, 9, []int64{5}, ""},
		{"no reference", runs([2]int64{1, 1}, [2]int64{3, 3}), -1, 2, 5, nil, "@2, @4…@5"},
		{"many islands", runs([2]int64{2, 2}, [2]int64{4, 4}, [2]int64{6, 6}, [2]int64{8, 8}, [2]int64{10, 10}, [2]int64{12, 12}, [2]int64{14, 14}), 3, 1, 15,
			[]int64{7, 9}, "@1, @3, @5, …, @11, @13, @15"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var in *PrunedRange
			if tt.in >= 0 {
				in = &tt.pruned[tt.in]
			}
			nearest, kept := keptAround(tt.pruned, in, tt.first, tt.last)
			if !slices.Equal(nearest, tt.nearest) || kept != tt.kept {
				t.Errorf("keptAround = %v, %q; want %v, %q", nearest, kept, tt.nearest, tt.kept)
			}
		})
	}
}

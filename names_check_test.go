package kilolock

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// TestNameChecksAreTheirPatterns: the loops that check state names and ids
// on every request accept exactly what their documented patterns do, over
// random strings of the characters at their edges and of every length up
// to past their bounds.
func TestNameChecksAreTheirPatterns(t *testing.T) {
	stateName := regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)
	id := regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	const alphabet = "aZ09._-/\n \x00é@+:"
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		n := rng.IntN(140)
		if rng.IntN(4) == 0 {
			n = rng.IntN(4)
		}
		var b strings.Builder
		for range n {
			if rng.IntN(3) == 0 {
				b.WriteByte(alphabet[rng.IntN(len(alphabet))])
			} else {
				b.WriteByte("abcXYZ0189_-."[rng.IntN(13)])
			}
		}
		s := b.String()
		if got, want := validStateName(s), stateName.MatchString(s); got != want {
			t.Fatalf("validStateName(%q) = %v, the pattern says %v", s, got, want)
		}
		if got, want := validID(s), id.MatchString(s); got != want {
			t.Fatalf("validID(%q) = %v, the pattern says %v", s, got, want)
		}
	}
}

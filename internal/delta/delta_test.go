package delta

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

func roundTrip(t testing.TB, base, target []byte) []byte {
	t.Helper()
	d := Make(base, target)
	got, err := Apply(base, d)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if !bytes.Equal(got, target) {
		t.Fatalf("Apply(Make) gave %d bytes, not the %d of the target", len(got), len(target))
	}
	return d
}

// document is a state-like text: many similar lines, each unique.
func document(rng *rand.Rand, lines int) []byte {
	var b bytes.Buffer
	for i := range lines {
		b.WriteString(`        {"index_key": `)
		b.WriteString(strings.Repeat("x", rng.IntN(8)))
		b.WriteString(`, "id": "`)
		for range 16 {
			b.WriteByte("0123456789abcdef"[rng.IntN(16)])
		}
		b.WriteString(`", "n": `)
		b.WriteString(string(rune('0' + i%10)))
		b.WriteString("}\n")
	}
	return b.Bytes()
}

// TestDeltaIsSmallForLocalEdits: a target that differs from its base in a
// few places, some growing and some shrinking, costs about those places.
func TestDeltaIsSmallForLocalEdits(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	base := document(rng, 20000) // about 1.3 MB
	for _, tc := range []struct {
		name  string
		edit  func([]byte) []byte
		limit int
	}{
		{"identical", func(b []byte) []byte { return bytes.Clone(b) }, 64},
		{"five replacements", func(b []byte) []byte {
			out := bytes.Clone(b)
			for _, at := range []int{1000, 300000, 600000, 900000, 1200000} {
				copy(out[at:], "CHANGED-CHANGED-CHANGED")
			}
			return out
		}, 5*(24+64) + 200},
		{"insertions and deletions", func(b []byte) []byte {
			out := append([]byte{}, b[:400000]...)
			out = append(out, strings.Repeat("inserted ", 100)...)
			out = append(out, b[400500:800000]...)
			return append(out, b[800100:]...)
		}, 900 + 2*64 + 200},
		{"new prefix", func(b []byte) []byte { return append([]byte("{\n  \"new\": 1,\n"), b...) }, 200},
		{"truncated", func(b []byte) []byte { return bytes.Clone(b[:len(b)/2]) }, 64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target := tc.edit(base)
			d := roundTrip(t, base, target)
			if len(d) > tc.limit {
				t.Errorf("delta of %d bytes for a %d-byte target; want at most %d", len(d), len(target), tc.limit)
			}
		})
	}
}

// TestDeltaRepetitive: a base so regular that no position is an anchor
// still gets its common prefix and suffix copied around one edit.
func TestDeltaRepetitive(t *testing.T) {
	base := []byte(strings.Repeat(`{"index_key":1,"schema_version":0,"attributes":{"id":"abcdefghij"}},`, 2000))
	mid := len(base) / 2
	target := append(append(bytes.Clone(base[:mid]), "an edit in the middle"...), base[mid+7:]...)
	if d := roundTrip(t, base, target); len(d) > 200 {
		t.Errorf("delta of %d bytes for one edit of a %d-byte repetitive base", len(d), len(base))
	}
}

func TestDeltaUnrelated(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	base, target := document(rng, 1000), document(rng, 1000)
	if d := roundTrip(t, base, target); len(d) > len(target)+64 {
		t.Errorf("delta of %d bytes for an unrelated %d-byte target", len(d), len(target))
	}
	roundTrip(t, nil, target)
	roundTrip(t, base, nil)
	roundTrip(t, nil, nil)
	roundTrip(t, []byte("short"), []byte("shorter"))
}

// TestApplyRefusesAnotherBase: a delta applied to a base other than its
// own is an error, not other bytes, even when the lengths agree.
func TestApplyRefusesAnotherBase(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	base := document(rng, 2000)
	target := append(bytes.Clone(base[:5000]), base[6000:]...)
	d := Make(base, target)
	other := bytes.Clone(base)
	other[100] ^= 1
	for name, b := range map[string][]byte{"same length, one bit": other, "shorter": base[:len(base)-1], "empty": nil} {
		if _, err := Apply(b, d); !errors.Is(err, ErrMismatch) {
			t.Errorf("%s: Apply = %v, want ErrMismatch", name, err)
		}
	}
	for i := range d {
		bad := bytes.Clone(d)
		bad[i] ^= 0x40
		if out, err := Apply(base, bad); err == nil && !bytes.Equal(out, target) {
			t.Fatalf("byte %d flipped: Apply gave other bytes without an error", i)
		}
	}
	if _, err := Apply(base, d[:len(d)-1]); err == nil {
		t.Error("a truncated delta applied")
	}
}

// FuzzDelta: Apply(Make) is the identity, and Apply of any bytes never
// panics nor allocates past what the base and the delta could make.
func FuzzDelta(f *testing.F) {
	rng := rand.New(rand.NewPCG(7, 8))
	doc := document(rng, 40)
	f.Add(doc, append(bytes.Clone(doc[:500]), doc[700:]...), []byte{})
	f.Add([]byte("abc"), []byte("abcd"), []byte(magic+"\x03\x04"))
	f.Add([]byte{}, []byte("x"), Make([]byte("aaaa"), []byte("aaab")))
	f.Add(doc, doc, Make(doc, append([]byte("x"), doc...)))
	f.Fuzz(func(t *testing.T, base, target, junk []byte) {
		roundTrip(t, base, target)
		Apply(base, junk) // must not panic
	})
}

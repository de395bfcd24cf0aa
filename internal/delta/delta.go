// Package delta encodes one byte string as a delta against another: copies
// of runs of the base and literal bytes in between. The engine stores a
// posted state that rendering its rows does not reproduce as such a delta
// against that rendering, which for a CLI's document with a few objects
// another writer spelled is the size of those objects, not of the state.
//
//	d := delta.Make(base, target)
//	out, err := delta.Apply(base, d) // out == target
//
// Make finds common runs through content-defined anchors (a rolling hash
// over the last bytes, one anchor about every 64 bytes), so matches are
// found again after an insertion or deletion of any length; its cost is
// linear in the two inputs, with an index of len(base)/16 to len(base)/8
// bytes.
// Apply checks that it was given the base the delta was made against and
// that the result is the target (length and CRC-32C), so a wrong base is an
// error, never wrong bytes.
package delta

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/bits"
)

// magic starts every delta, with the format version.
const magic = "kldelta1"

// minMatch is the shortest run of the base worth a copy: shorter ones are
// literal bytes, which cost no more.
const minMatch = 32

// anchorMask selects anchor positions: where the rolling hash has these
// bits clear, about one position in 64.
const anchorMask = 63 << 58

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// gear maps each byte to a pseudo-random word for the rolling hash, whose
// value at a position depends on the 64 bytes before it.
var gear = func() (g [256]uint64) {
	x := uint64(0x9E3779B97F4A7C15)
	for i := range g {
		// splitmix64
		x += 0x9E3779B97F4A7C15
		z := x
		z = (z ^ z>>30) * 0xBF58476D1CE4E5B9
		z = (z ^ z>>27) * 0x94D049BB133111EB
		g[i] = z ^ z>>31
	}
	return g
}()

// Make returns a delta that turns base into target.
func Make(base, target []byte) []byte {
	d := append(make([]byte, 0, 64), magic...)
	d = binary.AppendUvarint(d, uint64(len(base)))
	d = binary.AppendUvarint(d, uint64(len(target)))
	d = binary.LittleEndian.AppendUint32(d, crc32.Checksum(target, castagnoli))

	idx := index(base)
	var (
		lit     int // start of the literal bytes not yet written
		lastEnd int // end of the last copy in base, to encode offsets small
		h       uint64
	)
	emit := func(end, from, n int) {
		d = binary.AppendUvarint(d, uint64(end-lit))
		d = append(d, target[lit:end]...)
		d = binary.AppendUvarint(d, uint64(n))
		if n > 0 {
			d = binary.AppendVarint(d, int64(from-lastEnd))
			lastEnd = from + n
		}
	}
	// The common prefix and suffix need no anchor (and a document without
	// anchors, such as a highly repetitive one, still gets them).
	if n := common(base, target); n >= minMatch {
		emit(0, 0, n)
		lit = n
	}
	suffix := commonSuffix(base[lit:], target[lit:])
	if suffix < minMatch {
		suffix = 0
	}
	end := len(target) - suffix
	for i := lit; i < end; {
		h = h<<1 + gear[target[i]]
		i++
		if h&anchorMask != 0 || idx.slots == nil {
			continue
		}
		p := int(idx.slots[idx.slot(h)]) - 1
		if p < 0 || i-minMatch < lit || p < minMatch || string(base[p-minMatch:p]) != string(target[i-minMatch:i]) {
			continue
		}
		// Extend the match both ways, backwards no further than the
		// literal bytes already written.
		s, b := i-minMatch, p-minMatch
		for s > lit && b > 0 && target[s-1] == base[b-1] {
			s, b = s-1, b-1
		}
		n := (i - s) + common(base[p:], target[i:])
		emit(s, b, n)
		lit, i, h = s+n, s+n, 0
	}
	if suffix > 0 && lit < len(target) {
		// A match may have run into the suffix: what is left of it is
		// still the end of the base.
		at := max(lit, end)
		emit(at, len(base)-(len(target)-at), len(target)-at)
	} else {
		emit(len(target), 0, 0)
	}
	return d
}

// commonSuffix returns the length of the common suffix of a and b.
func commonSuffix(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for i+8 <= n && binary.LittleEndian.Uint64(a[len(a)-i-8:]) == binary.LittleEndian.Uint64(b[len(b)-i-8:]) {
		i += 8
	}
	for i < n && a[len(a)-i-1] == b[len(b)-i-1] {
		i++
	}
	return i
}

// common returns the length of the common prefix of a and b.
func common(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for i+8 <= n {
		x := binary.LittleEndian.Uint64(a[i:]) ^ binary.LittleEndian.Uint64(b[i:])
		if x != 0 {
			return i + bits.TrailingZeros64(x)/8
		}
		i += 8
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

// anchors maps rolling hash values at anchor positions of the base (the
// end of the bytes hashed) to those positions plus one (0 is empty), the
// first one seen winning: an
// open table without probing, since a wrong candidate is caught by
// comparing bytes.
type anchors struct {
	slots []uint32
	shift uint
}

// slot is where a hash goes: its top bits are those anchorMask cleared,
// so they are mixed with the rest first.
func (a *anchors) slot(h uint64) uint64 { return (h * 0x9E3779B97F4A7C15) >> a.shift }

func index(base []byte) anchors {
	if len(base) < minMatch || len(base) >= 1<<32-2 {
		return anchors{}
	}
	size := 1 << bits.Len(uint(len(base)/64)) // one or two slots per anchor
	// A shift of 64 (one slot) gives 0, as Go defines it.
	a := anchors{slots: make([]uint32, size), shift: uint(64 - bits.TrailingZeros(uint(size)))}
	var h uint64
	for i, c := range base {
		h = h<<1 + gear[c]
		if end := i + 1; h&anchorMask == 0 && end >= minMatch {
			if s := &a.slots[a.slot(h)]; *s == 0 {
				*s = uint32(end + 1)
			}
		}
	}
	return a
}

// ErrMismatch is a delta applied to another base than the one it was made
// against, or a damaged one.
var ErrMismatch = errors.New("delta does not apply to this base")

// Apply returns the target the delta d was made for, given its base. A
// malformed delta, or a base or result other than the ones it was made for,
// is an error wrapping ErrMismatch.
func Apply(base, d []byte) ([]byte, error) {
	fail := func(what string) ([]byte, error) {
		return nil, fmt.Errorf("%w: %s", ErrMismatch, what)
	}
	if len(d) < len(magic) || string(d[:len(magic)]) != magic {
		return fail("not a delta")
	}
	d = d[len(magic):]
	baseLen, n := binary.Uvarint(d)
	if n <= 0 {
		return fail("truncated")
	}
	d = d[n:]
	targetLen, n := binary.Uvarint(d)
	if n <= 0 || len(d[n:]) < 4 {
		return fail("truncated")
	}
	d = d[n:]
	sum := binary.LittleEndian.Uint32(d)
	d = d[4:]
	if baseLen != uint64(len(base)) {
		return fail(fmt.Sprintf("made against %d bytes, given %d", baseLen, len(base)))
	}
	// The declared length bounds the output, but is not trusted for the
	// allocation beyond what the base and the literals could make.
	out := make([]byte, 0, min(targetLen, uint64(len(base)+len(d))))
	lastEnd := 0
	for len(d) > 0 {
		litLen, n := binary.Uvarint(d)
		if n <= 0 || litLen > uint64(len(d[n:])) || uint64(len(out))+litLen > targetLen {
			return fail("bad literal")
		}
		out = append(out, d[n:n+int(litLen)]...)
		d = d[n+int(litLen):]
		copyLen, n := binary.Uvarint(d)
		if n <= 0 {
			return fail("truncated")
		}
		d = d[n:]
		if copyLen == 0 {
			continue
		}
		off, n := binary.Varint(d)
		if n <= 0 {
			return fail("truncated")
		}
		d = d[n:]
		from := int64(lastEnd) + off
		if from < 0 || copyLen > uint64(len(base)) || from > int64(len(base))-int64(copyLen) || uint64(len(out))+copyLen > targetLen {
			return fail("bad copy")
		}
		out = append(out, base[from:from+int64(copyLen)]...)
		lastEnd = int(from) + int(copyLen)
	}
	if uint64(len(out)) != targetLen || crc32.Checksum(out, castagnoli) != sum {
		return fail("the result is not the target")
	}
	return out, nil
}

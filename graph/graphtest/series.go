package graphtest

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
)

// Series makes successive versions of a document in the layout of
// Generate's output, each with two instances' input values changed by one
// letter and the serial one higher, by editing bytes: Change re-encodes
// the whole document per version, which would make benchmarks of large
// states wait on their fixtures.
type Series struct {
	head   []byte // through `"serial": ` (`"serial":` in FormatCompact)
	serial uint64
	tail   []byte // after the serial's digits
	values []int  // offsets in tail of each instance's first input letter
	step   int
}

// NewSeries reads doc, a document Generate wrote (in either format), as
// the first version of a series.
func NewSeries(doc []byte) (*Series, error) {
	j, k, serial, err := serialAt(doc)
	if err != nil {
		return nil, fmt.Errorf("series: %w", err)
	}
	s := &Series{head: doc[:j], serial: serial, tail: doc[k:]}
	sep := ": "
	if doc[j-1] == ':' {
		sep = ":" // FormatCompact
	}
	input, value := []byte(`"input"`+sep+`{`), []byte(`"value"`+sep+`"`)
	for off := 0; ; {
		k := bytes.Index(s.tail[off:], input)
		if k < 0 {
			break
		}
		off += k
		v := bytes.Index(s.tail[off:], value)
		if v < 0 {
			return nil, errors.New("series: input without value")
		}
		off += v + len(value)
		if c := s.tail[off]; c < 'a' || c > 'z' {
			return nil, fmt.Errorf("series: input value starts with %q", c)
		}
		s.values = append(s.values, off)
	}
	if len(s.values) < 2 {
		return nil, fmt.Errorf("series: %d instances, want at least 2", len(s.values))
	}
	return s, nil
}

// Len is the number of instances of the series' document.
func (s *Series) Len() int { return len(s.values) }

// Serial is the serial of the last version Next returned (of the first
// document before any).
func (s *Series) Serial() uint64 { return s.serial }

// Next returns the next version: a new slice every time, as a server may
// keep the bytes it was given.
func (s *Series) Next() []byte {
	s.step++
	tail := bytes.Clone(s.tail)
	n := len(s.values)
	for _, k := range [2]int{(s.step * 7919) % n, (s.step*104729 + n/2) % n} {
		o := s.values[k]
		tail[o] = 'a' + (tail[o]-'a'+1)%26
	}
	s.tail = tail
	s.serial++
	doc := make([]byte, 0, len(s.head)+20+len(tail))
	doc = append(doc, s.head...)
	doc = strconv.AppendUint(doc, s.serial, 10)
	return append(doc, tail...)
}

// Edit returns doc, a version of the series' document in the same layout
// (what a GET answers), with the input values of the instances at the
// given positions changed by one letter and the serial one higher: what a
// writer that read doc and changed those instances POSTs.
func (s *Series) Edit(doc []byte, which ...int) ([]byte, error) {
	j, k, serial, err := serialAt(doc)
	if err != nil {
		return nil, fmt.Errorf("edit: %w", err)
	}
	if len(doc)-k != len(s.tail) || j != len(s.head) {
		return nil, fmt.Errorf("edit: the document is not laid out as the series' (%d bytes after the serial, want %d)", len(doc)-k, len(s.tail))
	}
	out := make([]byte, 0, len(doc)+1)
	out = append(out, doc[:j]...)
	out = strconv.AppendUint(out, serial+1, 10)
	start := len(out)
	out = append(out, doc[k:]...)
	for _, n := range which {
		if n < 0 || n >= len(s.values) {
			return nil, fmt.Errorf("edit: instance %d of %d", n, len(s.values))
		}
		o := start + s.values[n]
		if c := out[o]; c < 'a' || c > 'z' {
			return nil, fmt.Errorf("edit: instance %d's input value starts with %q: not the series' layout", n, c)
		}
		out[o] = 'a' + (out[o]-'a'+1)%26
	}
	return out, nil
}

// serialAt finds the serial of doc, a document in either CLI's layout:
// its digits are doc[j:k].
func serialAt(doc []byte) (j, k int, serial uint64, err error) {
	loc := serialRE.FindSubmatchIndex(doc)
	if loc == nil {
		return 0, 0, 0, errors.New("no serial")
	}
	j, k = loc[2], loc[3]
	serial, err = strconv.ParseUint(string(doc[j:k]), 10, 64)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("serial: %w", err)
	}
	return j, k, serial, nil
}

// WithSerial returns doc, a document in either CLI's layout, with its
// serial set to serial.
func WithSerial(doc []byte, serial uint64) ([]byte, error) {
	j, k, _, err := serialAt(doc)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(doc)+20)
	out = append(out, doc[:j]...)
	out = strconv.AppendUint(out, serial, 10)
	return append(out, doc[k:]...), nil
}

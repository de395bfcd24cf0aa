package arena

import (
	"bytes"
	"testing"
)

// TestKeep: each copy keeps its bytes while the caller reuses its buffer
// and later copies fill the chunk, and is capped at its length.
func TestKeep(t *testing.T) {
	var a Arena
	var kept [][]byte
	buf := make([]byte, 3000)
	for i := range 5000 {
		b := buf[:i%3000]
		for j := range b {
			b[j] = byte(i)
		}
		kept = append(kept, a.Keep(b))
	}
	for i := range kept {
		if want := bytes.Repeat([]byte{byte(i)}, i%3000); !bytes.Equal(kept[i], want) {
			t.Fatalf("copy %d changed: %d bytes", i, len(kept[i]))
		}
		if cap(kept[i]) != len(kept[i]) {
			t.Fatalf("copy %d: cap %d over its length %d: an append would overwrite the next copy", i, cap(kept[i]), len(kept[i]))
		}
	}
}

func TestChunksGrowToMax(t *testing.T) {
	var a Arena
	if got := a.Keep([]byte("x")); cap(a.buf) != Min || string(got) != "x" {
		t.Fatalf("first chunk %d bytes, want %d", cap(a.buf), Min)
	}
	for range 4000 {
		a.Keep(make([]byte, 1000))
	}
	if cap(a.buf) != Max {
		t.Fatalf("after 4 MB of copies the chunk is %d bytes, want %d", cap(a.buf), Max)
	}
	if big := a.Keep(make([]byte, 3*Max)); len(big) != 3*Max {
		t.Fatalf("a copy larger than a chunk: %d bytes", len(big))
	}
}

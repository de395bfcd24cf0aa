package graph

import (
	"encoding/json"
	"os"
	"testing"
)

// BenchmarkScan is the bare validating scan that ParseReusing's hot path is
// built on, next to encoding/json's own validator, over the state file named
// by $KL_SCAN_DOC (default: the largest fixture).
func BenchmarkScan(b *testing.B) {
	path := os.Getenv("KL_SCAN_DOC")
	if path == "" {
		path = "testdata/modules/terraform.indent.tfstate"
	}
	doc, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("scanner", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		for b.Loop() {
			s := scanner{data: doc}
			s.ws()
			if !s.value(0, 0) || !s.end() {
				b.Fatal(s.err)
			}
		}
	})
	b.Run("json.Valid", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		for b.Loop() {
			if !json.Valid(doc) {
				b.Fatal("invalid")
			}
		}
	})
}

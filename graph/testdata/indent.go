//go:build ignore

// indent writes the Terraform layout of a state file: what Terraform's
// statefile writer (json.MarshalIndent with two spaces, plus a newline) gives
// for the document OpenTofu wrote compactly (json.Marshal plus a newline).
// MarshalIndent is Marshal followed by Indent, so indenting OpenTofu's bytes
// gives Terraform's bytes for the same fields.
//
//	go run indent.go terraform.tfstate terraform.indent.tfstate
package main

import (
	"bytes"
	"encoding/json"
	"log"
	"os"
)

func main() {
	in, err := os.ReadFile(os.Args[1])
	if err != nil {
		log.Fatal(err)
	}
	var out bytes.Buffer
	if err := json.Indent(&out, bytes.TrimSuffix(in, []byte("\n")), "", "  "); err != nil {
		log.Fatalf("%s: %v", os.Args[1], err)
	}
	out.WriteByte('\n')
	if err := os.WriteFile(os.Args[2], out.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}
}

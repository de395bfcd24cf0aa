// Command big-state writes a pre-built Terraform state of many instances
// (10,000 by default) for demos and benchmarks that should start warm:
// `make demo-warm` generates it once and loads it with `kl import`.
//
//	go run ./examples/big-state -n 10000 -o examples/big-state/big.tfstate
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/graph/graphtest"
)

func main() {
	n := flag.Int("n", 10000, "number of resource instances")
	attr := flag.Int("attr-bytes", 256, "approximate attribute size of each instance, in bytes")
	out := flag.String("o", "big.tfstate", "file to write")
	flag.Parse()
	// Deterministic: the same flags give the same bytes, and so the same
	// lineage, so importing it again is a no-op.
	data := graphtest.Generate(*n, *attr, graph.FormatIndent)
	if err := os.WriteFile(*out, data, 0o644); err != nil {
		fmt.Fprintf(os.Stderr, "big-state: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("wrote %s: %d instances, %d bytes\n", *out, *n, len(data))
}

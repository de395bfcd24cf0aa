package graphtest

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/kilolock/kilolock/graph"
)

// Values is a state as the model-based tests see it: the input value of
// one terraform_data resource per key that exists.
type Values map[string]string

// ValuesDoc renders v as OpenTofu writes such a state: one terraform_data
// resource per key, sorted by name, compact.
func ValuesDoc(serial uint64, lineage string, v Values) []byte {
	names := make([]string, 0, len(v))
	for k := range v {
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString(`{"version":4,"terraform_version":"1.10.10","serial":` + strconv.FormatUint(serial, 10) + `,"lineage":` + strconv.Quote(lineage) + `,"outputs":{},"resources":[`)
	for i, k := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"mode":"managed","type":"terraform_data","name":%q,"provider":"provider[\"terraform.io/builtin/terraform\"]","instances":[{"schema_version":0,"attributes":{"id":%q,"input":{"value":%q,"type":"string"},"output":null,"triggers_replace":null},"sensitive_attributes":[]}]}`, k, k, v[k])
	}
	b.WriteString(`],"check_results":null}` + "\n")
	return []byte(b.String())
}

// ValuesOf reads Values back out of a graph; an instance that holds no
// input value reads as "?" and its object.
func ValuesOf(g *graph.State) Values {
	out := Values{}
	for i := range g.Instances {
		in := &g.Instances[i]
		obj := string(in.Object)
		const marker = `"input":{"value":"`
		j := strings.Index(obj, marker)
		if j < 0 {
			out[in.Resource.Name] = "?" + obj
			continue
		}
		rest := obj[j+len(marker):]
		out[in.Resource.Name] = rest[:strings.IndexByte(rest, '"')]
	}
	return out
}

// Same reports whether a and b agree on k: both lack it, or both hold the
// same value.
func Same(a, b Values, k string) bool {
	va, oka := a[k]
	vb, okb := b[k]
	return oka == okb && va == vb
}

// SetKey makes dst agree with src on k: src's value, or none.
func SetKey(dst, src Values, k string) {
	if v, ok := src[k]; ok {
		dst[k] = v
	} else {
		delete(dst, k)
	}
}

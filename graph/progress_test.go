package graph_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/graph/graphtest"
)

// doneLog records what a reader tells its Done.
type doneLog struct {
	calls [][2]int
}

func (d *doneLog) done(from, to int) { d.calls = append(d.calls, [2]int{from, to}) }

// check asserts that each call is a range of doc, a ProgressStep or more
// but for a few (a reader's last), and that together they cover all of
// doc but its last ProgressStep bytes: what a caller giving back pages
// behind the reader relies on.
func (d *doneLog) check(t *testing.T, what string, n int) {
	t.Helper()
	covered := make([]bool, n)
	short := 0
	for _, c := range d.calls {
		from, to := c[0], c[1]
		if from < 0 || to > n || from >= to {
			t.Fatalf("%s: Done(%d, %d) is no range of the %d-byte document", what, from, to, n)
		}
		for k := from; k < to; k++ {
			covered[k] = true
		}
		if to-from < graph.ProgressStep {
			short++
		}
	}
	if short > 3 {
		t.Errorf("%s: %d of %d calls of Done moved less than a ProgressStep", what, short, len(d.calls))
	}
	for k := range max(0, n-graph.ProgressStep) {
		if !covered[k] {
			t.Fatalf("%s: byte %d of %d never told Done", what, k, n)
		}
	}
}

// TestParseWithDone: ParseWith gives Parse's result, telling Done, a
// megabyte or more at a time, each part of the document it has read; so
// does RenderEqualDone as it compares. On a state of many small
// resources and on one resource of many instances, whose bytes the parse
// reads twice.
func TestParseWithDone(t *testing.T) {
	many := graphtest.Generate(4000, 1024, graph.FormatIndent)
	one := oneResource(3000, 1024)
	for _, tc := range []struct {
		name string
		doc  []byte
	}{{"many resources", many}, {"one resource", one}} {
		t.Run(tc.name, func(t *testing.T) {
			want := parse(t, tc.doc)
			var log doneLog
			got, err := graph.ParseWith(tc.doc, graph.ParseOptions{Done: log.done})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got, identical); diff != "" {
				t.Fatalf("ParseWith differs from Parse (-want +got):\n%s", diff)
			}
			if len(log.calls) < len(tc.doc)/graph.ProgressStep {
				t.Errorf("Done told %d times over %d bytes", len(log.calls), len(tc.doc))
			}
			log.check(t, "parse", len(tc.doc))

			// Reusing a previous parse: the same, and Done told the same.
			var again doneLog
			if _, err := graph.ParseWith(tc.doc, graph.ParseOptions{Prev: want, Done: again.done}); err != nil {
				t.Fatal(err)
			}
			again.check(t, "parse reusing", len(tc.doc))

			var cmpLog doneLog
			if !got.RenderEqualDone(got.Format, tc.doc, cmpLog.done) {
				t.Fatal("RenderEqualDone: the parsed document does not render back")
			}
			cmpLog.check(t, "compare", len(tc.doc))
			var short doneLog
			if got.RenderEqualDone(got.Format, tc.doc[:len(tc.doc)-1], short.done) {
				t.Error("RenderEqualDone: equal to the document less its last byte")
			}
		})
	}
}

// oneResource is a state of one resource with n instances (count), of
// about attrBytes of attributes each, as Terraform writes it.
func oneResource(n, attrBytes int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"version":4,"terraform_version":"1.10.10","serial":3,"lineage":"one","outputs":{},"resources":[{"mode":"managed","type":"terraform_data","name":"herd","provider":"provider[\"terraform.io/builtin/terraform\"]","instances":[`)
	pad := strings.Repeat("x", attrBytes)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"index_key":%d,"schema_version":0,"attributes":{"id":"id-%d","input":{"value":"%s","type":"string"}},"sensitive_attributes":[]}`, i, i, pad)
	}
	b.WriteString(`]}],"check_results":null}`)
	st, err := graph.Parse(b.Bytes())
	if err != nil {
		panic(err)
	}
	return st.Render(graph.FormatIndent)
}

package graph_test

import (
	"bytes"
	"fmt"

	"github.com/kilolock/kilolock/graph"
)

func Example() {
	v1 := []byte(`{"version":4,"terraform_version":"1.10.10","serial":1,"lineage":"9e4c","outputs":{},` +
		`"resources":[{"mode":"managed","type":"terraform_data","name":"web","provider":"provider[\"terraform.io/builtin/terraform\"]",` +
		`"instances":[{"index_key":0,"schema_version":0,"attributes":{"id":"a"},"sensitive_attributes":[]},` +
		`{"index_key":1,"schema_version":0,"attributes":{"id":"b"},"sensitive_attributes":[]}]}],"check_results":null}` + "\n")
	prev, err := graph.Parse(v1)
	if err != nil {
		panic(err)
	}
	for _, in := range prev.Instances {
		fmt.Println(in.ID(), string(in.Object))
	}

	// The next POST changes one instance and adds another.
	v2 := bytes.Replace(v1, []byte(`"id":"b"`), []byte(`"id":"B"`), 1)
	v2 = bytes.Replace(v2, []byte(`"serial":1`), []byte(`"serial":2`), 1)
	v2 = bytes.Replace(v2, []byte(`]}],"check_results"`), []byte(`,{"index_key":2,"schema_version":0,"attributes":{"id":"c"},"sensitive_attributes":[]}]}],"check_results"`), 1)
	next, err := graph.ParseReusing(v2, prev)
	if err != nil {
		panic(err)
	}
	c := graph.Diff(prev, next)
	fmt.Println("added", c.Added, "changed", c.Changed)

	// Rendering gives back the bytes OpenTofu wrote, or Terraform's layout.
	fmt.Println(bytes.Equal(next.Render(graph.FormatCompact), v2))
	fmt.Printf("%s", next.Render(graph.FormatIndent)[:51])
	// Output:
	// terraform_data.web[0] {"index_key":0,"schema_version":0,"attributes":{"id":"a"},"sensitive_attributes":[]}
	// terraform_data.web[1] {"index_key":1,"schema_version":0,"attributes":{"id":"b"},"sensitive_attributes":[]}
	// added [terraform_data.web[2]] changed [terraform_data.web[1]]
	// true
	// {
	//   "version": 4,
	//   "terraform_version": "1.10.10",
}

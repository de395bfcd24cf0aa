package sqlite_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/store/sqlite"
)

func ExampleOpen() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "kilolock")
	defer os.RemoveAll(dir)

	s, err := sqlite.Open(ctx, filepath.Join(dir, "kilolock.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	web, _ := graph.NewInstance(
		graph.Resource{Mode: "managed", Type: "terraform_data", Name: "web", Provider: `provider["terraform.io/builtin/terraform"]`},
		[]byte(`{"schema_version":0,"attributes":{"id":"1","input":"hello"},"sensitive_attributes":[]}`))
	v, stats, err := s.Commit(ctx, "demo", &kilolock.Commit{
		Version: kilolock.Version{Serial: 1, Lineage: "l-1", Source: kilolock.SourcePush},
		Upserts: []graph.Instance{web},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("version", v.Number, "wrote", stats.Rows, "rows")

	res, err := s.Query(ctx, kilolock.QueryLimits{}, `SELECT address, attributes ->> '$.input' FROM resources WHERE state = $1`, "demo")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Rows[0]...)
	// Output:
	// version 1 wrote 5 rows
	// terraform_data.web hello
}

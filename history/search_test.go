package history_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/history"
	"github.com/kilolock/kilolock/internal/enginetest"
)

// searchDoc is a state of three resources: two web servers (one with a
// sensitive password), a subnet in module.net resting on them, and a DNS
// record resting on the subnet.
const searchDoc = `{"version":4,"terraform_version":"1.10.10","serial":1,"lineage":"search-lineage","outputs":{},"resources":[
{"mode":"managed","type":"aws_instance","name":"web","provider":"provider[\"registry.opentofu.org/hashicorp/aws\"]","instances":[
 {"index_key":0,"schema_version":0,"attributes":{"id":"i-0","ami":"ami-blue","password":"swordfish-0"},"sensitive_attributes":[[{"type":"get_attr","value":"password"}]]},
 {"index_key":1,"schema_version":0,"attributes":{"id":"i-1","ami":"ami-green","password":"plain-pass"},"sensitive_attributes":[]}]},
{"mode":"managed","type":"aws_route53_record","name":"www","provider":"provider[\"registry.opentofu.org/hashicorp/aws\"]","instances":[
 {"schema_version":0,"attributes":{"id":"www.example.com"},"sensitive_attributes":[],"dependencies":["module.net.aws_subnet.Public"]}]},
{"module":"module.net","mode":"managed","type":"aws_subnet","name":"Public","provider":"provider[\"registry.opentofu.org/hashicorp/aws\"]","instances":[
 {"schema_version":0,"attributes":{"id":"subnet-1","cidr":"10.0.1.0/24"},"sensitive_attributes":[],"dependencies":["aws_instance.web"]}]}],
"check_results":null}
`

// searchEngine is an engine on a fresh store holding searchDoc as "net".
func searchEngine(t testing.TB) *kilolock.Engine {
	t.Helper()
	e := enginetest.SQLiteEngine(t)
	enginetest.Write(t, e, "net", []byte(searchDoc))
	return e
}

func TestSearch(t *testing.T) {
	ctx, e := context.Background(), searchEngine(t)
	tests := []struct {
		name string
		q    history.SearchQuery
		want []string
	}{
		{"everything", history.SearchQuery{}, []string{"aws_instance.web[0]", "aws_instance.web[1]", "aws_route53_record.www", "module.net.aws_subnet.Public"}},
		{"type", history.SearchQuery{Type: "aws_instance"}, []string{"aws_instance.web[0]", "aws_instance.web[1]"}},
		{"type is exact", history.SearchQuery{Type: "aws_inst"}, nil},
		{"name ignores case", history.SearchQuery{Name: "publ"}, []string{"module.net.aws_subnet.Public"}},
		{"address prefix", history.SearchQuery{Address: "module.net"}, []string{"module.net.aws_subnet.Public"}},
		{"address pattern", history.SearchQuery{Address: "*.web[*]"}, []string{"aws_instance.web[0]", "aws_instance.web[1]"}},
		{"attribute text", history.SearchQuery{Text: "AMI-GREEN"}, []string{"aws_instance.web[1]"}},
		{"attribute key", history.SearchQuery{Text: `"cidr"`}, []string{"module.net.aws_subnet.Public"}},
		{"unmarked value is found", history.SearchQuery{Text: "plain-pass"}, []string{"aws_instance.web[1]"}},
		{"sensitive value is never found", history.SearchQuery{Text: "swordfish"}, nil},
		{"all fields together", history.SearchQuery{Type: "aws_instance", Name: "web", Address: "aws_instance.web", Text: "blue"}, []string{"aws_instance.web[0]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := history.Search(ctx, e, "net", tt.q)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range res.Matches {
				got = append(got, m.Address)
			}
			if !slices.Equal(got, tt.want) || res.Total != len(tt.want) {
				t.Errorf("Search(%+v) = %v (total %d), want %v", tt.q, got, res.Total, tt.want)
			}
		})
	}
	t.Run("limit keeps the total", func(t *testing.T) {
		res, err := history.Search(ctx, e, "net", history.SearchQuery{Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Matches) != 1 || res.Total != 4 || res.Version.Number != 1 {
			t.Errorf("Search(limit 1) = %d matches, total %d, version %d", len(res.Matches), res.Total, res.Version.Number)
		}
	})
	t.Run("unknown state", func(t *testing.T) {
		if _, err := history.Search(ctx, e, "nope", history.SearchQuery{}); !errors.Is(err, kilolock.ErrNotFound) {
			t.Errorf("Search(nope) = %v, want ErrNotFound", err)
		}
	})
}

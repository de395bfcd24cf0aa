package storekit

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/kilolock/kilolock"

	"github.com/kilolock/kilolock/graph"
)

func TestPrepareCommit(t *testing.T) {
	web := graph.Resource{Mode: "managed", Type: "aws_instance", Name: "web", Provider: `provider["registry.opentofu.org/hashicorp/aws"]`}
	inst := func(t *testing.T, obj string) graph.Instance {
		t.Helper()
		in, err := graph.NewInstance(web, []byte(obj))
		if err != nil {
			t.Fatal(err)
		}
		return in
	}
	out := func(name, value string, sensitive bool) graph.Output {
		s := "false"
		if sensitive {
			s = "true"
		}
		return graph.NewOutput(name, []byte(`{"value":"`+value+`","type":"string","sensitive":`+s+`}`))
	}
	prepared := func(o graph.Output, sensitive bool) PreparedOutput {
		return PreparedOutput{Name: o.Name, Hash: o.Hash, Body: string(o.Object), Sensitive: sensitive}
	}
	web0 := inst(t, `{"index_key":0,"schema_version":0,"attributes":{"id":"i-0"}}`)
	web0b := inst(t, `{"index_key":0,"schema_version":0,"attributes":{"id":"i-0b"}}`)
	web1 := inst(t, `{"index_key":1,"schema_version":0,"attributes":{"id":"i-1"}}`)
	ip, ipB, dns := out("ip", "10.0.0.1", false), out("ip", "10.0.0.2", true), out("dns", "web.example", false)

	accepted := []struct {
		name string
		c    kilolock.Commit
		want PreparedCommit
	}{
		{"empty", kilolock.Commit{}, PreparedCommit{}},
		{"order kept", kilolock.Commit{
			Upserts:       []kilolock.Instance{web1, web0},
			OutputUpserts: []kilolock.Output{ip, dns},
		}, PreparedCommit{
			Upserts:       []PreparedInstance{{&web1, web1.ID()}, {&web0, web0.ID()}},
			OutputUpserts: []PreparedOutput{prepared(ip, false), prepared(dns, false)},
		}},
		{"the last upsert wins, in the place of the first", kilolock.Commit{
			Upserts:       []kilolock.Instance{web0, web1, web0b},
			OutputUpserts: []kilolock.Output{ip, dns, ipB},
		}, PreparedCommit{
			Upserts:       []PreparedInstance{{&web0b, web0.ID()}, {&web1, web1.ID()}},
			OutputUpserts: []PreparedOutput{prepared(ipB, true), prepared(dns, false)},
		}},
		{"a removal of an upserted id is dropped", kilolock.Commit{
			Upserts:        []kilolock.Instance{web0},
			Removed:        []string{web1.ID(), web0.ID()},
			OutputUpserts:  []kilolock.Output{ip},
			OutputsRemoved: []string{"ip", "dns"},
		}, PreparedCommit{
			Upserts:        []PreparedInstance{{&web0, web0.ID()}},
			Removed:        []string{web1.ID()},
			OutputUpserts:  []PreparedOutput{prepared(ip, false)},
			OutputsRemoved: []string{"dns"},
		}},
		{"duplicate removals collapse", kilolock.Commit{
			Removed:        []string{web1.ID(), web0.ID(), web1.ID()},
			OutputsRemoved: []string{"dns", "ip", "dns"},
		}, PreparedCommit{
			Removed:        []string{web1.ID(), web0.ID()},
			OutputsRemoved: []string{"dns", "ip"},
		}},
		{"a zero hash is not checked", kilolock.Commit{
			Upserts:       []kilolock.Instance{func() kilolock.Instance { in := web0; in.Hash = graph.Hash{}; return in }()},
			OutputUpserts: []kilolock.Output{{Name: "ip", Object: ip.Object}},
		}, PreparedCommit{
			Upserts:       []PreparedInstance{{&web0, web0.ID()}},
			OutputUpserts: []PreparedOutput{prepared(ip, false)},
		}},
		{"fields are read from the object", kilolock.Commit{
			Upserts: []kilolock.Instance{func() kilolock.Instance {
				in := web0
				in.Status, in.Dependencies = "tainted", []string{"aws_vpc.main"}
				return in
			}()},
		}, PreparedCommit{
			Upserts: []PreparedInstance{{&web0, web0.ID()}},
		}},
	}
	for _, tt := range accepted {
		t.Run(tt.name, func(t *testing.T) {
			got, err := PrepareCommit(&tt.c)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*got, tt.want) {
				t.Errorf("PrepareCommit =\n%+v\nwant\n%+v", *got, tt.want)
			}
		})
	}

	t.Run("an instance as its object gives it is not copied", func(t *testing.T) {
		c := kilolock.Commit{Upserts: []kilolock.Instance{web0, web1}}
		got, err := PrepareCommit(&c)
		if err != nil {
			t.Fatal(err)
		}
		for i := range got.Upserts {
			if got.Upserts[i].Instance != &c.Upserts[i] {
				t.Errorf("upsert %d is a copy, not the commit's instance", i)
			}
		}
	})

	otherKey := web0
	otherKey.Key = graph.IndexKey{Kind: graph.IntKey, Int: 1}
	badHash := web0
	badHash.Hash[0] ^= 1
	badOutputHash := ip
	badOutputHash.Hash[0] ^= 1
	refused := []struct {
		name string
		c    *kilolock.Commit
		// want is the whole message, or its start when it ends in "…".
		want string
	}{
		{"nil commit", nil, "nil commit"},
		{"serial out of range", &kilolock.Commit{Version: kilolock.Version{Serial: math.MaxInt64 + 1}},
			"serial 9223372036854775808 is out of range"},
		{"base serial out of range", &kilolock.Commit{Version: kilolock.Version{Serial: 1, BaseSerial: math.MaxUint64}},
			"serial 18446744073709551615 is out of range"},
		{"malformed instance object", &kilolock.Commit{Upserts: []kilolock.Instance{{Resource: web, Object: []byte(`{"index_key":0,`)}}},
			"instance of aws_instance.web: …"},
		{"wrong claimed id", &kilolock.Commit{Upserts: []kilolock.Instance{otherKey}},
			"instance aws_instance.web[1]: its object says it is aws_instance.web[0]"},
		{"wrong instance hash", &kilolock.Commit{Upserts: []kilolock.Instance{badHash}},
			"instance aws_instance.web[0]: hash " + badHash.Hash.String() + " is not the hash of its object (" + web0.Hash.String() + ")"},
		{"output without a name", &kilolock.Commit{OutputUpserts: []kilolock.Output{graph.NewOutput("", ip.Object)}},
			"an output has no name"},
		{"output with bad JSON", &kilolock.Commit{OutputUpserts: []kilolock.Output{graph.NewOutput("ip", []byte(`{"value":`))}},
			"output ip: unexpected end of JSON input"},
		{"output that is not an object", &kilolock.Commit{OutputUpserts: []kilolock.Output{graph.NewOutput("ip", []byte(`[1]`))}},
			"output ip: …"},
		{"wrong output hash", &kilolock.Commit{OutputUpserts: []kilolock.Output{badOutputHash}},
			"output ip: hash " + badOutputHash.Hash.String() + " is not the hash of its object (" + ip.Hash.String() + ")"},
		{"a bad upsert after a good one", &kilolock.Commit{Upserts: []kilolock.Instance{web0, badHash}},
			"instance aws_instance.web[0]: hash …"},
	}
	for _, tt := range refused {
		t.Run("refuses "+tt.name, func(t *testing.T) {
			got, err := PrepareCommit(tt.c)
			if got != nil || !errors.Is(err, kilolock.ErrInvalid) {
				t.Fatalf("PrepareCommit = %+v, %v; want nil and ErrInvalid", got, err)
			}
			var ie *kilolock.InvalidError
			if !errors.As(err, &ie) || ie.Code != "invalid_commit" {
				t.Fatalf("error %#v, want an *InvalidError with code invalid_commit", err)
			}
			if prefix, ok := strings.CutSuffix(tt.want, "…"); ok {
				if !strings.HasPrefix(ie.Message, prefix) {
					t.Errorf("message %q, want it to start with %q", ie.Message, prefix)
				}
			} else if ie.Message != tt.want {
				t.Errorf("message %q, want %q", ie.Message, tt.want)
			}
			wantHint := "build instances with graph.NewInstance and outputs with graph.NewOutput"
			if tt.c == nil {
				wantHint = ""
			}
			if ie.Hint != wantHint {
				t.Errorf("hint %q, want %q", ie.Hint, wantHint)
			}
		})
	}
}

func TestEncodeRejection(t *testing.T) {
	for _, r := range []*kilolock.Rejection{nil, {LatestSerial: math.MaxInt64 + 1}, {BaseSerial: math.MaxUint64}} {
		if _, err := EncodeRejection(r); !errors.Is(err, kilolock.ErrInvalid) {
			t.Errorf("EncodeRejection(%+v) = %v, want ErrInvalid", r, err)
		}
	}
	for _, addrs := range [][]string{nil, {}, {"aws_instance.a", `module.m["x"].aws_instance.b[0]`}} {
		enc, err := EncodeRejection(&kilolock.Rejection{Addresses: addrs})
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeAddresses(enc)
		if err != nil || got == nil || len(got) != len(addrs) || (len(addrs) > 0 && got[1] != addrs[1]) {
			t.Errorf("round trip of %q via %s = %q, %v", addrs, enc, got, err)
		}
	}
	if _, err := DecodeAddresses("{"); err == nil {
		t.Error("DecodeAddresses of garbage succeeded")
	}
}

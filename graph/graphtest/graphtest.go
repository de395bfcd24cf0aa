// Package graphtest generates tfstate documents for tests and benchmarks of
// the packages that read them: large, deterministic states in either CLI's
// layout, and the next version of such a state with a few instances changed.
//
// It encodes with encoding/json through StateV4, a mirror of the structs
// Terraform's and OpenTofu's statefile writers marshal, so the documents it
// makes are byte for byte what the CLIs would write for the same state, and
// independent of the graph package under test.
package graphtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"regexp"
	"sort"
	"strconv"

	"github.com/kilolock/kilolock/graph"
)

// StateV4 mirrors the tfstate version 4 document as both CLIs write it,
// attributes kept as raw JSON. Unmarshalling a document into it is the
// "floor" that state parsers are measured against.
type StateV4 struct {
	Version          int                 `json:"version"`
	TerraformVersion string              `json:"terraform_version"`
	Serial           uint64              `json:"serial"`
	Lineage          string              `json:"lineage"`
	Outputs          map[string]OutputV4 `json:"outputs"`
	Resources        []ResourceV4        `json:"resources"`
	CheckResults     json.RawMessage     `json:"check_results"`
}

// OutputV4 is one root module output.
type OutputV4 struct {
	Value     json.RawMessage `json:"value"`
	Type      json.RawMessage `json:"type"`
	Sensitive bool            `json:"sensitive,omitempty"`
}

// ResourceV4 is one resource and its instance objects.
type ResourceV4 struct {
	Module    string       `json:"module,omitempty"`
	Mode      string       `json:"mode"`
	Type      string       `json:"type"`
	Name      string       `json:"name"`
	Each      string       `json:"each,omitempty"`
	Provider  string       `json:"provider"`
	Instances []InstanceV4 `json:"instances"`
}

// InstanceV4 is one instance object, current or deposed.
type InstanceV4 struct {
	IndexKey            any               `json:"index_key,omitempty"`
	Status              string            `json:"status,omitempty"`
	Deposed             string            `json:"deposed,omitempty"`
	SchemaVersion       uint64            `json:"schema_version"`
	Attributes          json.RawMessage   `json:"attributes,omitempty"`
	AttributesFlat      map[string]string `json:"attributes_flat,omitempty"`
	SensitiveAttributes json.RawMessage   `json:"sensitive_attributes,omitempty"`
	Private             []byte            `json:"private,omitempty"`
	Dependencies        []string          `json:"dependencies,omitempty"`
	CreateBeforeDestroy bool              `json:"create_before_destroy,omitempty"`
}

// Encode writes s as the CLI using format f does: json.MarshalIndent with
// two spaces (Terraform) or json.Marshal (OpenTofu), plus a newline.
func Encode(s *StateV4, f graph.Format) []byte {
	var b []byte
	var err error
	if f == graph.FormatCompact {
		b, err = json.Marshal(s)
	} else {
		b, err = json.MarshalIndent(s, "", "  ")
	}
	if err != nil {
		panic(fmt.Sprintf("graphtest: encode state: %v", err))
	}
	return append(b, '\n')
}

// Decode reads a document into the mirror, keeping integers exact.
func Decode(doc []byte) (*StateV4, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var s StateV4
	if err := dec.Decode(&s); err != nil {
		return nil, err
	}
	return &s, nil
}

var modules = []string{"", "module.app", `module.svc["api"]`, `module.svc["web"]`, "module.net[0]", "module.net[1]", `module.svc["api"].module.db`}

// Generate returns a valid state of n managed terraform_data-like instances
// whose attributes are about attrBytes long each, in format f, sorted the way
// Terraform writes state. Resources cycle through the root module and a few
// (nested, counted, for_each) modules, and between a single instance, count
// and for_each with string keys; some instances depend on others. The same
// arguments give the same bytes.
func Generate(n int, attrBytes int, f graph.Format) []byte {
	rng := rand.New(rand.NewPCG(uint64(n), uint64(attrBytes)))
	s := &StateV4{
		Version:          4,
		TerraformVersion: "1.10.10",
		Serial:           1,
		Lineage:          "00000000-1111-2222-3333-444444444444",
		Outputs:          map[string]OutputV4{},
		Resources:        []ResourceV4{},
	}
	payload := max(attrBytes-160, 8) / 2
	made := 0
	for ri := 0; made < n; ri++ {
		r := ResourceV4{
			Module:   modules[ri%len(modules)],
			Mode:     "managed",
			Type:     "terraform_data",
			Name:     fmt.Sprintf("r%05d", ri),
			Provider: `provider["terraform.io/builtin/terraform"]`,
		}
		var keys []any
		switch ri % 3 {
		case 0:
			keys = []any{nil}
		case 1:
			for k := range 1 + ri%7 {
				keys = append(keys, json.Number(strconv.Itoa(k)))
			}
		default:
			for k := range 1 + ri%5 {
				keys = append(keys, fmt.Sprintf("key %d-%c", k, 'a'+rune(ri%26)))
			}
		}
		for _, k := range keys {
			if made == n {
				break
			}
			in := InstanceV4{
				IndexKey:            k,
				Attributes:          attributes(rng, made, payload),
				SensitiveAttributes: json.RawMessage("[]"),
			}
			if ri > 0 && made%4 == 1 {
				in.Dependencies = []string{fmt.Sprintf("terraform_data.r%05d", ri-1)}
			}
			r.Instances = append(r.Instances, in)
			made++
		}
		s.Resources = append(s.Resources, r)
	}
	sortResources(s.Resources)
	s.Outputs["instances"] = OutputV4{Value: json.RawMessage(strconv.Itoa(n)), Type: json.RawMessage(`"number"`)}
	s.Outputs["first"] = OutputV4{Value: json.RawMessage(`["a","b"]`), Type: json.RawMessage(`["list","string"]`)}
	s.Outputs["token"] = OutputV4{Value: json.RawMessage(`"secret"`), Type: json.RawMessage(`"string"`), Sensitive: true}
	return Encode(s, f)
}

func attributes(rng *rand.Rand, i, payload int) json.RawMessage {
	p := make([]byte, payload)
	for k := range p {
		p[k] = 'a' + byte(rng.IntN(26))
	}
	id := fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", rng.Uint32(), i&0xffff, rng.IntN(1<<16), rng.IntN(1<<16), rng.Uint64()&(1<<48-1))
	return json.RawMessage(fmt.Sprintf(`{"id":%q,"input":{"value":"%s","type":"string"},"output":{"value":"%s","type":"string"},"triggers_replace":null}`, id, p, p))
}

// sortResources orders resources and their instances as Terraform's writer
// does.
func sortResources(rs []ResourceV4) {
	sort.SliceStable(rs, func(i, j int) bool {
		a, b := rs[i], rs[j]
		switch {
		case a.Module != b.Module:
			return a.Module < b.Module
		case a.Mode != b.Mode:
			return a.Mode < b.Mode
		case a.Type != b.Type:
			return a.Type < b.Type
		}
		return a.Name < b.Name
	})
	for _, r := range rs {
		sort.SliceStable(r.Instances, func(i, j int) bool {
			ki, kj := r.Instances[i].IndexKey, r.Instances[j].IndexKey
			if (ki == nil) != (kj == nil) {
				return ki == nil
			}
			ni, iInt := ki.(json.Number)
			nj, jInt := kj.(json.Number)
			if iInt && jInt {
				a, _ := ni.Int64()
				b, _ := nj.Int64()
				if a != b {
					return a < b
				}
			}
			si, iStr := ki.(string)
			sj, jStr := kj.(string)
			if iStr && jStr && si != sj {
				return si < sj
			}
			return r.Instances[i].Deposed < r.Instances[j].Deposed
		})
	}
}

// Change returns doc (a document in the layout of Generate's output, such as
// Generate's output) with the attributes of the instances at positions
// which (counted across the whole document in order) changed, and its serial
// one higher, in format f. Changing the same instance again gives yet another
// value. It panics on a document it cannot read or an index out of range:
// it is for tests.
func Change(doc []byte, which []int, f graph.Format) []byte {
	s, err := Decode(doc)
	if err != nil {
		panic(fmt.Sprintf("graphtest: change: %v", err))
	}
	var all []*InstanceV4
	for ri := range s.Resources {
		for ii := range s.Resources[ri].Instances {
			all = append(all, &s.Resources[ri].Instances[ii])
		}
	}
	for _, i := range which {
		if i < 0 || i >= len(all) {
			panic(fmt.Sprintf("graphtest: change: instance %d of %d", i, len(all)))
		}
		all[i].Attributes = changed(all[i].Attributes, s.Serial)
	}
	s.Serial++
	return Encode(s, f)
}

var markerRE = regexp.MustCompile(`"kl_changed":\s*\d+`)

// changed alters one letter of the first string "value" in attrs, or adds
// a marker attribute when there is none.
func changed(attrs json.RawMessage, serial uint64) json.RawMessage {
	out := bytes.Clone(attrs)
	if i := bytes.Index(out, []byte(`"value":"`)); i >= 0 {
		j := i + len(`"value":"`)
		if j < len(out) && out[j] >= 'a' && out[j] <= 'z' {
			out[j] = 'a' + (out[j]-'a'+1)%26
			return out
		}
	}
	if len(out) < 2 || out[0] != '{' {
		return json.RawMessage(fmt.Sprintf(`{"kl_changed":%d}`, serial))
	}
	marker := fmt.Sprintf(`"kl_changed":%d`, serial)
	// A marker already there is replaced, not repeated: of duplicate keys
	// the last one counts (for encoding/json, and so for both CLIs), so a
	// second marker in front would change nothing.
	if loc := markerRE.FindIndex(out); loc != nil {
		return append(append(out[:loc[0]:loc[0]], marker...), out[loc[1]:]...)
	}
	if bytes.Equal(bytes.TrimSpace(out[1:]), []byte("}")) {
		return json.RawMessage("{" + marker + "}")
	}
	return append([]byte("{"+marker+","), out[1:]...)
}

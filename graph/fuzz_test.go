package graph

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the committed fuzz seed corpus")

// malformed are seeds that are not valid states, or only just.
var malformed = []string{
	``, `{`, `[`, `"`, `{"version":4`, `{"version":4,"lineage":"l"`, `{"version":4,"lineage":"l"}`,
	`{"version":4,"lineage":"l"}}`, `{"version":4,"lineage":"l",}`, `{"version":4.0,"lineage":"l"}`,
	`{"version":3,"lineage":"l","modules":[]}`, `{"version":5,"lineage":"l"}`, `{"version":4}`,
	`{"serial":1,"lineage":"l","meta":{},"encrypted_data":"x","encryption_version":"v0"}`,
	`{"serial":1,"lineage":"l","meta":{"key_provider.pbkdf2.k":"e30="},"encrypted_data":"YWJjZA==","encryption_version":"v0"}`,
	`{"meta":{"key_provider.aws_kms.a" : {"x":[1,"}"]},"alias\u00e9":null},"encrypted_data":"YQ==","encryption_version":"v0","serial":9}`,
	`{"version":4,"serial":0,"lineage":"bbbb","resources":[],"encryption_version":"v0"}`,
	`{"version":4,"lineage":"l","resources":[{"mode":"managed","type":"t","name":"n","instances":[{"index_key":1.5}]}]}`,
	`{"version":4,"lineage":"l","resources":[{"mode":"managed","type":"t","name":"n","instances":[{"index_key":1},{"index_key":1}]}]}`,
	`{"version":4,"lineage":"l","resources":[{"mode":"managed","type":"t","name":"n","instances":[{"index_key":"a\u0000b","status":"tainted","deposed":"x","dependencies":["a.b"]}]}]}`,
	`{"VERSION":4,"Lineage":"l","resources":[{"MODE":"data","type":"t","name":"n","instances":[{"INDEX_KEY":"k","ſtatus":"tainted"},{}]}]}`,
	`{"version":4,"lineage":"l","outputs":{"a":{"value":"<>&\u2028","type":"string"},"a":{"value":2,"type":"number"}}}`,
	"{\n\t\"version\": 4 ,\r\n \"lineage\" : \"l\" , \"resources\" : [ { \"mode\" : \"managed\" , \"type\":\"t\",\"name\":\"n\",\"instances\":[ { } , {\"index_key\" : 0 } ] } ] }",
	"{\"version\":4,\"lineage\":\"\xff\xfe\",\"resources\":[{\"mode\":\"managed\",\"type\":\"\xe2\x80\xa8\",\"name\":\"n\",\"instances\":[{\"attributes\":{\"x\":\"\xc3\"}}]}]}",
	`{"version":4,"lineage":"l","resources":[{"instances":[{}],"mode":"managed","type":"t","name":"n","provider":""}]}`,
	`{"version":4,"lineage":"l","check_results":[{"object_kind":"check"}],"resources":null,"outputs":null}`,
	strings.Repeat(`[`, 10001) + strings.Repeat(`]`, 10001),
}

// fuzzPrevs are states ParseReusing is run against.
var fuzzPrevs = sync.OnceValue(func() []*State {
	prevs := []*State{nil}
	for _, p := range []string{"basic/terraform.tfstate", "basic/terraform.indent.tfstate", "identity/terraform.tfstate", "future_fields/terraform.indent.tfstate"} {
		data, err := os.ReadFile(filepath.Join("testdata", p))
		if err != nil {
			panic(err)
		}
		st, err := Parse(data)
		if err != nil {
			panic(err)
		}
		prevs = append(prevs, st)
	}
	for _, m := range malformed {
		if st, err := Parse([]byte(m)); err == nil {
			prevs = append(prevs, st)
		}
	}
	return prevs
})

// FuzzParse: Parse never panics and agrees with encoding/json on what is
// valid JSON; a parsed state renders to a document that parses back to the
// same state, in either layout; ParseReusing gives exactly Parse's result
// whatever it reuses from; NewInstance rebuilds every instance.
func FuzzParse(f *testing.F) {
	for _, m := range malformed {
		f.Add([]byte(m))
	}
	for _, p := range fixturePaths(f) {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := Parse(data)

		var se *SyntaxError
		if errors.As(err, &se) == json.Valid(data) {
			t.Fatalf("Parse error %v, json.Valid %v", err, json.Valid(data))
		}
		for _, prev := range fuzzPrevs() {
			st2, err2 := ParseReusing(data, prev)
			if (err == nil) != (err2 == nil) || err != nil && err.Error() != err2.Error() {
				t.Fatalf("Parse error %v, ParseReusing error %v", err, err2)
			}
			if !reflect.DeepEqual(st, st2) {
				t.Fatalf("ParseReusing differs from Parse:\n%s", cmp.Diff(st, st2, identical))
			}
		}
		if errors.Is(err, ErrEncrypted) {
			checkEnvelope(t, data)
		}
		if err != nil {
			return
		}
		if st2, err := ParseReusing(data, st); err != nil || !reflect.DeepEqual(st, st2) {
			t.Fatalf("ParseReusing(data, Parse(data)) differs: %v\n%s", err, cmp.Diff(st, st2, identical))
		}

		for _, f := range []Format{st.Format, 1 - st.Format} {
			out := st.Render(f)
			again, err := Parse(out)
			if err != nil {
				t.Fatalf("Parse(Render(%v)): %v\n%s", f, err, out)
			}
			if again.Format != f {
				t.Errorf("Render(%v) parses as %v", f, again.Format)
			}
			if a, b := meaning(st), meaning(again); !reflect.DeepEqual(a, b) {
				t.Fatalf("Parse(Render(%v)) differs:\n%s", f, cmp.Diff(a, b, identical))
			}
			for i := range again.Instances {
				if !again.Instances[i].canonical {
					t.Fatalf("rendered instance %s not canonical:\n%s", again.Instances[i].ID(), out)
				}
			}
			if out2 := again.Render(f); !bytes.Equal(out, out2) {
				t.Fatalf("Render is not stable:\n%s", firstDiff(out2, out))
			}
		}

		for i := range st.Instances {
			in := &st.Instances[i]
			nin, err := NewInstance(in.Resource, in.Object)
			if err != nil {
				t.Fatalf("NewInstance(%s): %v", in.ID(), err)
			}
			if a, b := strip(*in), strip(nin); !reflect.DeepEqual(a, b) {
				t.Fatalf("NewInstance(%s) differs:\n%s", in.ID(), cmp.Diff(a, b, identical))
			}
			var want bytes.Buffer
			if err := json.Indent(&want, in.Object, "        ", "  "); err != nil {
				t.Fatalf("Object of %s: %v", in.ID(), err)
			}
			if got := appendIndent(nil, in.Object, instanceLevel); !bytes.Equal(got, want.Bytes()) {
				t.Fatalf("appendIndent differs from json.Indent:\n%s\n%s", got, want.Bytes())
			}
			if in.canonical && in.fragmentFormat == FormatIndent && !bytes.Equal(want.Bytes(), in.fragment) {
				t.Fatalf("fragment of %s marked canonical but is not what json.Indent gives", in.ID())
			}
			if in.canonical && in.fragmentFormat == FormatCompact && !bytes.Equal(in.Object, in.fragment) {
				t.Fatalf("fragment of %s marked canonical but is not compact", in.ID())
			}
		}
	})
}

// meaning is s without what it remembers of the bytes it was parsed from.
func meaning(s *State) *State {
	c := *s
	c.Format = 0
	c.Instances = make([]Instance, len(s.Instances))
	for i := range s.Instances {
		c.Instances[i] = strip(s.Instances[i])
	}
	return &c
}

func strip(in Instance) Instance {
	in.fragment, in.fragmentFormat, in.canonical, in.fragHash, in.fragSum, in.fragLen, in.fragOff, in.objFirst = nil, 0, false, 0, 0, 0, 0, nil
	return in
}

func fixturePaths(t testing.TB) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "*", "terraform*.tfstate"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	return paths
}

// TestFuzzCorpus rewrites testdata/fuzz/FuzzParse and FuzzCanonical with
// -update: the fixtures and the seeds, so `go test` runs them all as cases.
func TestFuzzCorpus(t *testing.T) {
	parse := filepath.Join("testdata", "fuzz", "FuzzParse")
	canonical := filepath.Join("testdata", "fuzz", "FuzzCanonical")
	if !*update {
		distinct := map[string]bool{}
		for _, s := range canonicalSeeds(t) {
			distinct[s] = true
		}
		for dir, n := range map[string]int{parse: len(malformed), canonical: len(distinct)} {
			entries, err := os.ReadDir(dir)
			if err != nil || len(entries) < n {
				t.Fatalf("seed corpus %s missing (%v); run go test -run TestFuzzCorpus -update", dir, err)
			}
		}
		return
	}
	for _, dir := range []string{parse, canonical} {
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(dir, name string, data []byte) {
		body := "go test fuzz v1\n[]byte(" + strconv.Quote(string(data)) + ")\n"
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	seed := func(dir, s string) {
		sum := sha256.Sum256([]byte(s))
		write(dir, "seed-"+hex.EncodeToString(sum[:8]), []byte(s))
	}
	for _, m := range malformed {
		seed(parse, m)
	}
	for _, s := range canonicalSeeds(t) {
		seed(canonical, s)
	}
	for _, p := range fixturePaths(t) {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel("testdata", p)
		write(parse, "fixture-"+strings.NewReplacer("/", "-", string(filepath.Separator), "-").Replace(rel), data)
	}
}

// checkEnvelope compares the clear part ParseWith reads of the envelope
// data with what encoding/json reads of it.
func checkEnvelope(t *testing.T, data []byte) {
	var env Envelope
	if _, err := ParseWith(data, ParseOptions{Envelope: &env}); !errors.Is(err, ErrEncrypted) {
		t.Fatalf("ParseWith: %v, Parse said ErrEncrypted", err)
	}
	var doc struct {
		Serial  *uint64         `json:"serial"`
		Lineage string          `json:"lineage"`
		Meta    json.RawMessage `json:"meta"`
		Version string          `json:"encryption_version"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("encoding/json cannot read the envelope: %v", err)
	}
	if env.HasSerial != (doc.Serial != nil) || doc.Serial != nil && env.Serial != *doc.Serial || env.Lineage != doc.Lineage || env.Version != doc.Version {
		t.Fatalf("envelope %+v, encoding/json reads %+v", env, doc)
	}
	dec := json.NewDecoder(bytes.NewReader(doc.Meta))
	var keys []string
	more := 0
	_, _ = dec.Token() // {
	for dec.More() {
		k, _ := dec.Token()
		if len(keys) < MaxMetaKeys {
			keys = append(keys, cut(k.(string), MaxMetaKeyLen))
		} else {
			more++
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatalf("meta: %v", err)
		}
	}
	if !slices.Equal(keys, env.MetaKeys) || more != env.MoreMetaKeys {
		t.Fatalf("meta keys %q (+%d), encoding/json reads %q (+%d)", env.MetaKeys, env.MoreMetaKeys, keys, more)
	}
}

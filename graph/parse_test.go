package graph

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// identical compares states completely, down to what each instance
// remembers of the posted bytes: ParseReusing must be indistinguishable
// from Parse.
var identical = cmp.Options{cmp.AllowUnexported(Instance{}), byteSlices}

// byteSlices compares []byte fields quickly (cmp would go byte by byte),
// still telling nil from empty.
var byteSlices = cmp.Comparer(func(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) })

// equivalent compares what states mean, not which bytes they came from.
var equivalent = cmp.Options{cmpopts.IgnoreUnexported(Instance{}), byteSlices}

type fixture struct {
	name   string // e.g. "basic/terraform.indent.tfstate"
	data   []byte
	format Format
}

// fixtures loads every state file under testdata/<scenario>/.
func fixtures(t testing.TB) []fixture {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "*", "terraform*.tfstate"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) < 20 {
		t.Fatalf("found %d fixtures, want every scenario in both layouts", len(paths))
	}
	var fs []fixture
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		f := FormatCompact
		if strings.HasSuffix(p, ".indent.tfstate") {
			f = FormatIndent
		}
		name, _ := filepath.Rel("testdata", p)
		fs = append(fs, fixture{name: filepath.ToSlash(name), data: data, format: f})
	}
	return fs
}

func mustParse(t testing.TB, data []byte) *State {
	t.Helper()
	st, err := Parse(data)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return st
}

// sibling returns the fixture of the same scenario in the other layout.
func sibling(t testing.TB, fx fixture) []byte {
	t.Helper()
	p := filepath.Join("testdata", fx.name)
	if fx.format == FormatIndent {
		p = strings.TrimSuffix(p, ".indent.tfstate") + ".tfstate"
	} else {
		p = strings.TrimSuffix(p, ".tfstate") + ".indent.tfstate"
	}
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestFixturesRoundTrip(t *testing.T) {
	for _, fx := range fixtures(t) {
		t.Run(fx.name, func(t *testing.T) {
			st := mustParse(t, fx.data)
			if st.Format != fx.format {
				t.Errorf("Format = %v, want %v", st.Format, fx.format)
			}
			if st.Version != 4 || st.Lineage == "" {
				t.Errorf("Version %d, Lineage %q", st.Version, st.Lineage)
			}
			for i := range st.Instances {
				if in := &st.Instances[i]; !in.canonical {
					t.Errorf("%s: fragment not recognized as canonical", in.ID())
				}
			}

			// Render in the same format gives the input back, byte for byte.
			out := st.Render(fx.format)
			if !bytes.Equal(out, fx.data) {
				t.Fatalf("Render(%v) differs from the input:\n%s", fx.format, firstDiff(out, fx.data))
			}
			// And in the other format gives what the other CLI wrote.
			other := sibling(t, fx)
			if got := st.Render(1 - fx.format); !bytes.Equal(got, other) {
				t.Fatalf("Render(%v) differs from the other layout's fixture:\n%s", 1-fx.format, firstDiff(got, other))
			}

			// Parse → Render → Parse is the same state.
			again := mustParse(t, out)
			if d := cmp.Diff(st, again, identical); d != "" {
				t.Errorf("Parse(Render(Parse(x))) differs (-first +second):\n%s", d)
			}
			fromOther := mustParse(t, other)
			if d := cmp.Diff(st, fromOther, equivalent, cmpopts.IgnoreFields(State{}, "Format")); d != "" {
				t.Errorf("the other layout parses to a different state (-this +other):\n%s", d)
			}

			// Objects are the compact instance objects.
			for i := range st.Instances {
				in := &st.Instances[i]
				var c bytes.Buffer
				if err := json.Compact(&c, in.fragment); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(c.Bytes(), in.Object) {
					t.Errorf("%s: Object is not json.Compact of its fragment", in.ID())
				}
			}

			// A store keeps (Resource, Object) and rebuilds with NewInstance.
			rebuilt := &State{
				Version: 4, TerraformVersion: st.TerraformVersion, Serial: st.Serial,
				Lineage: st.Lineage, CheckResults: st.CheckResults, Format: st.Format,
			}
			for i := range st.Instances {
				in := &st.Instances[i]
				nin, err := NewInstance(in.Resource, bytes.Clone(in.Object))
				if err != nil {
					t.Fatalf("NewInstance(%s): %v", in.ID(), err)
				}
				if d := cmp.Diff(*in, nin, equivalent); d != "" {
					t.Errorf("NewInstance(%s) differs (-parsed +rebuilt):\n%s", in.ID(), d)
				}
				rebuilt.Instances = append(rebuilt.Instances, nin)
			}
			for _, o := range st.Outputs {
				rebuilt.Outputs = append(rebuilt.Outputs, NewOutput(o.Name, bytes.Clone(o.Object)))
			}
			// Out of order, as a store may return them.
			slices.Reverse(rebuilt.Instances)
			slices.Reverse(rebuilt.Outputs)
			rebuilt.Sort()
			for _, f := range []Format{fx.format, 1 - fx.format} {
				want := fx.data
				if f != fx.format {
					want = other
				}
				if got := rebuilt.Render(f); !bytes.Equal(got, want) {
					t.Errorf("Sort+Render(%v) of the rebuilt state differs:\n%s", f, firstDiff(got, want))
				}
			}
		})
	}
}

// firstDiff shows where two documents part.
func firstDiff(a, b []byte) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	lo := max(0, i-80)
	return "at byte " + itoa(i) + ":\n got: " + string(a[lo:min(len(a), i+80)]) + "\nwant: " + string(b[lo:min(len(b), i+80)])
}

func itoa(i int) string { return string(appendInt(nil, i)) }

func appendInt(b []byte, i int) []byte {
	if i >= 10 {
		b = appendInt(b, i/10)
	}
	return append(b, byte('0'+i%10))
}

// TestFixtureContents checks that what the CLI wrote is read as meant.
func TestFixtureContents(t *testing.T) {
	load := func(name string) *State {
		data, err := os.ReadFile(filepath.Join("testdata", name, "terraform.tfstate"))
		if err != nil {
			t.Fatal(err)
		}
		return mustParse(t, data)
	}
	get := func(t *testing.T, st *State, id string) *Instance {
		t.Helper()
		i, ok := st.Index()[id]
		if !ok {
			t.Fatalf("no instance %s in %v", id, slices.Sorted(mapsKeys(st.Index())))
		}
		return &st.Instances[i]
	}

	t.Run("basic", func(t *testing.T) {
		st := load("basic")
		if st.TerraformVersion != "1.10.10" || st.Serial == 0 {
			t.Errorf("TerraformVersion %q, Serial %d", st.TerraformVersion, st.Serial)
		}
		for _, id := range []string{
			"terraform_data.single",
			"terraform_data.counted[0]", "terraform_data.counted[2]",
			`terraform_data.each["a b"]`, `terraform_data.each["x\"y"]`, `terraform_data.each["back\\slash"]`,
			`terraform_data.each["<tag>&amp"]`, `terraform_data.each["plain"]`,
			"terraform_data.cbd",
		} {
			get(t, st, id)
		}
		in := get(t, st, `terraform_data.each["x\"y"]`)
		if in.Key != (IndexKey{Kind: StringKey, Str: `x"y`}) {
			t.Errorf("key = %#v", in.Key)
		}
		if k := get(t, st, "terraform_data.counted[2]").Key; k != (IndexKey{Kind: IntKey, Int: 2}) {
			t.Errorf("key = %#v", k)
		}
		if d := get(t, st, "terraform_data.counted[1]").Dependencies; !slices.Equal(d, []string{"terraform_data.single"}) {
			t.Errorf("dependencies = %q", d)
		}
		if d := get(t, st, "terraform_data.cbd").Dependencies; !slices.Equal(d, []string{"terraform_data.counted", "terraform_data.single"}) {
			t.Errorf("dependencies = %q", d)
		}
		if !bytes.Contains(get(t, st, "terraform_data.cbd").Object, []byte(`"create_before_destroy":true`)) {
			t.Error("create_before_destroy lost")
		}
		names := []string{}
		for _, o := range st.Outputs {
			names = append(names, o.Name)
		}
		if want := []string{"bool", "list", "map", "number", "object", "secret", "string"}; !slices.Equal(names, want) {
			t.Errorf("outputs = %q, want %q", names, want)
		}
		secret := st.Outputs[st.OutputIndex()["secret"]]
		if string(secret.Object) != `{"value":"s3cr3t","type":"string","sensitive":true}` {
			t.Errorf("secret = %s", secret.Object)
		}
	})
	t.Run("modules", func(t *testing.T) {
		st := load("modules")
		for _, id := range []string{
			"terraform_data.root",
			`module.a["x"].terraform_data.this`, `module.a["y z"].module.child.terraform_data.leaf[1]`,
			"module.b[1].module.child.terraform_data.leaf[0]",
		} {
			get(t, st, id)
		}
		if m := get(t, st, `module.a["y z"].terraform_data.this`).Resource.Module; m != `module.a["y z"]` {
			t.Errorf("module = %q", m)
		}
	})
	t.Run("data_source", func(t *testing.T) {
		st := load("data_source")
		in := get(t, st, "data.terraform_remote_state.basic")
		if in.Resource.Mode != "data" {
			t.Errorf("mode = %q", in.Resource.Mode)
		}
		if d := get(t, st, "terraform_data.uses").Dependencies; !slices.Equal(d, []string{"data.terraform_remote_state.basic"}) {
			t.Errorf("dependencies = %q", d)
		}
	})
	t.Run("checks", func(t *testing.T) {
		st := load("checks")
		if !bytes.HasPrefix(st.CheckResults, []byte(`[{"object_kind":"check"`)) || !bytes.Contains(st.CheckResults, []byte("needs to be more than 10")) {
			t.Errorf("check_results = %s", st.CheckResults)
		}
	})
	t.Run("tainted", func(t *testing.T) {
		st := load("tainted")
		if s := get(t, st, `terraform_data.t["b"]`).Status; s != "tainted" {
			t.Errorf("status = %q", s)
		}
		if s := get(t, st, `terraform_data.t["a"]`).Status; s != "" {
			t.Errorf("status = %q", s)
		}
	})
	t.Run("deposed", func(t *testing.T) {
		st := load("deposed")
		if len(st.Instances) != 2 {
			t.Fatalf("%d instances", len(st.Instances))
		}
		cur, dep := &st.Instances[0], &st.Instances[1]
		if cur.Deposed != "" || cur.Status != "tainted" || dep.Deposed == "" || dep.Status != "" {
			t.Errorf("current %q/%q, deposed %q/%q", cur.Deposed, cur.Status, dep.Deposed, dep.Status)
		}
		if want := "terraform_data.d (deposed object " + dep.Deposed + ")"; dep.ID() != want || dep.Address() != "terraform_data.d" {
			t.Errorf("ID %q, Address %q", dep.ID(), dep.Address())
		}
	})
	t.Run("sensitive", func(t *testing.T) {
		st := load("sensitive")
		if !bytes.Contains(st.Instances[0].Object, []byte(`"sensitive_attributes":[[{"type":"get_attr","value":"input"}`)) {
			t.Errorf("sensitive_attributes lost: %s", st.Instances[0].Object)
		}
	})
	t.Run("time", func(t *testing.T) {
		st := load("time")
		in := get(t, st, "time_offset.o")
		if in.Resource.Provider != `provider["registry.opentofu.org/hashicorp/time"]` {
			t.Errorf("provider = %q", in.Resource.Provider)
		}
	})
	t.Run("escapes", func(t *testing.T) {
		st := load("escapes")
		get(t, st, "terraform_data.e[\"line\u2028sep\"]")
		get(t, st, "terraform_data.e[\"new\\nline\"]")
		get(t, st, `terraform_data.e["日本"]`)
	})
	t.Run("identity", func(t *testing.T) {
		st := load("identity")
		in := get(t, st, `module.net["eu"].aws_subnet.private[0] (deposed object 00000001)`)
		if !bytes.Contains(in.Object, []byte(`"identity_schema_version":0,"identity":{"account_id"`)) {
			t.Errorf("identity lost: %s", in.Object)
		}
		if !bytes.Contains(get(t, st, `module.net["eu"].aws_subnet.private[0]`).Object, []byte(`"private":"eyJl`)) {
			t.Error("private lost")
		}
	})
	t.Run("provider_keys", func(t *testing.T) {
		st := load("provider_keys")
		in := get(t, st, `aws_s3_bucket.logs["us-east-1"]`)
		if in.Resource.Provider != "" || !bytes.Contains(in.Object, []byte(`"provider":"provider[\"registry.opentofu.org/hashicorp/aws\"].by_region[\"us-east-1\"]"`)) {
			t.Errorf("provider %q, object %s", in.Resource.Provider, in.Object)
		}
	})
	t.Run("future_fields", func(t *testing.T) {
		st := load("future_fields")
		if st.Serial != 1<<64-1 || string(st.CheckResults) != "[]" {
			t.Errorf("serial %d, check_results %s", st.Serial, st.CheckResults)
		}
		in := get(t, st, `module.a.module.b[-1].legacy_thing.old["k"]`)
		if in.Resource.Each != "map" || !bytes.Contains(in.Object, []byte(`"future_field":{"nested":[1,2.5e-3,-0,true,false,null]}`)) {
			t.Errorf("each %q, object %s", in.Resource.Each, in.Object)
		}
		get(t, st, "terraform_data.neg[-9223372036854775808]")
		get(t, st, "terraform_data.neg[9223372036854775807]")
	})
	t.Run("empty", func(t *testing.T) {
		st := load("empty")
		if len(st.Instances) != 0 || len(st.Outputs) != 0 || st.CheckResults != nil {
			t.Errorf("not empty: %+v", st)
		}
	})
}

func mapsKeys(m map[string]int) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func TestParseErrors(t *testing.T) {
	const lineage = `"lineage":"l"`
	tests := []struct {
		name  string
		doc   string
		check func(error) bool
		msg   string // part of the error message
	}{
		{"empty", ``, isSyntax, "unexpected end"},
		{"truncated", `{"version":4,"lineage":"l","resources":[{"mode":"managed"`, isSyntax, "unexpected end"},
		{"garbage", `{"version":4,}`, isSyntax, "invalid character '}'"},
		{"trailing", `{"version":4,"lineage":"l"} x`, isSyntax, "after top-level value"},
		{"bad escape", `{"version":4,"lineage":"\x"}`, isSyntax, "string escape"},
		{"control char", "{\"version\":4,\"lineage\":\"a\x01\"}", isSyntax, "in string literal"},
		{"bad number", `{"version":04,"lineage":"l"}`, isSyntax, "invalid character '4'"},
		{"syntax beats version", `{"version":3,"lineage":"l",]`, isSyntax, ""},
		{"deep", strings.Repeat("[", 20000), isSyntax, "exceeded max depth"},
		{"not an object", `[1,2]`, isField, "JSON object"},
		{"version 3", `{"version":3,` + lineage + `,"modules":[]}`, isVersion(3), "version 3"},
		{"version 5", `{"version":5,` + lineage + `}`, isVersion(5), "version 5"},
		{"version beats fields", `{"version":3,` + lineage + `,"resources":7}`, isVersion(3), ""},
		{"version string", `{"version":"4",` + lineage + `}`, isField, "not an integer"},
		{"version missing", `{` + lineage + `}`, isField, "version"},
		{"missing lineage", `{"version":4,"serial":1}`, is(ErrNoLineage), "lineage"},
		{"empty lineage", `{"version":4,"lineage":""}`, is(ErrNoLineage), "lineage"},
		{"lineage not a string", `{"version":4,"lineage":5}`, isField, "must be a string"},
		{"encrypted", `{"serial":1,"lineage":"l","meta":{"key_provider.pbkdf2.k":"e30="},"encrypted_data":"YWJj","encryption_version":"v0"}`, is(ErrEncrypted), "encrypted"},
		{"encrypted by OpenTofu 1.7 alpha", `{"meta":{},"encrypted_data":"YQ==","encryption_version":"v0"}`, is(ErrEncrypted), "encrypted"},
		{"encrypted, null serial", `{"serial":null,"lineage":"","meta":{},"encrypted_data":"YWI=","encryption_version":"v1"}`, is(ErrEncrypted), "encrypted"},
		// Anything else with an encryption_version is neither opaque nor
		// plaintext: OpenTofu with encryption configured would try to
		// decrypt it, the server would otherwise skip its guards.
		{"plaintext with an encryption_version", `{"version":4,"serial":0,"lineage":"bbbb","resources":[],"encryption_version":"v0"}`, isAmbiguous, `"version" is not part of it`},
		{"version and encryption_version", `{"version":4,"encryption_version":"v0"}`, isAmbiguous, `"version"`},
		{"envelope with resources", `{"serial":1,"lineage":"l","meta":{},"encrypted_data":"YWJj","encryption_version":"v0","resources":[]}`, isAmbiguous, `"resources"`},
		{"envelope with an unknown key", `{"meta":{},"encrypted_data":"YWJj","encryption_version":"v0","x":1}`, isAmbiguous, `"x"`},
		{"encryption_version spelt otherwise", `{"meta":{},"encrypted_data":"YWJj","Encryption_Version":"v0"}`, isAmbiguous, `"Encryption_Version"`},
		{"encryption_version escaped", `{"meta":{},"encrypted_data":"YWJj","encryption\u005fversion":"v0"}`, isAmbiguous, `encryption\u005fversion`},
		{"encryption_version twice", `{"meta":{},"encrypted_data":"YWJj","encryption_version":"v0","encryption_version":""}`, isAmbiguous, "more than once"},
		{"empty encryption_version", `{"meta":{},"encrypted_data":"YWJj","encryption_version":""}`, isAmbiguous, "encryption_version must be a non-empty string"},
		{"encryption_version not a string", `{"meta":{},"encrypted_data":"YWJj","encryption_version":0}`, isAmbiguous, "encryption_version must be a non-empty string"},
		{"encryption_version null", `{"version":4,"lineage":"l","encryption_version":null}`, isAmbiguous, ""},
		{"no encrypted_data", `{"meta":{},"encryption_version":"v0"}`, isAmbiguous, "encrypted_data is missing"},
		{"encrypted_data not base64", `{"meta":{},"encrypted_data":"abc","encryption_version":"v0"}`, isAmbiguous, "encrypted_data must be base64"},
		{"encrypted_data with a bad character", `{"meta":{},"encrypted_data":"ab-c","encryption_version":"v0"}`, isAmbiguous, "encrypted_data must be base64"},
		{"encrypted_data empty", `{"meta":{},"encrypted_data":"","encryption_version":"v0"}`, isAmbiguous, "encrypted_data must be base64"},
		{"encrypted_data an object", `{"meta":{},"encrypted_data":{},"encryption_version":"v0"}`, isAmbiguous, "encrypted_data must be base64"},
		{"no meta", `{"encrypted_data":"YWJj","encryption_version":"v0"}`, isAmbiguous, "meta is missing"},
		{"meta an array", `{"meta":[],"encrypted_data":"YWJj","encryption_version":"v0"}`, isAmbiguous, "meta must be an object"},
		{"serial a string", `{"serial":"1","meta":{},"encrypted_data":"YWJj","encryption_version":"v0"}`, isAmbiguous, "serial must be"},
		{"serial negative", `{"serial":-1,"meta":{},"encrypted_data":"YWJj","encryption_version":"v0"}`, isAmbiguous, "serial must be"},
		{"lineage a number", `{"lineage":1,"meta":{},"encrypted_data":"YWJj","encryption_version":"v0"}`, isAmbiguous, "lineage must be a string"},
		{"syntax beats ambiguity", `{"version":4,"encryption_version":"v0",]`, isSyntax, ""},
		{"index_key float", `{"version":4,` + lineage + `,"resources":[{"mode":"managed","type":"t","name":"n","instances":[{"index_key":1.5}]}]}`, isField, "index_key 1.5"},
		{"index_key bool", `{"version":4,` + lineage + `,"resources":[{"mode":"managed","type":"t","name":"n","instances":[{"index_key":true}]}]}`, isField, "index_key true"},
		{"index_key object", `{"version":4,` + lineage + `,"resources":[{"mode":"managed","type":"t","name":"n","instances":[{"index_key":{}}]}]}`, isField, "index_key"},
		{"index_key overflow", `{"version":4,` + lineage + `,"resources":[{"mode":"managed","type":"t","name":"n","instances":[{"index_key":9223372036854775808}]}]}`, isField, "index_key"},
		{"bad mode", `{"version":4,` + lineage + `,"resources":[{"mode":"weird","type":"t","name":"n","instances":[{}]}]}`, isField, "neither"},
		{"bad status", `{"version":4,` + lineage + `,"resources":[{"mode":"managed","type":"t","name":"n","instances":[{"status":"ok"}]}]}`, isField, "status"},
		{"dependencies not strings", `{"version":4,` + lineage + `,"resources":[{"mode":"managed","type":"t","name":"n","instances":[{"dependencies":[1]}]}]}`, isField, "dependencies"},
		{"instance not an object", `{"version":4,` + lineage + `,"resources":[{"mode":"managed","type":"t","name":"n","instances":[[]]}]}`, isField, "instances[0]"},
		{"resources not an array", `{"version":4,` + lineage + `,"resources":{}}`, isField, "resources"},
		{"output not an object", `{"version":4,` + lineage + `,"outputs":{"o":1}}`, isField, "outputs"},
		{"serial negative", `{"version":4,` + lineage + `,"serial":-1}`, isField, "serial"},
		{"check_results object", `{"version":4,` + lineage + `,"check_results":{}}`, isField, "check_results"},
		{"duplicate instance", `{"version":4,` + lineage + `,"resources":[{"mode":"managed","type":"t","name":"n","instances":[{"index_key":1},{"index_key":1}]}]}`, isField, "t.n[1] appears more than once"},
		{"duplicate across entries", `{"version":4,` + lineage + `,"resources":[{"mode":"managed","type":"t","name":"n","instances":[{}]},{"mode":"managed","type":"t","name":"n","instances":[{}]}]}`, isField, "more than once"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, parse := range []func([]byte) (*State, error){Parse, func(b []byte) (*State, error) { return ParseReusing(b, reusePrev(t)) }} {
				st, err := parse([]byte(tt.doc))
				if err == nil {
					t.Fatalf("no error; state %+v", st)
				}
				if st != nil {
					t.Errorf("a state with the error")
				}
				if !tt.check(err) {
					t.Errorf("wrong kind of error: %T %v", err, err)
				}
				if !strings.Contains(err.Error(), tt.msg) {
					t.Errorf("error %q does not mention %q", err, tt.msg)
				}
			}
		})
	}
}

// reusePrev is a state with fragments, to run error cases through the
// reusing path too.
func reusePrev(t testing.TB) *State {
	data, err := os.ReadFile(filepath.Join("testdata", "basic", "terraform.tfstate"))
	if err != nil {
		t.Fatal(err)
	}
	return mustParse(t, data)
}

func isSyntax(err error) bool {
	var e *SyntaxError
	return errors.As(err, &e) && e.Offset >= 0
}

func isField(err error) bool {
	var e *FieldError
	return errors.As(err, &e)
}

func isAmbiguous(err error) bool {
	var e *EncryptionError
	return errors.As(err, &e) && !errors.Is(err, ErrEncrypted)
}

func isVersion(v int) func(error) bool {
	return func(err error) bool {
		var e *VersionError
		return errors.As(err, &e) && e.Version == v
	}
}

func is(target error) func(error) bool {
	return func(err error) bool { return errors.Is(err, target) }
}

func TestSyntaxErrorOffset(t *testing.T) {
	doc := []byte(`{"version":4,"lineage":"l","resources":[{"mode":"managed",x}]}`)
	_, err := Parse(doc)
	var se *SyntaxError
	if !errors.As(err, &se) {
		t.Fatalf("%v", err)
	}
	if doc[se.Offset] != 'x' {
		t.Errorf("Offset %d points at %q", se.Offset, doc[se.Offset])
	}
	if json.Valid(doc) {
		t.Fatal("encoding/json accepts it")
	}
}

// TestParseLikeEncodingJSON: Parse reads fields the way encoding/json (and
// so both CLIs) do: case-insensitive names, the last of duplicate keys,
// escapes in keys, null as absent.
func TestParseLikeEncodingJSON(t *testing.T) {
	doc := `{"Version":4,"LINEAGE":"l","serial":1,"serial":2,"outputs":null,"check_results":null,` +
		`"resources":[{"Mode":"managed","TYPE":"t","n\u0061me":"n","instances":[` +
		`{"Index_Key":1,"status":"tainted","ſtatus":null,"deposed":null,"Dependencies":["a.b"],"dependencies":["c.d"]}]}],"extra":{"x":[1]}}`
	st := mustParse(t, []byte(doc))
	if st.Serial != 2 || st.Lineage != "l" || len(st.Instances) != 1 {
		t.Fatalf("%+v", st)
	}
	in := st.Instances[0]
	if in.ID() != "t.n[1]" || in.Status != "tainted" || !slices.Equal(in.Dependencies, []string{"c.d"}) {
		t.Errorf("ID %q status %q deps %q", in.ID(), in.Status, in.Dependencies)
	}
	// What encoding/json makes of the same instance object.
	var ref struct {
		IndexKey     any      `json:"index_key"`
		Status       string   `json:"status"`
		Dependencies []string `json:"dependencies"`
	}
	if err := json.Unmarshal(in.Object, &ref); err != nil {
		t.Fatal(err)
	}
	if ref.IndexKey != 1.0 || ref.Status != in.Status || !slices.Equal(ref.Dependencies, in.Dependencies) {
		t.Errorf("encoding/json reads %+v", ref)
	}
}

// TestRepeatedKeys: a repeated list replaces the earlier one and a repeated
// "outputs" object adds to it, as encoding/json decodes them.
func TestRepeatedKeys(t *testing.T) {
	doc := `{"version":4,"lineage":"l",` +
		`"resources":[{"mode":"managed","type":"t","name":"old","instances":[{}]}],` +
		`"outputs":{"a":{"value":1,"type":"number"},"b":{"value":1,"type":"number"}},` +
		`"resources":[{"mode":"managed","type":"t","name":"n","instances":[{"index_key":0}],"instances":[{"index_key":1}]}],` +
		`"outputs":{"b":{"value":2,"type":"number"},"c":{"value":3,"type":"number"}}}`
	st := mustParse(t, []byte(doc))
	var ids, outs []string
	for _, in := range st.Instances {
		ids = append(ids, in.ID())
	}
	for _, o := range st.Outputs {
		outs = append(outs, o.Name+"="+string(o.Object))
	}
	if !slices.Equal(ids, []string{"t.n[1]"}) {
		t.Errorf("instances %q", ids)
	}
	if want := []string{`a={"value":1,"type":"number"}`, `b={"value":2,"type":"number"}`, `c={"value":3,"type":"number"}`}; !slices.Equal(outs, want) {
		t.Errorf("outputs %q, want %q", outs, want)
	}
}

func TestEmptyResourceDropped(t *testing.T) {
	// Resources without instances carry nothing an instance graph can hold;
	// they are dropped, as Terraform prunes them on its next write.
	doc := `{"version":4,"lineage":"l","resources":[{"mode":"managed","type":"t","name":"n","provider":"p","instances":[]},{"mode":"data","type":"t","name":"m","provider":"p"}]}`
	st := mustParse(t, []byte(doc))
	if len(st.Instances) != 0 {
		t.Errorf("%d instances", len(st.Instances))
	}
}

func TestNewInstanceErrors(t *testing.T) {
	r := Resource{Mode: "managed", Type: "t", Name: "n"}
	for _, obj := range []string{``, `[]`, `{"index_key":1.5}`, `{"status":"weird"}`, `{`, `{} {}`, `{"dependencies":{}}`} {
		if _, err := NewInstance(r, []byte(obj)); err == nil {
			t.Errorf("NewInstance(%q): no error", obj)
		}
	}
	in, err := NewInstance(r, []byte(`{"index_key":"a","deposed":"d1","status":"tainted","dependencies":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	if in.ID() != `t.n["a"] (deposed object d1)` || in.Status != "tainted" || in.Dependencies == nil {
		t.Errorf("%+v", in)
	}
}

// TestInstanceHashStable pins the content address to its first
// definition, the one stores were written with: sha256 over each header
// field and the object as "<len>:<bytes>".
func TestInstanceHashStable(t *testing.T) {
	r := Resource{Module: `module.a["x"]`, Mode: "managed", Type: "t", Name: "n", Each: "map", Provider: "p"}
	in, err := NewInstance(r, []byte(`{"schema_version":0,"attributes":{"id":"é"}}`))
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	for _, s := range []string{r.Module, r.Mode, r.Type, r.Name, r.Each, r.Provider} {
		fmt.Fprintf(h, "%d:%s", len(s), s)
	}
	fmt.Fprintf(h, "%d:", len(in.Object))
	h.Write(in.Object)
	if want := hex.EncodeToString(h.Sum(nil)); in.Hash.String() != want {
		t.Errorf("hash %s, want %s", in.Hash, want)
	}
}

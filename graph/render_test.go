package graph

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestAppendStringLikeEncodingJSON(t *testing.T) {
	cases := []string{
		"", "plain", `provider["registry.opentofu.org/hashicorp/aws"]`, `back\slash`, "<>&",
		"\b\f\n\r\t\x00\x01\x1f\x7f", "é日本🙂", "\u2028\u2029", "bad \xff\xfe utf8 \xe2\x80", "\xe2\x80\xa8",
	}
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("ab\"\\<>&\n\t\x01\x7f\xc3\xa9\xe2\x80\xa8\xff ")
	for range 2000 {
		b := make([]byte, rng.IntN(12))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		cases = append(cases, string(b))
	}
	for _, s := range cases {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendString([]byte("x"), s); !bytes.Equal(got[1:], want) {
			t.Errorf("appendString(%q) = %s, encoding/json writes %s", s, got[1:], want)
		}
	}
}

func TestAppendIndentLikeJSONIndent(t *testing.T) {
	values := []string{
		`{}`, `[]`, `null`, `1`, `"s"`, `{"a":[]}`, `{"a":{},"b":[{}],"c":[[],[1,{"d":null}]]}`,
		`{"x":"a\"b\\c:,{}[]","y":-1.5e+10,"z":[true,false]}`,
		`[{"type":"get_attr","value":"input"},{"type":"index","value":{"value":1,"type":"number"}}]`,
	}
	for _, fx := range fixtures(t) {
		st := mustParse(t, fx.data)
		for _, in := range st.Instances {
			values = append(values, string(in.Object))
		}
		for _, o := range st.Outputs {
			values = append(values, string(o.Object))
		}
		if st.CheckResults != nil {
			values = append(values, string(st.CheckResults))
		}
	}
	for _, v := range values {
		for level := range 6 {
			var want bytes.Buffer
			if err := json.Indent(&want, []byte(v), strings.Repeat("  ", level), "  "); err != nil {
				t.Fatal(err)
			}
			if got := appendIndent(nil, []byte(v), level); !bytes.Equal(got, want.Bytes()) {
				t.Errorf("appendIndent(%s, %d) =\n%s\njson.Indent gives\n%s", v, level, got, want.Bytes())
			}
			// Whitespace in the input does not matter.
			if got := appendIndent(nil, want.Bytes(), level); !bytes.Equal(got, want.Bytes()) {
				t.Errorf("appendIndent of indented %s differs", v)
			}
		}
	}
}

func TestSortRestoresWriterOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, fx := range fixtures(t) {
		st := mustParse(t, fx.data)
		for range 5 {
			rng.Shuffle(len(st.Instances), func(i, j int) { st.Instances[i], st.Instances[j] = st.Instances[j], st.Instances[i] })
			rng.Shuffle(len(st.Outputs), func(i, j int) { st.Outputs[i], st.Outputs[j] = st.Outputs[j], st.Outputs[i] })
			st.Sort()
			if got := st.Render(fx.format); !bytes.Equal(got, fx.data) {
				t.Fatalf("%s: Sort+Render of a shuffled state differs:\n%s", fx.name, firstDiff(got, fx.data))
			}
		}
	}
}

func TestSortOrder(t *testing.T) {
	r := func(module, mode, name string) Resource {
		return Resource{Module: module, Mode: mode, Type: "t", Name: name, Provider: "p"}
	}
	want := []Instance{
		{Resource: r("", "data", "a")},
		{Resource: r("", "managed", "a")},
		{Resource: r("", "managed", "b"), Key: IndexKey{Kind: IntKey, Int: -3}},
		{Resource: r("", "managed", "b"), Key: IndexKey{Kind: IntKey, Int: 2}},
		{Resource: r("", "managed", "b"), Key: IndexKey{Kind: IntKey, Int: 2}, Deposed: "00000001"},
		{Resource: r("", "managed", "b"), Key: IndexKey{Kind: IntKey, Int: 10}},
		{Resource: r("", "managed", "c"), Key: IndexKey{Kind: StringKey, Str: "B"}},
		{Resource: r("", "managed", "c"), Key: IndexKey{Kind: StringKey, Str: "a"}},
		{Resource: r("module.a", "managed", "a")},
		// Module addresses compare as strings, as in Terraform: '.' < '['.
		{Resource: r("module.a.module.b", "managed", "a")},
		{Resource: r(`module.a["x"]`, "managed", "a")},
	}
	got := slices.Clone(want)
	slices.Reverse(got)
	st := &State{Instances: got}
	st.Sort()
	for i := range want {
		if st.Instances[i].ID() != want[i].ID() {
			t.Errorf("position %d: %s, want %s", i, st.Instances[i].ID(), want[i].ID())
		}
	}
}

func TestRenderEmptyState(t *testing.T) {
	st := &State{Version: 4, Lineage: "l", TerraformVersion: "1.9.0", Serial: 3}
	want := "{\n  \"version\": 4,\n  \"terraform_version\": \"1.9.0\",\n  \"serial\": 3,\n  \"lineage\": \"l\",\n  \"outputs\": {},\n  \"resources\": [],\n  \"check_results\": null\n}\n"
	if got := string(st.Render(FormatIndent)); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	wantCompact := `{"version":4,"terraform_version":"1.9.0","serial":3,"lineage":"l","outputs":{},"resources":[],"check_results":null}` + "\n"
	if got := string(st.Render(FormatCompact)); got != wantCompact {
		t.Errorf("got %s, want %s", got, wantCompact)
	}
}

// TestRenderAfterObjectReplaced: an instance copied from a parsed one and
// given another Object renders the new Object, not the old posted bytes.
func TestRenderAfterObjectReplaced(t *testing.T) {
	for _, fx := range fixtures(t) {
		st := mustParse(t, fx.data)
		if len(st.Instances) == 0 {
			continue
		}
		in := st.Instances[0]
		in.Object = bytes.Replace(in.Object, []byte(`"schema_version":`), []byte(`"schema_version":1`), 1)
		st.Instances[0] = in
		st2 := mustParse(t, st.Render(fx.format))
		if !bytes.Equal(st2.Instances[0].Object, in.Object) {
			t.Errorf("%s: rendered %s, want %s", fx.name, st2.Instances[0].Object, in.Object)
		}
		// And ParseReusing from the edited state does not take its Object.
		if st3, err := ParseReusing(fx.data, st); err != nil || !bytes.Equal(st3.Instances[0].Object, mustParse(t, fx.data).Instances[0].Object) {
			t.Errorf("%s: ParseReusing reused a replaced Object: %v", fx.name, err)
		}
	}
}

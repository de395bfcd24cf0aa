package graph

import (
	"fmt"
	"strings"
	"testing"
)

// maskCases are instance objects with what the one masking rule hides of
// each: the clear copy (MaskedInstanceObject) and the views (MaskedObject,
// InstanceChanges) are held to them alike.
var maskCases = []struct {
	name      string
	obj       string
	sensitive bool
	hidden    []string // substrings the masked object must not hold
	kept      []string // and those it must
}{
	{"nothing marked", `{"attributes":{"password":"s3cret"},"sensitive_attributes":[]}`, false, nil, nil},
	{"no key at all", `{"attributes":{"password":"s3cret"}}`, false, nil, nil},
	{"null", `{"attributes":{"a":"x"},"sensitive_attributes":null}`, false, nil, nil},
	{"a nested key of that name is not the marking", `{"attributes":{"sensitive_attributes":[1]},"sensitive_attributes":[]}`, false, nil, nil},
	{"one attribute", `{"attributes":{"host":"db.internal","password":"s3cret"},"sensitive_attributes":[[{"type":"get_attr","value":"password"}]],"private":"c2VjcmV0"}`,
		true, []string{"s3cret", "c2VjcmV0"}, []string{`"host":"db.internal"`, `"password":"(sensitive)"`}},
	{"inside a map", `{"attributes":{"tags":{"Name":"web","token":"t0k"}},"sensitive_attributes":[[{"type":"get_attr","value":"tags"},{"type":"index","value":{"value":"token","type":"string"}}]]}`,
		true, []string{"t0k"}, []string{`"Name":"web"`}},
	{"inside a list", `{"attributes":{"keys":["pub","priv"]},"sensitive_attributes":[[{"type":"get_attr","value":"keys"},{"type":"index","value":{"value":1,"type":"number"}}]]}`,
		true, []string{"priv"}, []string{`"pub"`}},
	{"a set element named by its value masks the set", `{"attributes":{"s":["a1","b2"]},"sensitive_attributes":[[{"type":"get_attr","value":"s"},{"type":"index","value":{"value":{"k":1},"type":["object",{"k":"number"}]}}]]}`,
		true, []string{"a1", "b2"}, nil},
	{"a step of an unknown kind masks what it goes into", `{"attributes":{"x":{"y":"z9"}},"sensitive_attributes":[[{"type":"get_attr","value":"x"},{"type":"splat","value":"y"}]]}`,
		true, []string{"z9"}, nil},
	{"paths in an unknown encoding mask every attribute", `{"attributes":{"a":"v1","b":"v2"},"sensitive_attributes":["a"]}`,
		true, []string{"v1", "v2"}, nil},
	{"a copy of a secret elsewhere in the object", `{"attributes":{"input":{"value":{"h":"x","pw":"dup-secret"},"type":"object"},"output":{"value":{"h":"x","pw":"dup-secret"},"type":"object"},"url":"pg://u:dup-secret@h","port":5432},"sensitive_attributes":[[{"type":"get_attr","value":"input"},{"type":"get_attr","value":"pw"}]]}`,
		true, []string{"dup-secret"}, []string{`"h":"x"`, `"port":5432`}},
	{"a dynamic value", `{"attributes":{"input":{"value":"dyn5","type":"string"}},"sensitive_attributes":[[{"type":"get_attr","value":"input"}]]}`,
		true, []string{"dyn5"}, nil},
	{"terraform_data's output repeats its sensitive input", `{"attributes":{"id":"i-1","input":{"value":"td-secret-1","type":"string"},"output":{"value":"td-secret-1","type":"string"},"triggers_replace":null},"sensitive_attributes":[[{"type":"get_attr","value":"input"}]]}`,
		true, []string{"td-secret-1"}, []string{`"id":"i-1"`}},
}

func TestMaskedInstanceObject(t *testing.T) {
	for _, tt := range maskCases {
		t.Run(tt.name, func(t *testing.T) {
			masked, sensitive := MaskedInstanceObject([]byte(tt.obj))
			if sensitive != tt.sensitive {
				t.Fatalf("sensitive = %v, want %v (masked %s)", sensitive, tt.sensitive, masked)
			}
			for _, h := range tt.hidden {
				if strings.Contains(string(masked), h) {
					t.Errorf("masked %s holds %q", masked, h)
				}
			}
			for _, k := range tt.kept {
				if !strings.Contains(string(masked), k) {
					t.Errorf("masked %s lacks %q", masked, k)
				}
			}
		})
	}
}

func TestMaskedOutputObject(t *testing.T) {
	if m, ok := MaskedOutputObject([]byte(`{"value":"tok","type":"string","sensitive":true}`)); !ok || strings.Contains(string(m), "tok") || !strings.Contains(string(m), `"type":"string"`) {
		t.Errorf("sensitive output masked = %s, %v", m, ok)
	}
	if m, ok := MaskedOutputObject([]byte(`{"value":"x","type":"string"}`)); ok || m != nil {
		t.Errorf("plain output masked = %s, %v; want nothing", m, ok)
	}
}

// TestViewsMaskAsTheClearCopy holds the views to the clear copy's rule: an
// instance shown (MaskedObject) or diffed against another version of it
// (InstanceChanges, the secret changed or not) shows nothing the clear
// copy hides.
func TestViewsMaskAsTheClearCopy(t *testing.T) {
	for _, tt := range maskCases {
		if len(tt.hidden) == 0 {
			continue
		}
		t.Run(tt.name, func(t *testing.T) {
			m, err := MaskedObject([]byte(tt.obj), Secrets{})
			if err != nil {
				t.Fatal(err)
			}
			shown, _ := EncodeJSON(m)
			// Another version: every hidden value and a new attribute
			// changed, so the diff lists paths on both sides.
			other := strings.Replace(tt.obj, `"attributes":{`, `"attributes":{"zz":"new",`, 1)
			for _, h := range tt.hidden {
				other = strings.ReplaceAll(other, h, h+"-2")
			}
			a, b := &Instance{Object: []byte(tt.obj)}, &Instance{Object: []byte(other)}
			changes := fmt.Sprint(InstanceChanges(a, b, Secrets{}), InstanceChanges(b, a, Secrets{}))
			for _, h := range tt.hidden {
				if strings.Contains(string(shown), h) {
					t.Errorf("shown %s holds %q", shown, h)
				}
				if strings.Contains(changes, h) {
					t.Errorf("diff %s holds %q", changes, h)
				}
			}
			wholeMasked := strings.Contains(string(shown), `"attributes":"(sensitive)"`)
			if !wholeMasked && !strings.Contains(changes, `zz: (absent) → "new"`) {
				t.Errorf("diff %s lacks the unmarked change", changes)
			}
		})
	}
}

// TestOutputSecrets: a string a sensitive output holds is masked where an
// instance repeats it unmarked, in a view and a diff, and nothing shorter
// than minSecretInside is.
func TestOutputSecrets(t *testing.T) {
	outs := []Output{
		{Name: "pw", Object: []byte(`{"value":"out-secret-7","type":"string","sensitive":true}`)},
		{Name: "n", Object: []byte(`{"value":["eu",3],"type":["tuple",["string","number"]],"sensitive":true}`)},
		{Name: "open", Object: []byte(`{"value":"not-a-secret","type":"string"}`)},
	}
	s := OutputSecrets(outs)
	obj := `{"attributes":{"input":{"value":"out-secret-7","type":"string"},"conn":"pg://x:out-secret-7@h","region":"eu","count":3,"label":"not-a-secret"},"sensitive_attributes":[]}`
	m, err := MaskedObject([]byte(obj), s)
	if err != nil {
		t.Fatal(err)
	}
	shown, _ := EncodeJSON(m)
	for _, want := range []string{`"region":"eu"`, `"count":3`, `"label":"not-a-secret"`, `"conn":"(sensitive)"`} {
		if !strings.Contains(string(shown), want) {
			t.Errorf("shown %s lacks %s", shown, want)
		}
	}
	if strings.Contains(string(shown), "out-secret-7") {
		t.Errorf("shown %s holds the output's secret", shown)
	}
	changed := strings.ReplaceAll(obj, "out-secret-7", "out-secret-8")
	diff := fmt.Sprint(InstanceChanges(&Instance{Object: []byte(obj)}, &Instance{Object: []byte(changed)}, s.Join(OutputSecrets([]Output{{Object: []byte(`{"value":"out-secret-8","sensitive":true}`)}}))))
	if strings.Contains(diff, "out-secret") || !strings.Contains(diff, "input.value: (sensitive) → (sensitive)") {
		t.Errorf("diff %s", diff)
	}
	// Without the outputs' secrets the same diff shows them: the test
	// above can fail.
	if plain := fmt.Sprint(InstanceChanges(&Instance{Object: []byte(obj)}, &Instance{Object: []byte(changed)}, Secrets{})); !strings.Contains(plain, "out-secret-7") {
		t.Errorf("unmasked diff %s", plain)
	}
}

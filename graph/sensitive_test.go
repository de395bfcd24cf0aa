package graph

import (
	"strings"
	"testing"
)

func TestMaskedInstanceObject(t *testing.T) {
	tests := []struct {
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
	}
	for _, tt := range tests {
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

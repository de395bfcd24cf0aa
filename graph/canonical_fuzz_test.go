package graph

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
)

// canonicalSeeds are the seeds of FuzzCanonical: odd values, the RFC 8785
// examples, and every instance and output object of the fixtures.
func canonicalSeeds(t testing.TB) []string {
	t.Helper()
	seeds := []string{
		``, `{`, `[1,]`, `{"a":1,}`, `"\ud800"`, "\"\xff\"", `01`, `-`, `1e`, `1.`, `tru`,
		`0`, `-0`, `1.0`, `1e0`, `10e-1`, `9007199254740993`, `1e400`, `1e-400`, `-1.5E+3`,
		`0.000001`, `1e-7`, `1e21`, `123456789012345678901234567890`, `1e1000000000000000000000`,
		`"\u003c\u003e\u0026\u2028\u2029\/\u007f\u001f\b"`, `"\uD83D\uDE00\ud800\u0041"`,
		`"\u0080000000000000&0000000000000000000000000"`, // found by the fuzzer: an escape after non-ASCII
		`{"b":1,"a":2,"b":3}`, `{"\u0062":1,"b":2}`, ` [ {"z" : [ ], "y" : { } } ] `,
		`{"\u20ac":"Euro Sign","\r":"Carriage Return","\ufb33":"Hebrew","1":"One","\ud83d\ude00":"Emoji","\u0080":"Control","\u00f6":"o"}`,
		`{"numbers":[333333333.33333329,1E30,4.50,2e-3,0.000000000000000000000000001],"string":"\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/","literals":[null,true,false]}`,
		strings.Repeat(`{"b":0,"a":`, 100) + `1` + strings.Repeat(`}`, 100),
		strings.Repeat(`[`, 10001) + strings.Repeat(`]`, 10001),
	}
	for _, p := range fixturePaths(t) {
		if !strings.HasSuffix(p, "terraform.tfstate") {
			continue
		}
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		st, err := Parse(data)
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range st.Instances {
			seeds = append(seeds, string(in.Object))
		}
		for _, o := range st.Outputs {
			seeds = append(seeds, string(o.Object))
		}
	}
	return seeds
}

// FuzzCanonical: Canonical accepts exactly the valid JSON values and never
// panics; its result is valid JSON, means the same as the input (same
// structure, strings, and numbers of equal value), and is its own canonical
// form; and every re-encoding encoding/json makes of the decoded value has
// the same canonical form, so an instance re-serialized that way keeps its
// CanonicalHash.
func FuzzCanonical(f *testing.F) {
	for _, s := range canonicalSeeds(f) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := Canonical(data)
		var se *SyntaxError
		if valid := json.Valid(data); valid != (err == nil) || !valid && !errors.As(err, &se) {
			t.Fatalf("Canonical error %v, json.Valid %v", err, valid)
		}
		if err != nil {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("Canonical(%q) = %q: not valid JSON", data, out)
		}
		again, err := Canonical(out)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("not idempotent: %q, then %q (%v)", out, again, err)
		}
		a, b := decodeExact(t, data), decodeExact(t, out)
		if !sameJSON(a, b) {
			t.Fatalf("Canonical(%q) = %q means something else", data, out)
		}
		assertReencodings(t, data)

		r := Resource{Mode: "managed", Type: "t", Name: "n"}
		if bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) {
			x := Instance{Resource: r, Object: data, Hash: instanceHash(&r, data)}
			y := Instance{Resource: r, Object: out, Hash: instanceHash(&r, out)}
			if !x.Equal(&y) || x.CanonicalHash() != y.CanonicalHash() {
				t.Fatalf("an instance and its canonical form are not Equal")
			}
		}
	})
}

func decodeExact(t *testing.T, data []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("decode %q: %v", data, err)
	}
	return v
}

// sameJSON compares decoded values, numbers by exact value (big.Rat) when
// their exponents are small enough to expand, else by canonical form.
func sameJSON(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			if w, ok := y[k]; !ok || !sameJSON(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameJSON(x[i], y[i]) {
				return false
			}
		}
		return true
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return false
		}
		if exponentDigits(string(x)) <= 4 && exponentDigits(string(y)) <= 4 {
			return sameValue(string(x), string(y))
		}
		cx, _ := Canonical([]byte(x))
		cy, _ := Canonical([]byte(y))
		return bytes.Equal(cx, cy)
	}
	return a == b
}

func exponentDigits(lit string) int {
	i := strings.IndexAny(lit, "eE")
	if i < 0 {
		return 0
	}
	return len(strings.TrimLeft(lit[i+1:], "+-0"))
}

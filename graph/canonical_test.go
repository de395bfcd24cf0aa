package graph

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/big"
	"strconv"
	"strings"
	"testing"
)

func mustCanonical(t testing.TB, in string) string {
	t.Helper()
	out, err := Canonical([]byte(in))
	if err != nil {
		t.Fatalf("Canonical(%q): %v", in, err)
	}
	return string(out)
}

// TestCanonicalRFC8785Example is the example of RFC 8785 section 3.2.2,
// whose every part Canonical writes as the RFC does but one number:
// 333333333.33333329 keeps its digits, where the RFC rounds it to the
// nearest double (333333333.3333333). cty reads state numbers exactly, so
// the two are different values to Terraform; see TestCanonicalNumbers.
func TestCanonicalRFC8785Example(t *testing.T) {
	in := `{
  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}`
	rfc := `{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`
	want := strings.Replace(rfc, "333333333.3333333", "333333333.33333329", 1)
	if got := mustCanonical(t, in); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	// The double the RFC means is the shortest spelling of that double,
	// and for it the output is the RFC's to the byte.
	asDouble := strings.Replace(in, "333333333.33333329", strconv.FormatFloat(333333333.33333329, 'g', -1, 64), 1)
	if got := mustCanonical(t, asDouble); got != rfc {
		t.Errorf("with the double spelled shortest:\ngot  %s\nwant %s", got, rfc)
	}
}

// TestCanonicalRFC8785Sorting is the sorting example of RFC 8785 section
// 3.2.3: keys by UTF-16 code units, so the emoji (a surrogate pair, from
// 0xD83D) sorts before U+FB33.
func TestCanonicalRFC8785Sorting(t *testing.T) {
	in := `{
  "\u20ac": "Euro Sign",
  "\r": "Carriage Return",
  "\ufb33": "Hebrew Letter Dalet With Dagesh",
  "1": "One",
  "\ud83d\ude00": "Emoji: Grinning Face",
  "\u0080": "Control",
  "\u00f6": "Latin Small Letter O With Diaeresis"
}`
	want := "{" + strings.Join([]string{
		`"\r":"Carriage Return"`,
		`"1":"One"`,
		"\"\u0080\":\"Control\"",
		"\"\u00f6\":\"Latin Small Letter O With Diaeresis\"",
		"\"\u20ac\":\"Euro Sign\"",
		"\"\U0001F600\":\"Emoji: Grinning Face\"",
		"\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"",
	}, ",") + "}"
	if got := mustCanonical(t, in); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// TestCanonicalRFC8785Numbers is RFC 8785 Appendix B: each IEEE-754 double
// written as ECMAScript writes it, as Go's encoding writes it, and in
// other spellings of those digits, has the RFC's canonical form.
func TestCanonicalRFC8785Numbers(t *testing.T) {
	for _, tc := range []struct{ bits, want string }{
		{"0000000000000000", "0"},
		{"8000000000000000", "0"},
		{"0000000000000001", "5e-324"},
		{"8000000000000001", "-5e-324"},
		{"7fefffffffffffff", "1.7976931348623157e+308"},
		{"ffefffffffffffff", "-1.7976931348623157e+308"},
		{"4340000000000000", "9007199254740992"},
		{"c340000000000000", "-9007199254740992"},
		{"4430000000000000", "295147905179352830000"},
		{"44b52d02c7e14af5", "9.999999999999997e+22"},
		{"44b52d02c7e14af6", "1e+23"},
		{"44b52d02c7e14af7", "1.0000000000000001e+23"},
		{"444b1ae4d6e2ef4e", "999999999999999700000"},
		{"444b1ae4d6e2ef4f", "999999999999999900000"},
		{"444b1ae4d6e2ef50", "1e+21"},
		{"3eb0c6f7a0b5ed8c", "9.999999999999997e-7"},
		{"3eb0c6f7a0b5ed8d", "0.000001"},
		{"41b3de4355555553", "333333333.3333332"},
		{"41b3de4355555554", "333333333.33333325"},
		{"41b3de4355555555", "333333333.3333333"},
		{"41b3de4355555556", "333333333.3333334"},
		{"41b3de4355555557", "333333333.33333343"},
		{"becbf647612f3696", "-0.0000033333333333333333"},
		{"43143ff3c1cb0959", "1424953923781206.2"},
	} {
		t.Run(tc.bits, func(t *testing.T) {
			u, err := strconv.ParseUint(tc.bits, 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			f := math.Float64frombits(u)
			if g, err := strconv.ParseFloat(tc.want, 64); err != nil || g != f {
				t.Fatalf("%s does not read back as the double %s", tc.want, tc.bits)
			}
			spellings := respell(tc.want)
			if g := strconv.FormatFloat(f, 'g', -1, 64); sameValue(g, tc.want) {
				spellings = append(spellings, g, strconv.FormatFloat(f, 'e', -1, 64))
			} else {
				t.Errorf("Go spells %s as %s, another decimal than %s", tc.bits, g, tc.want)
			}
			for _, spelling := range spellings {
				if got := mustCanonical(t, spelling); got != tc.want {
					t.Errorf("Canonical(%s) = %s, want %s", spelling, got, tc.want)
				}
			}
		})
	}
}

// respell returns lit and other spellings of its exact value: exponent
// forms with the point moved, trailing zeros, a capital E.
func respell(lit string) []string {
	neg := strings.HasPrefix(lit, "-")
	mant, exp, _ := strings.Cut(strings.ToLower(strings.TrimPrefix(lit, "-")), "e")
	x, _ := strconv.Atoi(exp)
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := strings.TrimLeft(intPart+frac, "0")
	point := len(intPart) + x - (len(intPart+frac) - len(digits)) // the value is 0.digits × 10^point
	sign := ""
	if neg {
		sign = "-"
	}
	if digits == "" {
		return []string{lit, sign + "0.0e5", sign + "0E-3", sign + "0.000e+2"}
	}
	exp10 := func(n int) string {
		if n >= 0 {
			return "+" + strconv.Itoa(n)
		}
		return strconv.Itoa(n)
	}
	return []string{
		lit,
		sign + "0." + digits + "e" + strconv.Itoa(point),
		sign + digits + "E" + strconv.Itoa(point-len(digits)),
		sign + digits + "000e" + strconv.Itoa(point-len(digits)-3),
		sign + "0.00" + digits + "0e" + exp10(point+2),
	}
}

func sameValue(a, b string) bool {
	x, ok1 := new(big.Rat).SetString(a)
	y, ok2 := new(big.Rat).SetString(b)
	return ok1 && ok2 && x.Cmp(y) == 0
}

// TestCanonicalNumbers pins the number rule: numbers compare by exact
// decimal value, as cty (arbitrary precision) reads them, not by the
// nearest double as RFC 8785 does.
func TestCanonicalNumbers(t *testing.T) {
	for _, tc := range []struct {
		name  string
		in    []string
		want  string
		other string // a nearby number that must stay different
	}{
		{"one", []string{"1", "1.0", "1e0", "10e-1", "0.1e1", "1E+0", "100e-2", "1.000000000000000000000000000000"}, "1", "1.0000000000000000000000000000001"},
		{"zero", []string{"0", "-0", "0.0", "-0.0e5", "0e-99999999999999999999"}, "0", "5e-324"},
		{"2^53+1", []string{"9007199254740993", "9007199254740993.0", "9.007199254740993e15"}, "9007199254740993", "9007199254740992"},
		{"2^64", []string{"18446744073709551616", "1.8446744073709551616e19"}, "18446744073709551616", "18446744073709551615"},
		{"beyond doubles", []string{"123456789012345678901234567890", "1.2345678901234567890123456789e29"}, "1.2345678901234567890123456789e+29", "123456789012345678901234567891"},
		{"hundreds of digits", []string{"0." + strings.Repeat("3", 200), strings.Repeat("3", 200) + "e-200"}, "0." + strings.Repeat("3", 200), "0." + strings.Repeat("3", 199) + "4"},
		{"decimal", []string{"0.1", "1e-1", "0.10", "0.0000001e6"}, "0.1", "0.10000000000000001"},
		{"negative", []string{"-42", "-4.2e1", "-420e-1"}, "-42", "42"},
		{"1e21 boundary", []string{"1000000000000000000000", "1e21"}, "1e+21", "100000000000000000000"},
		{"1e-7 boundary", []string{"0.0000001", "1e-7"}, "1e-7", "0.000001"},
		{"huge exponent", []string{"1e1000000000000000000000", "10e999999999999999999999"}, "1e+1000000000000000000000", "1e1000000000000000000001"},
		{"tiny exponent", []string{"25e-1000000000000000000002", "2.5e-1000000000000000000001"}, "2.5e-1000000000000000000001", "2.5e-1000000000000000000000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, in := range tc.in {
				if got := mustCanonical(t, in); got != tc.want {
					t.Errorf("Canonical(%s) = %s, want %s", in, got, tc.want)
				}
			}
			if got := mustCanonical(t, tc.other); got == tc.want {
				t.Errorf("Canonical(%s) = %s, the same as %s's", tc.other, got, tc.in[0])
			}
			if again := mustCanonical(t, tc.want); again != tc.want {
				t.Errorf("Canonical(%s) = %s: not idempotent", tc.want, again)
			}
		})
	}
}

// TestCanonicalNumbersMatchValue checks the number rule against math/big
// on many spellings: two literals have one canonical form exactly when
// they have one value, and the canonical form has that value.
func TestCanonicalNumbersMatchValue(t *testing.T) {
	var lits []string
	for _, m := range []string{"0", "1", "7", "10", "12.5", "0.001", "123456789", "9007199254740993", "3.14159265358979323846264338327950288"} {
		for _, e := range []string{"", "e0", "e1", "e-1", "E+5", "e-7", "e21", "e22", "e-6", "e-30"} {
			lits = append(lits, m+e, "-"+m+e)
		}
	}
	vals := make([]*big.Rat, len(lits))
	forms := make([]string, len(lits))
	for i, l := range lits {
		v, ok := new(big.Rat).SetString(l)
		if !ok {
			t.Fatalf("big.Rat cannot read %s", l)
		}
		vals[i], forms[i] = v, mustCanonical(t, l)
		back, ok := new(big.Rat).SetString(forms[i])
		if !ok || back.Cmp(v) != 0 {
			t.Errorf("Canonical(%s) = %s, which is another value", l, forms[i])
		}
	}
	for i := range lits {
		for j := range lits {
			if (vals[i].Cmp(vals[j]) == 0) != (forms[i] == forms[j]) {
				t.Errorf("%s and %s: values equal %v, canonical forms %s and %s", lits[i], lits[j], vals[i].Cmp(vals[j]) == 0, forms[i], forms[j])
			}
		}
	}
}

// TestCanonicalStrings covers the escapes: only \" \\ and control
// characters are escaped, in their shortest form; everything else is
// UTF-8, whatever escape the writer used.
func TestCanonicalStrings(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"plain", `"abc"`, `"abc"`},
		{"HTML-safe escapes undone", `"\u003cscript\u003e\u0026"`, `"<script>&"`},
		{"solidus", `"a\/b"`, `"a/b"`},
		{"short escapes", `"\b\f\n\r\t"`, `"\b\f\n\r\t"`},
		{"short escapes spelled long", `"\u0008\u000C\u000a\u000D\u0009"`, `"\b\f\n\r\t"`},
		{"other controls lowercase", `"\u001F\u0000\u000B"`, `"\u001f\u0000\u000b"`},
		{"quote and backslash", `"\u0022\u005c"`, `"\"\\"`},
		{"DEL is not escaped", `"\u007f"`, "\"\x7f\""},
		{"line separators are not escaped", `"\u2028\u2029"`, "\"\u2028\u2029\""},
		{"non-ASCII escaped", `"caf\u00e9"`, `"café"`},
		{"escape after non-ASCII", `"é\u0026"`, `"é&"`},
		{"surrogate pair", `"\uD83D\uDE00"`, "\"\U0001F600\""},
		{"lone high surrogate", `"\ud800x"`, "\"\ufffdx\""},
		{"lone low surrogate", `"\udc00"`, "\"\ufffd\""},
		{"high then escaped non-surrogate", `"\ud800\u0041"`, "\"\ufffdA\""},
		{"invalid UTF-8", "\"a\xffb\xc3\"", "\"a\ufffdb\ufffd\""},
		{"U+FFFD itself", "\"\ufffd\"", "\"\ufffd\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := mustCanonical(t, tc.in); got != tc.want {
				t.Errorf("Canonical(%s) = %q, want %q", tc.in, got, tc.want)
			}
			var a, b string
			if err := json.Unmarshal([]byte(tc.in), &a); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(tc.want), &b); err != nil {
				t.Fatal(err)
			}
			if a != b {
				t.Errorf("encoding/json reads %q as %q but its canonical form as %q", tc.in, a, b)
			}
		})
	}
}

// TestCanonicalStructure covers objects and arrays: whitespace dropped,
// keys sorted at every depth (escaped keys by their value), duplicate keys
// resolved as encoding/json resolves them, array order kept.
func TestCanonicalStructure(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"whitespace", " {\n\t\"a\" : [ 1 , 2 ] ,\r\n \"b\":{ } } ", `{"a":[1,2],"b":{}}`},
		{"nested sort", `{"b":{"y":1,"x":[{"d":0,"c":0}]},"a":null}`, `{"a":null,"b":{"x":[{"c":0,"d":0}],"y":1}}`},
		{"arrays keep order", `[3,1,2,[],{}]`, `[3,1,2,[],{}]`},
		{"escaped keys sort by value", `{"\u0062":1,"a":2,"\u0041":3}`, `{"A":3,"a":2,"b":1}`},
		{"duplicate keys: the last wins", `{"a":1,"b":2,"a":3}`, `{"a":3,"b":2}`},
		{"duplicate spelled differently", `{"a":1,"\u0061":{"z":0,"y":0}}`, `{"a":{"y":0,"z":0}}`},
		{"sorted input", `{"a":1,"b":2}`, `{"a":1,"b":2}`},
		{"prefix keys", `{"ab":1,"a":2,"":3}`, `{"":3,"a":2,"ab":1}`},
		{"scalars", `true`, `true`},
		{"deep", strings.Repeat(`{"b":0,"a":`, 1000) + `1` + strings.Repeat(`}`, 1000), strings.Repeat(`{"a":`, 1000) + `1` + strings.Repeat(`,"b":0}`, 1000)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := mustCanonical(t, tc.in)
			if got != tc.want {
				t.Errorf("Canonical(%s)\n = %s\nwant %s", tc.in, got, tc.want)
			}
			if again := mustCanonical(t, got); again != got {
				t.Errorf("not idempotent: %s", again)
			}
			assertReencodings(t, []byte(tc.in))
		})
	}
}

func TestCanonicalErrors(t *testing.T) {
	for _, in := range []string{``, ` `, `{`, `{"a":}`, `[1,]`, `01`, `"\x"`, `1 2`, `nul`} {
		_, err := Canonical([]byte(in))
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("Canonical(%q) = %v, want a *SyntaxError", in, err)
		}
	}
}

// assertReencodings checks that data means the same as encoding/json's
// re-encodings of its decoded value (sorted keys, HTML-safe escapes, numbers
// kept as written): one canonical form for all.
func assertReencodings(t testing.TB, data []byte) {
	t.Helper()
	want, err := Canonical(data)
	if err != nil {
		t.Fatal(err)
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("encoding/json cannot decode what Canonical read: %v", err)
	}
	compact, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	indented, err := json.MarshalIndent(v, "", "    ")
	if err != nil {
		t.Fatal(err)
	}
	for _, re := range [][]byte{compact, indented} {
		got, err := Canonical(re)
		if err != nil {
			t.Fatalf("Canonical(%s): %v", re, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("re-encoded by encoding/json, %s\nhas canonical form %s\nnot %s", re, got, want)
		}
	}
}

func TestCompareUTF16(t *testing.T) {
	order := []string{"", "\r", "1", "A", "a", "ab", "\u0080", "\u00f6", "\u20ac", "\ud7ff", "\U00010000", "\U0001F600", "\U0010FFFF", "\ue000", "\ufb33", "\uffff"}
	for i := range order {
		for j := range order {
			got := compareUTF16([]byte(order[i]), []byte(order[j]))
			if (got < 0) != (i < j) || (got == 0) != (i == j) {
				t.Errorf("compareUTF16(%q, %q) = %d", order[i], order[j], got)
			}
		}
	}
}

// TestStoredHashesAreStable pins Instance.Hash and Output.Hash, the
// addresses stores keep payloads under (and check every body they load
// against), to the values every earlier version computed: identity by
// meaning (CanonicalHash) came in beside them, so databases written before
// it need no re-hash and no instance of theirs looks changed.
func TestStoredHashesAreStable(t *testing.T) {
	r := Resource{Module: `module.a["x"]`, Mode: "managed", Type: "terraform_data", Name: "web", Each: "map", Provider: `provider["terraform.io/builtin/terraform"]`}
	in, err := NewInstance(r, []byte(`{"index_key":"k","schema_version":0,"attributes":{"id":"1","input":{"value":"\u003cb\u003e","type":"string"}},"sensitive_attributes":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := in.Hash.String(), "ca79dbb1a6974230e6b3d642b80eb8656ede92ae3c357c55be33b8d05e2053e6"; got != want {
		t.Errorf("instance Hash = %s, want %s", got, want)
	}
	if got, want := NewOutput("o", []byte(`{"value":42.5,"type":"number"}`)).Hash.String(), "b559227448e938bc3ee8e44e4b33d34ebaf9b83167c055676b8e13fd6360df93"; got != want {
		t.Errorf("output Hash = %s, want %s", got, want)
	}
	if in.CanonicalHash() == in.Hash {
		t.Error("CanonicalHash equals Hash: the two addresses must never be mistaken for each other")
	}
}

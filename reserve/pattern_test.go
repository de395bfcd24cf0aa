package reserve

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/kilolock/kilolock/graph"
)

func TestParseCanonical(t *testing.T) {
	tests := []struct{ in, want string }{
		{"*", "*"},
		{"output.vpc_id", "output.vpc_id"},
		{"module.net.*", "module.net.*"},
		{"module.net", "module.net.*"},
		{`module.net["eu"].module.sub[2].*`, `module.net["eu"].module.sub[2].*`},
		{"aws_instance.web", "aws_instance.web"},
		{"aws_instance.web[0]", "aws_instance.web[0]"},
		{`module.a["x"].data.t.n["k"]`, `module.a["x"].data.t.n["k"]`},
		{"time_sleep.slow_a", "time_sleep.slow_a"},
	}
	for _, tt := range tests {
		p, err := Parse(tt.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.in, err)
			continue
		}
		if p.String() != tt.want {
			t.Errorf("Parse(%q).String() = %q, want %q", tt.in, p.String(), tt.want)
		}
		q, err := Parse(p.String())
		if err != nil || q.String() != p.String() {
			t.Errorf("canonical %q does not parse back: %v", p.String(), err)
		}
	}
	for _, bad := range []string{"", "**", "output.", "output.1x", "aws_instance.*", "aws_instance", "module.*", "aws_instance.web[", "module.a.b.*", ".*"} {
		if p, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) = %q, want an error", bad, p)
		}
	}
}

func TestParseKey(t *testing.T) {
	for id, want := range map[string]string{
		"aws_instance.web[0]":                           "aws_instance.web[0]",
		"aws_instance.web[0] (deposed object 1a2b3c4d)": "aws_instance.web[0]",
		`null_resource.k["a (deposed object b)"]`:       `null_resource.k["a (deposed object b)"]`,
		"output.url": "output.url",
		`module.m["x"].aws_instance.web (deposed object 00ff00ff)`: `module.m["x"].aws_instance.web`,
	} {
		p, err := ParseKey(id)
		if err != nil || p.String() != want {
			t.Errorf("ParseKey(%q) = %q, %v; want %q", id, p, err, want)
		}
	}
}

func TestIntersectsAndCovers(t *testing.T) {
	tests := []struct {
		a, b                  string
		meet, aCoversB, bCovA bool
	}{
		{"*", "aws_instance.web[0]", true, true, false},
		{"*", "output.x", true, true, false},
		{"output.x", "output.x", true, true, true},
		{"output.x", "output.y", false, false, false},
		{"output.x", "module.a.*", false, false, false},
		{"aws_instance.web", "aws_instance.web[0]", true, true, false},
		{"aws_instance.web[0]", "aws_instance.web[1]", false, false, false},
		{"aws_instance.web", "aws_instance.db", false, false, false},
		{"aws_instance.web", "data.aws_instance.web", false, false, false},
		{"module.a.*", "module.a.aws_instance.web[0]", true, true, false},
		{"module.a.*", `module.a["x"].module.b.t.n`, true, true, false},
		{`module.a["x"].*`, `module.a["y"].t.n`, false, false, false},
		{`module.a["x"].*`, "module.a.t.n", true, false, false},
		{"module.a.t.n", `module.a["x"].t.n[1]`, true, true, false},
		{"module.a.*", "module.b.*", false, false, false},
		{"module.a.*", "module.a.module.b.*", true, true, false},
		{"module.a.t.n", "t.n", false, false, false},
		{"module.a.*", "t.n", false, false, false},
		{"module.a.t.n", "module.a.module.b.t.n", false, false, false},
	}
	for _, tt := range tests {
		a, b := MustParse(tt.a), MustParse(tt.b)
		if got := a.Intersects(b); got != tt.meet {
			t.Errorf("%s ∩ %s = %v, want %v", a, b, got, tt.meet)
		}
		if got := b.Intersects(a); got != tt.meet {
			t.Errorf("%s ∩ %s = %v, want %v (not symmetric)", b, a, got, tt.meet)
		}
		if got := a.Covers(b); got != tt.aCoversB {
			t.Errorf("%s ⊇ %s = %v, want %v", a, b, got, tt.aCoversB)
		}
		if got := b.Covers(a); got != tt.bCovA {
			t.Errorf("%s ⊇ %s = %v, want %v", b, a, got, tt.bCovA)
		}
	}
}

// A small universe of concrete addresses and patterns over the same names
// and keys: every intersection has a witness in it, so Intersects and
// Covers can be checked against plain set semantics.
var (
	keys = []graph.IndexKey{{}, {Kind: graph.IntKey, Int: 0}, {Kind: graph.StringKey, Str: "x"}}
)

// concrete is one address of the universe: module steps and a resource,
// every step with its exact key (NoKey for none), or an output.
type concrete struct {
	output  string
	modules []graph.ModuleStep // HasKey true for every step: Key.Kind may be NoKey
	res     string
	key     graph.IndexKey
}

func universe() []concrete {
	var out []concrete
	for _, o := range []string{"x", "y"} {
		out = append(out, concrete{output: o})
	}
	var paths [][]graph.ModuleStep
	paths = append(paths, nil)
	for _, a := range []string{"a", "b"} {
		for _, k := range keys {
			p1 := []graph.ModuleStep{{Name: a, Key: k, HasKey: true}}
			paths = append(paths, p1)
			for _, k2 := range keys {
				paths = append(paths, append(append([]graph.ModuleStep{}, p1...), graph.ModuleStep{Name: "c", Key: k2, HasKey: true}))
			}
		}
	}
	for _, p := range paths {
		for _, r := range []string{"t.n", "t.m", "data.t.n"} {
			for _, k := range keys {
				out = append(out, concrete{modules: p, res: r, key: k})
			}
		}
	}
	return out
}

// member reports whether the pattern names c, by the rules of the Pattern
// doc comment, written out independently of Intersects and Covers.
func member(p Pattern, c concrete) bool {
	if p.all {
		return true
	}
	if p.output != "" || c.output != "" {
		return p.output == c.output
	}
	if len(p.modules) > len(c.modules) || (!p.open && len(p.modules) != len(c.modules)) {
		return false
	}
	for i, m := range p.modules {
		if m.Name != c.modules[i].Name || (m.HasKey && m.Key != c.modules[i].Key) {
			return false
		}
	}
	if p.open {
		return true
	}
	return p.res == c.res && (!p.hasKey || p.key == c.key)
}

func randomPattern(r *rand.Rand) Pattern {
	step := func(name string) string {
		switch r.IntN(3) {
		case 0:
			return "module." + name
		case 1:
			return "module." + name + "[0]"
		}
		return "module." + name + `["x"]`
	}
	switch r.IntN(10) {
	case 0:
		return MustParse("*")
	case 1:
		return MustParse("output." + []string{"x", "y"}[r.IntN(2)])
	}
	var path string
	switch r.IntN(3) {
	case 1:
		path = step([]string{"a", "b"}[r.IntN(2)]) + "."
	case 2:
		path = step([]string{"a", "b"}[r.IntN(2)]) + "." + step("c") + "."
	}
	if path != "" && r.IntN(4) == 0 {
		return MustParse(path + "*")
	}
	s := path + []string{"t.n", "t.m", "data.t.n"}[r.IntN(3)]
	switch r.IntN(3) {
	case 1:
		s += "[0]"
	case 2:
		s += `["x"]`
	}
	return MustParse(s)
}

func TestPatternSetSemantics(t *testing.T) {
	u := universe()
	r := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		a, b := randomPattern(r), randomPattern(r)
		meet, sub := false, true
		for _, c := range u {
			inA, inB := member(a, c), member(b, c)
			meet = meet || (inA && inB)
			sub = sub && (!inB || inA)
		}
		if got := a.Intersects(b); got != meet {
			t.Fatalf("%s ∩ %s = %v; the universe says %v", a, b, got, meet)
		}
		if got := a.Covers(b); got != sub {
			t.Fatalf("%s ⊇ %s = %v; the universe says %v", a, b, got, sub)
		}
	}
}

func TestIndexMatchesBruteForce(t *testing.T) {
	for seed := uint64(0); seed < 50; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		var holds []Hold
		for i := range 1 + r.IntN(40) {
			m := Read
			if r.IntN(2) == 0 {
				m = Write
			}
			holds = append(holds, Hold{Reservation: Reservation{Pattern: randomPattern(r), Mode: m}, Run: fmt.Sprintf("run_%d", i%5)})
		}
		x := NewIndex(holds)
		for range 100 {
			p := randomPattern(r)
			want := map[int]bool{}
			for i, h := range holds {
				if h.Pattern.Intersects(p) {
					want[i] = true
				}
			}
			got := map[string]int{}
			x.Meeting(p, func(h Hold) bool {
				got[h.Pattern.String()+"|"+string(h.Mode)+"|"+h.Run]++
				return true
			})
			wantKeys := map[string]int{}
			for i := range want {
				h := holds[i]
				wantKeys[h.Pattern.String()+"|"+string(h.Mode)+"|"+h.Run]++
			}
			if fmt.Sprint(got) != fmt.Sprint(wantKeys) {
				t.Fatalf("seed %d: Meeting(%s) = %v, want %v", seed, p, got, wantKeys)
			}
		}
	}
}

func TestBlockers(t *testing.T) {
	x := NewIndex([]Hold{
		{Reservation: Reservation{MustParse("time_sleep.slow_a"), Write}, Run: "run_a", Holder: "alice@laptop"},
		{Reservation: Reservation{MustParse("module.net.*"), Read}, Run: "run_b", Holder: "bob@ci"},
	})
	want := []Reservation{
		{MustParse("time_sleep.slow_a"), Read},             // blocked by a's write
		{MustParse("time_sleep.slow_b"), Write},            // free
		{MustParse(`module.net["eu"].aws_vpc.main`), Read}, // read/read: free
		{MustParse("module.net.aws_vpc.main"), Write},      // blocked by b's read
	}
	bs := x.Blockers(want, "")
	if len(bs) != 2 || bs[0].Run != "run_a" || bs[1].Run != "run_b" {
		t.Fatalf("blockers = %+v", bs)
	}
	if bs := x.Blockers(want, "run_a"); len(bs) != 1 || bs[0].Run != "run_b" {
		t.Errorf("a run blocked itself: %+v", bs)
	}
}

func TestNormalize(t *testing.T) {
	got, err := Normalize([]Reservation{
		{MustParse("b.x"), Read}, {MustParse("a.x"), Read}, {MustParse("b.x"), Write}, {MustParse("a.x"), Read},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].String() != "a.x (read)" || got[1].String() != "b.x (write)" {
		t.Errorf("Normalize = %v", got)
	}
	if _, err := Normalize([]Reservation{{MustParse("a.x"), "admin"}}); err == nil {
		t.Error("an unknown mode was accepted")
	}
	if _, err := Normalize([]Reservation{{Mode: Read}}); err == nil {
		t.Error("a zero pattern was accepted")
	}
}

func TestCoveringSpellings(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 5000 {
		p, q := randomPattern(r), randomPattern(r)
		in := false
		for _, s := range CoveringSpellings(q) {
			if s == p.String() {
				in = true
			}
		}
		if in != p.Covers(q) {
			t.Fatalf("%s covers %s: %v, but CoveringSpellings(%s) lists it: %v (%q)", p, q, p.Covers(q), q, in, CoveringSpellings(q))
		}
	}
	deep := "module.a[0].module.a[1].module.a[2].module.a[3].module.a[4].module.a[5].module.a[6].module.a[7].module.a[8].t.n"
	if _, err := Parse(deep); err == nil {
		t.Error("a pattern with 9 keyed module calls was accepted")
	}
}

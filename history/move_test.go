package history_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/history"
	"github.com/kilolock/kilolock/internal/testpg"
	"github.com/kilolock/kilolock/store"
	"github.com/kilolock/kilolock/store/sqlite"
	"github.com/kilolock/kilolock/tenancy"
)

// res is a resource of a test state: its module path, type.name, keys
// (none: a single instance) and dependencies.
type res struct {
	module, typ, name string
	keys              []int
	deps              []string
	pad               string // the input attribute, to give instances a size
}

// doc renders a state the way OpenTofu writes one (compact): every
// resource a terraform_data whose instances' id is their address.
func doc(t testing.TB, serial int64, lineage string, outputs map[string]string, rs ...res) []byte {
	t.Helper()
	type inst struct {
		IndexKey     *int           `json:"index_key,omitempty"`
		Schema       int            `json:"schema_version"`
		Attributes   map[string]any `json:"attributes"`
		Sensitive    []any          `json:"sensitive_attributes"`
		Dependencies []string       `json:"dependencies,omitempty"`
	}
	type resource struct {
		Module    string `json:"module,omitempty"`
		Mode      string `json:"mode"`
		Type      string `json:"type"`
		Name      string `json:"name"`
		Provider  string `json:"provider"`
		Instances []inst `json:"instances"`
	}
	var resources []resource
	for _, r := range rs {
		addr := r.typ + "." + r.name
		if r.module != "" {
			addr = r.module + "." + addr
		}
		out := resource{Module: r.module, Mode: "managed", Type: r.typ, Name: r.name, Provider: `provider["terraform.io/builtin/terraform"]`, Instances: []inst{}}
		mk := func(id string, k *int) inst {
			var input any
			if r.pad != "" {
				input = r.pad
			}
			return inst{IndexKey: k, Attributes: map[string]any{"id": id, "input": input, "output": nil, "triggers_replace": nil}, Sensitive: []any{}, Dependencies: r.deps}
		}
		if r.keys == nil {
			out.Instances = append(out.Instances, mk(addr, nil))
		}
		for _, k := range r.keys {
			out.Instances = append(out.Instances, mk(fmt.Sprintf("%s[%d]", addr, k), &k))
		}
		resources = append(resources, out)
	}
	outs := map[string]any{}
	for n, v := range outputs {
		outs[n] = map[string]any{"value": v, "type": "string"}
	}
	b, err := json.Marshal(map[string]any{"version": 4, "terraform_version": "1.10.0", "serial": serial, "lineage": lineage,
		"outputs": outs, "resources": resources, "check_results": nil})
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

func TestMain(m *testing.M) { testpg.Main(m) }

func newEngine(t testing.TB) (*kilolock.Engine, *sqlite.Store) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "kl.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return kilolock.NewEngine(st, kilolock.Options{}), st
}

func ids(t testing.TB, e *kilolock.Engine, name string) []string {
	t.Helper()
	g, _, err := e.Graph(context.Background(), name)
	if err != nil {
		t.Fatalf("Graph(%s): %v", name, err)
	}
	var out []string
	for i := range g.Instances {
		out = append(out, g.Instances[i].ID())
	}
	sort.Strings(out)
	return out
}

func write(t testing.TB, e *kilolock.Engine, name string, b []byte) {
	t.Helper()
	if _, err := e.Write(context.Background(), name, b, kilolock.WriteOptions{}); err != nil {
		t.Fatalf("Write(%s): %v", name, err)
	}
}

const lineageA, lineageB = "aaaaaaaa-0000-4000-8000-000000000001", "bbbbbbbb-0000-4000-8000-000000000002"

// netState is state a of the issue: module.net with 3 instances, an app
// left behind depending on it, an output reading it.
func netState(t testing.TB, e *kilolock.Engine) {
	t.Helper()
	write(t, e, "a", doc(t, 1, lineageA, map[string]string{"vpc": "module.net.terraform_data.vpc"},
		res{module: "module.net", typ: "terraform_data", name: "vpc"},
		res{module: "module.net", typ: "terraform_data", name: "subnet", keys: []int{0, 1}, deps: []string{"module.net.terraform_data.vpc"}},
		res{typ: "terraform_data", name: "app", deps: []string{"module.net.terraform_data.subnet"}}))
	write(t, e, "b", doc(t, 1, lineageB, nil, res{typ: "terraform_data", name: "other"}))
}

func TestMoveModule(t *testing.T) {
	ctx := context.Background()
	e, st := newEngine(t)
	netState(t, e)
	beforeA, beforeB := ids(t, e, "a"), ids(t, e, "b")

	dry, err := history.Move(ctx, e, "a", "b", []history.MovePair{{From: "module.net"}}, history.MoveOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(dry.Moved) != 3 || dry.Versions != nil || !dry.DryRun {
		t.Fatalf("dry run = %+v", dry)
	}
	kinds := map[string]bool{}
	for _, ed := range dry.Edges {
		kinds[ed.Kind+" "+ed.From+" -> "+ed.To] = true
	}
	for _, want := range []string{
		history.EdgeLeftOnMoved + " terraform_data.app -> module.net.terraform_data.subnet",
		history.EdgeOutput + " output.vpc -> module.net.terraform_data.vpc",
	} {
		if !kinds[want] {
			t.Errorf("dry run edges %v lack %q", dry.Edges, want)
		}
	}
	if !slices.Equal(ids(t, e, "a"), beforeA) || !slices.Equal(ids(t, e, "b"), beforeB) {
		t.Fatal("a dry run moved something")
	}

	gA, _, _ := e.Graph(ctx, "a")
	subnet := gA.Instances[gA.Index()["module.net.terraform_data.subnet[1]"]]
	r, err := history.Move(ctx, e, "a", "b", []history.MovePair{{From: "module.net"}}, history.MoveOptions{Actor: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Versions.From.Source != kilolock.SourceMove || r.Versions.To.Source != kilolock.SourceMove || r.Versions.From.Removed != 3 || r.Versions.To.Added != 3 || r.Versions.To.Actor != "alice" {
		t.Fatalf("versions = %+v, %+v", r.Versions.From, r.Versions.To)
	}
	if got := ids(t, e, "a"); !slices.Equal(got, []string{"terraform_data.app"}) {
		t.Errorf("a holds %v", got)
	}
	if got := ids(t, e, "b"); len(got) != 4 {
		t.Errorf("b holds %v", got)
	}
	gB, _, _ := e.Graph(ctx, "b")
	moved := gB.Instances[gB.Index()["module.net.terraform_data.subnet[1]"]]
	if !bytes.Equal(moved.Object, subnet.Object) || !slices.Equal(moved.Dependencies, []string{"module.net.terraform_data.vpc"}) {
		t.Errorf("the moved object changed: %s", moved.Object)
	}
	// Both served documents parse and keep their lineages.
	for name, lin := range map[string]string{"a": lineageA, "b": lineageB} {
		d, err := e.Read(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		g, err := graph.Parse(d.Bytes)
		if err != nil || g.Lineage != lin || g.Serial != 2 {
			t.Errorf("%s reads back as %v (lineage %s serial %d)", name, err, g.Lineage, g.Serial)
		}
	}
	recs, err := st.Moves(ctx, "b")
	if err != nil || len(recs) != 1 || recs[0].FromVersion != 2 || recs[0].ToVersion != 2 || recs[0].Instances != 3 {
		t.Errorf("Moves(b) = %+v, %v", recs, err)
	}
	if len(r.Config) < 3 || !strings.Contains(strings.Join(r.Config, "\n"), "create the objects again") {
		t.Errorf("config steps = %q", r.Config)
	}

	// Into a taken address: refused, nothing changed.
	write(t, e, "c", doc(t, 1, lineageA, nil, res{module: "module.net", typ: "terraform_data", name: "vpc"}))
	_, err = history.Move(ctx, e, "b", "c", []history.MovePair{{From: "module.net"}}, history.MoveOptions{})
	var me *history.MoveError
	if !errors.As(err, &me) || me.Code != history.MoveDestinationExists {
		t.Fatalf("move onto a taken address: %v", err)
	}
	// Renamed on the way, dependencies following.
	if _, err := history.Move(ctx, e, "b", "c", []history.MovePair{{From: "module.net", To: "module.network"}}, history.MoveOptions{}); err != nil {
		t.Fatal(err)
	}
	gC, _, _ := e.Graph(ctx, "c")
	in := gC.Instances[gC.Index()["module.network.terraform_data.subnet[0]"]]
	if !slices.Equal(in.Dependencies, []string{"module.network.terraform_data.vpc"}) {
		t.Errorf("renamed dependencies = %v", in.Dependencies)
	}
}

func TestMoveRefusedWhileLocked(t *testing.T) {
	ctx := context.Background()
	e, _ := newEngine(t)
	netState(t, e)
	if _, err := e.Lock(ctx, "b", kilolock.LockInfo{ID: "apply-1", Operation: "OperationTypeApply", Who: "bob"}); err != nil {
		t.Fatal(err)
	}
	_, err := history.Move(ctx, e, "a", "b", []history.MovePair{{From: "module.net"}}, history.MoveOptions{})
	var me *history.MoveError
	if !errors.As(err, &me) || me.Code != history.MoveLocked || me.State != "b" {
		t.Fatalf("move into a locked state: %v", err)
	}
	if len(ids(t, e, "a")) != 4 || len(ids(t, e, "b")) != 1 {
		t.Error("a refused move changed something")
	}
}

func TestSplitAndMerge(t *testing.T) {
	ctx := context.Background()
	e, st := newEngine(t)
	netState(t, e)
	if err := st.SetLockMode(ctx, "a", kilolock.LockOptimistic); err != nil {
		t.Fatal(err)
	}
	r, err := history.Split(ctx, e, "a", "net", []string{"module.net"}, history.MoveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Versions.To.Number != 1 || len(r.Moved) != 3 {
		t.Fatalf("split = %+v", r)
	}
	info, err := e.State(ctx, "net")
	if err != nil || info.LockMode != kilolock.LockOptimistic || info.Lineage == lineageA || info.Lineage == "" {
		t.Fatalf("split target = %+v, %v", info, err)
	}
	if _, err := history.Split(ctx, e, "a", "net", []string{"terraform_data.app"}, history.MoveOptions{}); !errors.Is(err, kilolock.ErrConflict) {
		t.Errorf("split onto an existing state: %v", err)
	}

	m, err := history.Merge(ctx, e, "net", "b", history.MoveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !m.Archived || len(ids(t, e, "b")) != 4 || len(ids(t, e, "net")) != 0 {
		t.Errorf("merge = %+v; b %v net %v", m, ids(t, e, "b"), ids(t, e, "net"))
	}
	if l, _ := st.StateLifecycle(ctx, "net"); l != tenancy.LifecycleArchived {
		t.Errorf("merged state lifecycle = %s", l)
	}
	_, err = history.Move(ctx, e, "net", "a", []history.MovePair{{From: "module.net"}}, history.MoveOptions{})
	var me *history.MoveError
	if !errors.As(err, &me) && !errors.Is(err, kilolock.ErrInvalid) {
		t.Errorf("move out of an archived state: %v", err)
	}
}

// TestMoveModel: random moves between two states mixed with commits and
// rollbacks of either, against a sequential model of each state's
// versions. Only rollbacks may put an instance in both states or in
// neither (and only where the model says so); a move never does.
func TestMoveModel(t *testing.T) {
	ctx := context.Background()
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	e, _ := newEngine(t)

	type content = map[string]bool // resource names
	versions := map[string][]content{"a": {nil}, "b": {nil}}
	cur := func(name string) content { v := versions[name]; return v[len(v)-1] }
	render := func(name string, c content) []byte {
		var rs []res
		for n := range c {
			rs = append(rs, res{typ: "terraform_data", name: n})
		}
		info, err := e.State(ctx, name)
		serial, lin := int64(1), map[string]string{"a": lineageA, "b": lineageB}[name]
		if err == nil {
			serial = int64(info.Serial) + 1
		}
		return doc(t, serial, lin, nil, rs...)
	}
	push := func(name string, c content) { versions[name] = append(versions[name], c) }
	clone := func(c content) content {
		out := content{}
		for k := range c {
			out[k] = true
		}
		return out
	}
	next := 0
	for _, name := range []string{"a", "b"} {
		c := content{}
		for range 6 {
			c[fmt.Sprintf("r%d", next)] = true
			next++
		}
		write(t, e, name, render(name, c))
		push(name, c)
	}
	check := func(step int, what string) {
		for _, name := range []string{"a", "b"} {
			var want []string
			for n := range cur(name) {
				want = append(want, "terraform_data."+n)
			}
			sort.Strings(want)
			if got := ids(t, e, name); !slices.Equal(got, want) {
				t.Fatalf("step %d (%s): %s holds %v, the model %v", step, what, name, got, want)
			}
		}
	}
	for step := range 120 {
		name, other := "a", "b"
		if rng.IntN(2) == 1 {
			name, other = "b", "a"
		}
		switch k := rng.IntN(10); {
		case k < 5: // a move of a random subset
			var names []string
			for n := range cur(name) {
				names = append(names, n)
			}
			sort.Strings(names)
			if len(names) == 0 {
				continue
			}
			rng.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
			names = names[:1+rng.IntN(len(names))]
			var pairs []history.MovePair
			for _, n := range names {
				pairs = append(pairs, history.MovePair{From: "terraform_data." + n})
			}
			_, err := history.Move(ctx, e, name, other, pairs, history.MoveOptions{})
			clash := false
			for _, n := range names {
				clash = clash || cur(other)[n]
			}
			var me *history.MoveError
			switch {
			case clash && errors.As(err, &me) && me.Code == history.MoveDestinationExists:
			case clash:
				t.Fatalf("step %d: a move onto a held address: %v", step, err)
			case err != nil:
				t.Fatalf("step %d: move: %v", step, err)
			default:
				from, to := clone(cur(name)), clone(cur(other))
				for _, n := range names {
					delete(from, n)
					to[n] = true
				}
				push(name, from)
				push(other, to)
			}
			check(step, "move")
		case k < 8: // a commit adding one and dropping one
			c := clone(cur(name))
			c[fmt.Sprintf("r%d", next)] = true
			next++
			for n := range c {
				if rng.IntN(4) == 0 {
					delete(c, n)
					break
				}
			}
			write(t, e, name, render(name, c))
			push(name, c)
			check(step, "commit")
		default: // a rollback of one side alone
			n := 1 + rng.IntN(len(versions[name])-1)
			ref, err := kilolock.ParseVersionRef(fmt.Sprintf("@%d", n))
			if err != nil {
				t.Fatal(err)
			}
			r, err := history.Rollback(ctx, e, name, ref, history.RollbackOptions{})
			if err != nil {
				t.Fatalf("step %d: rollback %s to @%d: %v", step, name, n, err)
			}
			if r.Version != nil {
				push(name, clone(versions[name][n]))
			}
			check(step, "rollback")
		}
	}
}

// TestRollbackAfterMoveWarns: rolling back one side of a move alone says
// the other still holds the instances and names the reverse move.
func TestRollbackAfterMoveWarns(t *testing.T) {
	ctx := context.Background()
	e, _ := newEngine(t)
	netState(t, e)
	if _, err := history.Move(ctx, e, "a", "b", []history.MovePair{{From: "module.net"}}, history.MoveOptions{}); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"a": "would put them in both states", "b": "would leave them in neither state"} {
		plan, err := history.PlanRollback(ctx, e, name, kilolock.VersionRef{Kind: kilolock.RefNumber, N: 1})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(plan.Warning, want) || !strings.Contains(plan.Warning, "--to-state") {
			t.Errorf("rollback of %s warns %q", name, plan.Warning)
		}
	}
}

// TestOppositeMovesConcurrently: moves a -> b and b -> a at once, on each
// store, all land (rows locked in state-id order: no deadlock), and every
// instance ends in exactly one state.
func TestOppositeMovesConcurrently(t *testing.T) {
	for _, s := range []struct {
		name string
		url  func(t *testing.T) string
	}{
		{"sqlite", func(t *testing.T) string { return filepath.Join(t.TempDir(), "kl.db") }},
		{"postgres", func(t *testing.T) string { return testpg.URL(t) }},
	} {
		t.Run(s.name, func(t *testing.T) {
			ctx := context.Background()
			st, err := store.Open(ctx, s.url(t))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			e := kilolock.NewEngine(st, kilolock.Options{})
			write(t, e, "a", doc(t, 1, lineageA, nil, res{typ: "terraform_data", name: "ax", keys: []int{0, 1, 2}}))
			write(t, e, "b", doc(t, 1, lineageB, nil, res{typ: "terraform_data", name: "bx", keys: []int{0, 1, 2}}))
			const rounds = 15
			errs := make(chan error, 2)
			for _, dir := range [][3]string{{"a", "b", "terraform_data.ax"}, {"b", "a", "terraform_data.bx"}} {
				go func() {
					from, to := dir[0], dir[1]
					for range 2 * rounds {
						for {
							_, err := history.Move(ctx, e, from, to, []history.MovePair{{From: dir[2]}}, history.MoveOptions{})
							if errors.Is(err, kilolock.ErrStale) {
								continue
							}
							if err != nil {
								errs <- fmt.Errorf("move %s -> %s: %w", from, to, err)
								return
							}
							break
						}
						from, to = to, from
					}
					errs <- nil
				}()
			}
			for range 2 {
				if err := <-errs; err != nil {
					t.Fatal(err)
				}
			}
			a, b := ids(t, e, "a"), ids(t, e, "b")
			if len(a) != 3 || len(b) != 3 || !strings.HasPrefix(a[0], "terraform_data.ax") || !strings.HasPrefix(b[0], "terraform_data.bx") {
				t.Errorf("after %d round trips each: a %v, b %v", rounds, a, b)
			}
		})
	}
}

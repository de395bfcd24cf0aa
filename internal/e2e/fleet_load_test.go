package e2e_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/graph/graphtest"
)

// A fleet is the load of issue 27: many states of one size, and writers
// that each take a state no other writer holds at that moment, at random,
// and change two of its instances in one LOCK → POST → UNLOCK cycle, as
// Terraform's http backend does. It knows what every state should hold, so
// that a run ends by reading each one back, byte for byte.
//
// Its states hold little in the harness's memory: every state starts as
// one generated document (graphtest.Generate, Terraform's indented form),
// and each is that document with its own serial and, per instance, how
// many times its input value was changed (graphtest.Series.Edit applies
// them).
type fleet struct {
	base   []byte
	series *graphtest.Series
	states []fleetState
	// asCLI, when set, is the base decoded: each POST's body is then
	// encoded whole as Terraform's state writer does (json.MarshalIndent),
	// the client's cost per POST (5-7 ms of CPU a cycle of 0.4 MB with
	// its HTTP, measured as bench_cpu_ms/commit), rather than
	// edited in place; the bytes are the same.
	asCLI *graphtest.StateV4
	// cli, when set, makes each cycle with the real OpenTofu CLI (see
	// fleetCLI).
	cli *fleetCLI

	mu   sync.Mutex
	free []int // the states no writer holds
}

// fleetState is what one state of a fleet holds: its serial and the
// changes to each instance (mod 26, the letters Edit cycles through).
type fleetState struct {
	serial uint64
	shifts []uint8
}

// fleetAttrBytes is the attributes' size of each instance: a 500-instance
// state is then about 0.4 MB, as in the issue.
const fleetAttrBytes = 560

// fleetDocs are the generated first versions, by instance count and
// format, made once per test binary.
var fleetDocs = struct {
	sync.Mutex
	docs map[fleetDoc][]byte
}{docs: map[fleetDoc][]byte{}}

type fleetDoc struct {
	instances int
	format    graph.Format
}

// newFleet is a fleet of states of instances each, in Terraform's
// indented form.
func newFleet(tb testing.TB, states, instances int) *fleet {
	tb.Helper()
	return newFleetIn(tb, states, instances, graph.FormatIndent)
}

// newFleetIn is newFleet in format.
func newFleetIn(tb testing.TB, states, instances int, format graph.Format) *fleet {
	tb.Helper()
	fleetDocs.Lock()
	key := fleetDoc{instances, format}
	base, ok := fleetDocs.docs[key]
	if !ok {
		base = graphtest.Generate(instances, fleetAttrBytes, format)
		fleetDocs.docs[key] = base
	}
	fleetDocs.Unlock()
	series, err := graphtest.NewSeries(base)
	if err != nil {
		tb.Fatal(err)
	}
	f := &fleet{base: base, series: series, states: make([]fleetState, states), free: make([]int, states)}
	for i := range f.states {
		f.states[i] = fleetState{serial: series.Serial(), shifts: make([]uint8, series.Len())}
		f.free[i] = i
	}
	return f
}

func fleetName(i int) string { return fmt.Sprintf("fleet-%05d", i) }

// encodeAsCLI makes each POST's body as Terraform's CLI does (see
// fleet.asCLI).
func (f *fleet) encodeAsCLI(tb testing.TB) {
	tb.Helper()
	s, err := graphtest.Decode(f.base)
	if err != nil {
		tb.Fatal(err)
	}
	f.asCLI = s
}

// post is the body of a POST of st: doc's bytes, made as the fleet's
// client makes them.
func (f *fleet) post(st *fleetState) ([]byte, error) {
	if f.asCLI == nil {
		return f.doc(st)
	}
	s := *f.asCLI
	s.Serial = st.serial
	s.Resources = slices.Clone(s.Resources)
	k := 0
	for ri := range s.Resources {
		r := &s.Resources[ri]
		r.Instances = slices.Clone(r.Instances)
		for ii := range r.Instances {
			if n := st.shifts[k]; n > 0 {
				in := &r.Instances[ii]
				attrs, err := shifted(in.Attributes, n)
				if err != nil {
					return nil, fmt.Errorf("instance %d: %w", k, err)
				}
				in.Attributes = attrs
			}
			k++
		}
	}
	return graphtest.Encode(&s, graph.FormatIndent), nil
}

// shifted is attributes (as the document spells them) with the first
// letter of their input's value moved n letters on: what Series.Edit does
// to the document.
func shifted(attrs []byte, n uint8) ([]byte, error) {
	i := bytes.Index(attrs, []byte(`"input"`))
	j := -1
	if i >= 0 {
		j = bytes.Index(attrs[i:], []byte(`"value"`))
	}
	k := -1
	if j >= 0 {
		j += i + len(`"value"`)
		k = bytes.IndexByte(attrs[j:], '"')
	}
	if k < 0 || j+k+1 >= len(attrs) {
		return nil, fmt.Errorf("attributes without an input value")
	}
	out := bytes.Clone(attrs)
	c := &out[j+k+1]
	*c = 'a' + (*c-'a'+n)%26
	return out, nil
}

// doc is the document of st: the base with st's serial and changes.
func (f *fleet) doc(st *fleetState) ([]byte, error) {
	var which []int
	for i, n := range st.shifts {
		for range n {
			which = append(which, i)
		}
	}
	// Edit raises the serial by one: start from the one below.
	prev, err := graphtest.WithSerial(f.base, st.serial-1)
	if err != nil {
		return nil, err
	}
	return f.series.Edit(prev, which...)
}

// take gives a writer a state no other writer holds, at random.
func (f *fleet) take(rng *rand.Rand) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := rng.IntN(len(f.free))
	i := f.free[k]
	f.free[k] = f.free[len(f.free)-1]
	f.free = f.free[:len(f.free)-1]
	return i
}

func (f *fleet) give(i int) {
	f.mu.Lock()
	f.free = append(f.free, i)
	f.mu.Unlock()
}

// fleetTarget is a server a fleet runs against: kld or the blob server.
type fleetTarget struct {
	// stateURL is the address of a state, as the http backend's address.
	stateURL func(name string) string
	client   *http.Client
}

func newFleetTarget(stateURL func(string) string) *fleetTarget {
	return &fleetTarget{stateURL: stateURL, client: &http.Client{
		Timeout:   2 * time.Minute,
		Transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 64},
	}}
}

// do sends a request and fails unless the answer is 200.
func (t *fleetTarget) do(ctx context.Context, method, url string, body []byte, md5sum bool) error {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if md5sum {
		sum := md5.Sum(body)
		req.Header.Set("Content-MD5", base64.StdEncoding.EncodeToString(sum[:]))
	}
	resp, err := t.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %s %.300s", method, url, resp.Status, answer)
	}
	return nil
}

func (t *fleetTarget) get(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := t.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %s %.300s", url, resp.Status, body)
	}
	return body, err
}

// fleetTimes are the durations of each step of the cycles a run made.
type fleetTimes struct {
	lock, post, unlock []time.Duration
	commits            int
	elapsed            time.Duration
}

// seed POSTs every state's first version, writers at once.
func (f *fleet) seed(ctx context.Context, t *fleetTarget, writers int) error {
	return f.each(writers, func(i int) error {
		doc, err := f.post(&f.states[i])
		if err != nil {
			return err
		}
		return t.do(ctx, "POST", t.stateURL(fleetName(i)), doc, true)
	})
}

// each runs do on every state, writers at once.
func (f *fleet) each(writers int, do func(i int) error) error {
	var next atomic.Int64
	return parallel(writers, func() error {
		for {
			i := int(next.Add(1)) - 1
			if i >= len(f.states) {
				return nil
			}
			if err := do(i); err != nil {
				return err
			}
		}
	})
}

// run makes commits cycles with writers at once and returns their times.
func (f *fleet) run(ctx context.Context, t *fleetTarget, writers, commits int) (*fleetTimes, error) {
	var (
		left  atomic.Int64
		mu    sync.Mutex
		times fleetTimes
	)
	left.Store(int64(commits))
	begin := time.Now()
	err := parallel(writers, func() error {
		rng := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
		var mine fleetTimes
		defer func() {
			mu.Lock()
			times.lock = append(times.lock, mine.lock...)
			times.post = append(times.post, mine.post...)
			times.unlock = append(times.unlock, mine.unlock...)
			times.commits += mine.commits
			mu.Unlock()
		}()
		for left.Add(-1) >= 0 {
			i := f.take(rng)
			err := f.cycle(ctx, t, rng, i, &mine)
			f.give(i)
			if err != nil {
				return err
			}
		}
		return nil
	})
	times.elapsed = time.Since(begin)
	return &times, err
}

// cycle is one writer's LOCK → POST → UNLOCK of state i, changing two of
// its instances.
func (f *fleet) cycle(ctx context.Context, t *fleetTarget, rng *rand.Rand, i int, times *fleetTimes) error {
	st := &f.states[i]
	next := fleetState{serial: st.serial + 1, shifts: slices.Clone(st.shifts)}
	a := rng.IntN(len(next.shifts))
	b := (a + 1 + rng.IntN(len(next.shifts)-1)) % len(next.shifts)
	for _, k := range []int{a, b} {
		next.shifts[k] = (next.shifts[k] + 1) % 26
	}
	if f.cli != nil {
		// tofu state push writes the file's state with the serial after
		// the file's.
		file := next
		next.serial++
		doc, err := f.post(&file)
		if err != nil {
			return err
		}
		if err := f.cli.push(ctx, i, doc, times); err != nil {
			return err
		}
		*st = next
		return nil
	}
	doc, err := f.post(&next)
	if err != nil {
		return err
	}
	id := fmt.Sprintf("%08x-0000-4000-8000-%012x", rng.Uint32(), rng.Uint64()&(1<<48-1))
	info, _ := json.Marshal(map[string]any{
		"ID": id, "Operation": "OperationTypeApply", "Info": "", "Who": "fleet@bench",
		"Version": "1.5.7", "Created": time.Now().UTC().Format(time.RFC3339Nano), "Path": "",
	})
	url := t.stateURL(fleetName(i))
	begin := time.Now()
	if err := t.do(ctx, "LOCK", url, info, false); err != nil {
		return err
	}
	locked := time.Now()
	if err := t.do(ctx, "POST", url+"?ID="+id, doc, true); err != nil {
		return err
	}
	posted := time.Now()
	// Committed: what the state holds now, whatever the unlock says.
	*st = next
	if err := t.do(ctx, "UNLOCK", url, info, false); err != nil {
		return err
	}
	times.lock = append(times.lock, locked.Sub(begin))
	times.post = append(times.post, posted.Sub(locked))
	times.unlock = append(times.unlock, time.Since(posted))
	times.commits++
	return nil
}

// verify GETs every state and compares it with what the fleet wrote.
func (f *fleet) verify(ctx context.Context, t *fleetTarget, writers int) error {
	return f.each(writers, func(i int) error {
		want, err := f.doc(&f.states[i])
		if err != nil {
			return err
		}
		got, err := t.get(ctx, t.stateURL(fleetName(i)))
		if err != nil {
			return err
		}
		if !bytes.Equal(got, want) {
			return fmt.Errorf("state %s: GET answers %d bytes that are not the %d of serial %d last posted", fleetName(i), len(got), len(want), f.states[i].serial)
		}
		return nil
	})
}

// parallel runs n copies of work and returns the first error.
func parallel(n int, work func() error) error {
	errs := make(chan error, n)
	for range n {
		go func() { errs <- work() }()
	}
	var first error
	for range n {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// percentile is the p-th percentile of ds (sorted in place), in ms.
func percentile(ds []time.Duration, p float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	k := int(float64(len(ds))*p/100+0.999999) - 1
	k = min(max(k, 0), len(ds)-1)
	return float64(ds[k].Microseconds()) / 1000
}

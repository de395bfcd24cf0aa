package e2e_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kilolock/kilolock/internal/tofu"
)

// crashKLD is a kld this test kills with SIGKILL and starts again on the
// same database: tofu.Server would report a killed kld as a failure.
type crashKLD struct {
	url string
	cmd *exec.Cmd
}

var crashListen = regexp.MustCompile(`^(http://127\.0\.0\.1:[0-9]+)$`)

func startCrashKLD(t *testing.T, databaseURL string) *crashKLD {
	t.Helper()
	cmd := exec.Command(tofu.BuildKLD(t), "--listen", "127.0.0.1:0", "--database", databaseURL)
	cmd.Env = tofu.CleanEnv("KL_")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	k := &crashKLD{cmd: cmd}
	t.Cleanup(k.kill)
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := crashListen.FindStringSubmatch(strings.TrimSpace(sc.Text())); m != nil {
				select {
				case urls <- m[1]:
				default:
				}
			}
		}
	}()
	select {
	case k.url = <-urls:
	case <-time.After(60 * time.Second):
		t.Fatalf("kld did not start")
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if resp, err := http.Get(k.url + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return k
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("kld never ready")
		}
	}
}

func (k *crashKLD) kill() {
	if k.cmd.ProcessState == nil {
		k.cmd.Process.Signal(syscall.SIGKILL)
		k.cmd.Wait()
	}
}

// crashDoc is a state of terraform_data resources named names.
func crashDoc(serial int, lineage string, names []string) []byte {
	type inst struct {
		Schema     int            `json:"schema_version"`
		Attributes map[string]any `json:"attributes"`
		Sensitive  []any          `json:"sensitive_attributes"`
	}
	type res struct {
		Mode      string `json:"mode"`
		Type      string `json:"type"`
		Name      string `json:"name"`
		Provider  string `json:"provider"`
		Instances []inst `json:"instances"`
	}
	rs := []res{}
	for _, n := range names {
		rs = append(rs, res{Mode: "managed", Type: "terraform_data", Name: n, Provider: `provider["terraform.io/builtin/terraform"]`,
			Instances: []inst{{Attributes: map[string]any{"id": "id-" + n, "input": nil, "output": nil, "triggers_replace": nil}, Sensitive: []any{}}}})
	}
	b, _ := json.Marshal(map[string]any{"version": 4, "terraform_version": "1.10.0", "serial": serial, "lineage": lineage, "outputs": map[string]any{}, "resources": rs})
	return b
}

// TestMovesSurviveKill9: 200 moves of random sets of resources back and
// forth between two states, kld killed with SIGKILL in the middle of
// every tenth and started again: every acknowledged move is whole on both
// sides (each resource where the last acknowledged move put it, unless an
// unacknowledged one touched it since), and no resource is ever in both
// states or in neither.
func TestMovesSurviveKill9(t *testing.T) {
	eachStore(t, func(t *testing.T, databaseURL string) {
		seed := rand.Uint64()
		t.Logf("seed %d", seed)
		rng := rand.New(rand.NewPCG(seed, 7))
		k := startCrashKLD(t, databaseURL)
		var all []string
		for i := range 30 {
			all = append(all, fmt.Sprintf("r%02d", i))
		}
		where := map[string]string{} // resource -> state, by acknowledged moves
		for _, r := range all {
			where[r] = "a"
		}
		post := func(name string, doc []byte) {
			t.Helper()
			if code, b := request(t, http.MethodPost, k.url+"/v1/states/"+name, doc); code != 200 {
				t.Fatalf("POST %s: %d %s", name, code, b)
			}
		}
		post("a", crashDoc(1, "aaaaaaaa-0000-4000-8000-00000000000a", all))
		post("b", crashDoc(1, "bbbbbbbb-0000-4000-8000-00000000000b", []string{"anchor"}))

		holds := func(name string) []string {
			t.Helper()
			code, b := request(t, http.MethodGet, k.url+"/v1/states/"+name, nil)
			if code != 200 {
				t.Fatalf("GET %s: %d %s", name, code, b)
			}
			var s struct {
				Resources []struct {
					Name string `json:"name"`
				} `json:"resources"`
			}
			if err := json.Unmarshal(b, &s); err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, r := range s.Resources {
				if r.Name != "anchor" {
					out = append(out, r.Name)
				}
			}
			return out
		}
		// check compares both states with the model, then takes what
		// they hold as the model (settling unacknowledged moves).
		uncertain := map[string]bool{}
		check := func(when string) {
			t.Helper()
			got := map[string]string{}
			for _, name := range []string{"a", "b"} {
				for _, r := range holds(name) {
					if prev, twice := got[r]; twice {
						t.Fatalf("%s: %s is in both %s and %s", when, r, prev, name)
					}
					got[r] = name
				}
			}
			for _, r := range all {
				switch {
				case got[r] == "":
					t.Fatalf("%s: %s is in neither state", when, r)
				case !uncertain[r] && got[r] != where[r]:
					t.Fatalf("%s: an acknowledged move put %s in %s, it is in %s", when, r, where[r], got[r])
				}
				where[r] = got[r]
			}
			clear(uncertain)
		}

		var acked, lost, kills, landed int
		for i := range 200 {
			from := "a"
			if rng.IntN(2) == 1 {
				from = "b"
			}
			to := map[string]string{"a": "b", "b": "a"}[from]
			var names []string
			for _, r := range all {
				if where[r] == from {
					names = append(names, r)
				}
			}
			if len(names) == 0 {
				from, to = to, from
				for _, r := range all {
					names = append(names, r)
				}
			}
			rng.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
			names = names[:1+rng.IntN(min(len(names), 8))]
			var pairs []map[string]string
			for _, n := range names {
				pairs = append(pairs, map[string]string{"from": "terraform_data." + n})
			}
			body, _ := json.Marshal(map[string]any{"from": from, "to": to, "addresses": pairs})
			crash := i%10 == 9
			done := make(chan int, 1)
			go func() {
				resp, err := http.Post(k.url+"/v1/api/moves", "application/json", bytes.NewReader(body))
				if err != nil {
					done <- 0
					return
				}
				resp.Body.Close()
				done <- resp.StatusCode
			}()
			if crash {
				time.Sleep(time.Duration(rng.IntN(3000)) * time.Microsecond)
				k.kill()
				kills++
			}
			switch code := <-done; code {
			case 200:
				acked++
				for _, n := range names {
					where[n] = to
				}
			case 0:
				lost++
				for _, n := range names {
					uncertain[n] = true
				}
				// Whole or absent: all of names in to, or none.
				if !crash {
					t.Fatalf("move %d got no answer without a kill", i)
				}
				k = startCrashKLD(t, databaseURL)
				in := 0
				for _, n := range names {
					if slices.Contains(holds(to), n) {
						in++
					}
				}
				if in != 0 && in != len(names) {
					t.Fatalf("move %d, cut by a kill, is half applied: %d of %d in %s", i, in, len(names), to)
				}
				if in > 0 {
					landed++
				}
			default:
				t.Fatalf("move %d answered %d", i, code)
			}
			if crash {
				if k.cmd.ProcessState != nil {
					k = startCrashKLD(t, databaseURL)
				}
				check(fmt.Sprintf("after kill %d (move %d)", kills, i))
			}
		}
		check("at the end")
		t.Logf("200 moves: %d acknowledged, %d cut by %d kills: %d of them landed whole, the rest left nothing", acked, lost, kills, landed)
		if acked < 150 {
			t.Errorf("only %d of 200 moves were acknowledged", acked)
		}
	})
}

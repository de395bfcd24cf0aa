package e2e_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kilolock/kilolock/internal/tofu"
)

// searchModule is module "net": two subnets and a vpc.
const searchModule = `
variable "vpc" { type = string }
resource "terraform_data" "subnet" {
  count = 2
  input = "${var.vpc}-subnet-${count.index}"
}
resource "terraform_data" "vpc" { input = var.vpc }
`

// searchConfig is one state of the fleet: module net, a clock born at
// born (two states with the same born record the same object), a web
// server tagged tag, and a secret.
func searchConfig(vpc, born, tag, secret string) string {
	return `
terraform {
  required_providers {
    time = { source = "hashicorp/time" }
  }
}
module "net" {
  source = "./net"
  vpc    = "` + vpc + `"
}
resource "time_static" "born" { rfc3339 = "` + born + `" }
resource "terraform_data" "web" {
  input = { role = "web", tag = "` + tag + `" }
}
resource "terraform_data" "secret" { input = sensitive("` + secret + `") }
`
}

type searchHit struct {
	State   string   `json:"state"`
	Version int64    `json:"version"`
	Address string   `json:"address"`
	Paths   []string `json:"paths"`
}

// TestSearchAcrossStates: three states applied by OpenTofu; kl search by
// type, address pattern, attribute and text finds exactly the expected
// instances with their states, through kld and on the database; the two
// states whose time_static has the same rfc3339 (so the same id) are
// listed as duplicates, the third's clock is not; the secret's value is
// found by no search. Both stores.
func TestSearchAcrossStates(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, databaseURL string) {
		srv := setup(t, databaseURL)
		const secret = "hunter2-e2e-0f9c3b7a"
		fleet := []struct{ state, vpc, born, tag string }{
			{"net-a", "vpc-a", "2026-01-02T03:04:05Z", "blue"},
			{"net-b", "vpc-b", "2026-01-02T03:04:05Z", "green"},
			{"app", "vpc-c", "2025-06-07T08:09:10Z", "blue"},
		}
		for _, s := range fleet {
			wd := tofu.NewWorkdir(t, srv.Backend(s.state)+searchConfig(s.vpc, s.born, s.tag, secret))
			if err := os.MkdirAll(filepath.Join(wd.Dir, "net"), 0o755); err != nil {
				t.Fatal(err)
			}
			wd.WriteFile("net/main.tf", searchModule)
			wd.Must("init", "-no-color")
			wd.Must("apply", "-auto-approve", "-no-color")
		}

		search := func(target []string, args ...string) []string {
			t.Helper()
			out := mustKL(t, append(append(target, "search", "--json"), args...)...)
			var page struct {
				Hits []searchHit `json:"hits"`
			}
			if err := json.Unmarshal([]byte(out), &page); err != nil {
				t.Fatalf("kl search %v: %v\n%s", args, err, out)
			}
			got := []string{}
			for _, h := range page.Hits {
				if h.Version != 1 {
					t.Errorf("kl search %v: hit %+v, want version 1", args, h)
				}
				got = append(got, h.State+" "+h.Address)
			}
			slices.Sort(got)
			return got
		}
		for _, target := range [][]string{{"--server", srv.URL}, {"--database", databaseURL}} {
			for _, tc := range []struct {
				args []string
				want []string
			}{
				{[]string{"--type", "time_static"}, []string{"app time_static.born", "net-a time_static.born", "net-b time_static.born"}},
				{[]string{"--address", "module.net.*", "--state", "net-*"}, []string{
					"net-a module.net.terraform_data.subnet[0]", "net-a module.net.terraform_data.subnet[1]", "net-a module.net.terraform_data.vpc",
					"net-b module.net.terraform_data.subnet[0]", "net-b module.net.terraform_data.subnet[1]", "net-b module.net.terraform_data.vpc"}},
				{[]string{"--address", "module.net.terraform_data.subnet[1]"}, []string{"app module.net.terraform_data.subnet[1]", "net-a module.net.terraform_data.subnet[1]", "net-b module.net.terraform_data.subnet[1]"}},
				{[]string{"--attr", "input.value.tag=blue"}, []string{"app terraform_data.web", "net-a terraform_data.web"}},
				{[]string{"--attr", "rfc3339=2026-01-02T03:04:05Z"}, []string{"net-a time_static.born", "net-b time_static.born"}},
				{[]string{"--text", "VPC-B-SUBNET"}, []string{"net-b module.net.terraform_data.subnet[0]", "net-b module.net.terraform_data.subnet[1]"}},
				{[]string{"--text", secret}, []string{}},
				{[]string{"--text", "hunter2"}, []string{}},
				{[]string{"--attr", "input.value=" + secret}, []string{}},
				{[]string{"--attr", "input.value=vpc-a"}, []string{"net-a module.net.terraform_data.vpc"}},
			} {
				if got := search(target, tc.args...); !slices.Equal(got, tc.want) {
					t.Errorf("kl %s search %s:\n got %q\nwant %q", target[0], strings.Join(tc.args, " "), got, tc.want)
				}
			}
			out := mustKL(t, append(target, "search", "--attr", "input.value.tag=green")...)
			if !strings.Contains(out, "net-b  1        terraform_data.web  input.value.tag") {
				t.Errorf("kl %s search table:\n%s", target[0], out)
			}

			js := mustKL(t, append(target, "search", "--duplicates", "--json")...)
			var dl struct {
				Duplicates []struct {
					Type, Key, Value string
					Objects          []searchHit
				} `json:"duplicates"`
			}
			if err := json.Unmarshal([]byte(js), &dl); err != nil {
				t.Fatal(err)
			}
			if len(dl.Duplicates) != 1 {
				t.Fatalf("kl %s search --duplicates: %s", target[0], js)
			}
			d := dl.Duplicates[0]
			if d.Type != "time_static" || d.Key != "id" || d.Value != "2026-01-02T03:04:05Z" || len(d.Objects) != 2 ||
				d.Objects[0].Address != "time_static.born" || d.Objects[1].Address != "time_static.born" ||
				d.Objects[0].State == d.Objects[1].State || d.Objects[0].State == "app" || d.Objects[1].State == "app" {
				t.Errorf("kl %s search --duplicates: %+v", target[0], d)
			}
			if js := mustKL(t, append(target, "search", "--duplicates", "--type", "terraform_data", "--json")...); !strings.Contains(js, `"duplicates": []`) {
				t.Errorf("kl %s search --duplicates --type terraform_data: %s", target[0], js)
			}
		}
		if _, errOut, code := kl(t, "--server", srv.URL, "search", "--address", "module.net["); code != 2 || !strings.Contains(errOut, "hint:") {
			t.Errorf("a bad pattern: exit %d\n%s", code, errOut)
		}
	})
}

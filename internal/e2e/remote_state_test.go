package e2e_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/kilolock/kilolock/internal/tofu"
)

// producerOutputs is smallConfig's outputs and a sensitive one, for a
// configuration that another reads through terraform_remote_state.
const producerOutputs = `
output "secret" {
  value     = "s3cr3t-${terraform_data.counted[0].output}"
  sensitive = true
}
`

// consumerConfig reads the outputs at address through terraform_remote_state
// with backend "http" (attrs: its credentials) and passes them on.
func consumerConfig(address, attrs string) string {
	return fmt.Sprintf(`
data "terraform_remote_state" "network" {
  backend = "http"
  config = {
    address = %q
%s  }
}

output "counted" {
  value = data.terraform_remote_state.network.outputs.counted
}

output "secret" {
  value     = data.terraform_remote_state.network.outputs.secret
  sensitive = true
}
`, address, attrs)
}

// outputsOf is `tofu output -json` of d as name → value.
func outputsOf(t *testing.T, d *tofu.Workdir) map[string]json.RawMessage {
	t.Helper()
	var outs map[string]struct {
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal([]byte(d.Must("output", "-json")), &outs); err != nil {
		t.Fatal(err)
	}
	m := map[string]json.RawMessage{}
	for k, v := range outs {
		m[k] = v.Value
	}
	return m
}

// sameOutputs fails t unless the consumer passed on the producer's
// outputs, the sensitive one included.
func sameOutputs(t *testing.T, producer, consumer *tofu.Workdir) {
	t.Helper()
	p, c := outputsOf(t, producer), outputsOf(t, consumer)
	for _, name := range []string{"counted", "secret"} {
		if len(p[name]) == 0 || string(p[name]) != string(c[name]) {
			t.Errorf("output %s: the consumer read %s, the producer has %s", name, c[name], p[name])
		}
	}
	if !strings.HasPrefix(string(c["secret"]), `"s3cr3t-`) {
		t.Errorf("the sensitive output reached the consumer as %s", c["secret"])
	}
}

// TestRemoteStateOutputs: a second configuration reads the first's outputs
// through terraform_remote_state with backend "http" at the state's
// /outputs address, on the authenticated lane with an outputs-scoped token
// and on the local lane; the outputs token gets 403 on the full state, its
// lock and its writes, and the outputs address serves no resources.
func TestRemoteStateOutputs(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, databaseURL string) {
		c := startChecklist(t, databaseURL)
		producer := c.withBlock(t, c.path("network"), c.ws, c.auto.Secret)
		producer.config(smallConfig("v1") + producerOutputs)
		producer.Must("init", "-no-color")
		producer.Must("apply", "-auto-approve", "-no-color")

		out := c.automation(t, "outputs")
		address := c.srv.StateURL(c.path("network")) + "/outputs"
		creds := fmt.Sprintf("    username = %q\n    password = %q\n", c.ws, out.Secret)
		consumer := tofu.NewWorkdir(t, consumerConfig(address, creds))
		consumer.Must("init", "-no-color")
		if o := consumer.Must("apply", "-auto-approve", "-no-color"); !strings.Contains(o, "Apply complete!") {
			t.Errorf("the consumer's apply:\n%s", o)
		}
		sameOutputs(t, producer.Workdir, consumer)

		// What the token reads holds no resource.
		code, body := c.stateRequest(t, http.MethodGet, c.path("network")+"/outputs", c.ws, out.Secret, "", nil)
		if s := parseState(t, body); code != http.StatusOK || len(s.Resources) != 0 || s.Serial != pulledSerial(t, producer) {
			t.Errorf("GET …/outputs: %d, %d resources, serial %d", code, len(s.Resources), s.Serial)
		}
		// The full state, its lock and a write are refused to it: by the
		// CLI pointed at the state itself, and by kld to anyone who tries.
		full := tofu.NewWorkdir(t, consumerConfig(c.srv.StateURL(c.path("network")), creds))
		full.Must("init", "-no-color")
		mark := len(c.srv.Log())
		if _, stderr, code := full.Run("plan", "-no-color"); code == 0 || !strings.Contains(flat(stderr), tofuSays[http.StatusForbidden]) {
			t.Errorf("terraform_remote_state on the full state with the outputs token: exit %d\n%s", code, stderr)
		}
		expectDenial(t, c.srv, mark, "token_outputs_only")
		c.refused(t, c.withBlock(t, c.path("network"), c.ws, out.Secret), "token_outputs_only", "init", "-no-color")
		for _, m := range []string{http.MethodGet, "LOCK", http.MethodPost} {
			code, body := c.stateRequest(t, m, c.path("network"), c.ws, out.Secret, "", []byte(`{"ID":"x","Operation":"OperationTypePlan"}`))
			var e errorAnswer
			json.Unmarshal(body, &e)
			if code != http.StatusForbidden || e.Error != "token_outputs_only" || !strings.Contains(e.Hint, "/outputs") {
				t.Errorf("%s of the full state with the outputs token: %d %s", m, code, body)
			}
		}
		if got := pulledSerial(t, producer); got != 1 {
			t.Errorf("the state moved to serial %d", got)
		}
	})
}

// TestRemoteStateOutputsLocalLane: the same read on the local lane, which
// takes no credentials.
func TestRemoteStateOutputsLocalLane(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, databaseURL string) {
		srv := setup(t, databaseURL)
		producer := tofu.NewWorkdir(t, srv.Backend("network")+smallConfig("v1")+producerOutputs)
		producer.Must("init", "-no-color")
		producer.Must("apply", "-auto-approve", "-no-color")
		consumer := tofu.NewWorkdir(t, consumerConfig(srv.StateURL("network")+"/outputs", ""))
		consumer.Must("init", "-no-color")
		consumer.Must("apply", "-auto-approve", "-no-color")
		sameOutputs(t, producer, consumer)
	})
}

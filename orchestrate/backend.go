package orchestrate

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/tenancy"
)

// TFBackend is the KiloLock server and state a configuration directory's
// initialized http backend points at, read from what `init` wrote
// (.terraform/terraform.tfstate, or $TF_DATA_DIR/terraform.tfstate).
type TFBackend struct {
	// Server is the base URL of kld, without a trailing slash.
	Server string
	// State is the state's name in the JSON API: NAME on the local lane,
	// WS.ENV.NAME (its internal name) on the authenticated lane.
	State string
	// Address is the backend's state address as init saw it.
	Address string
	// Config is the backend's whole configuration as init saved it
	// (credentials included), for a scratch init that points elsewhere.
	Config map[string]any
}

// backendFile is the part of .terraform/terraform.tfstate kl reads.
type backendFile struct {
	Backend *struct {
		Type   string         `json:"type"`
		Config map[string]any `json:"config"`
	} `json:"backend"`
}

// DataDir returns the directory the CLI keeps its working data in for the
// configuration in dir: $TF_DATA_DIR (relative to dir) or dir/.terraform.
func DataDir(dir string) string {
	if d := os.Getenv("TF_DATA_DIR"); d != "" {
		if filepath.IsAbs(d) {
			return d
		}
		return filepath.Join(dir, d)
	}
	return filepath.Join(dir, ".terraform")
}

// ReadTFBackend reads the initialized backend of the configuration in dir.
// A directory never initialized, or one whose backend is not http, is a
// *kilolock.InvalidError saying to pass --server and --state.
func ReadTFBackend(dir string) (*TFBackend, error) {
	path := filepath.Join(DataDir(dir), "terraform.tfstate")
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, invalid(fmt.Sprintf("%s is not initialized (no %s)", dir, path), "run `tofu init` there with an http backend on kld, or name the server and state with --server URL --state NAME")
	}
	if err != nil {
		return nil, fmt.Errorf("read backend: %w", err)
	}
	var f backendFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("read backend %s: %w", path, err)
	}
	if f.Backend == nil || f.Backend.Type != "http" {
		typ := "none"
		if f.Backend != nil {
			typ = f.Backend.Type
		}
		return nil, invalid(fmt.Sprintf("the backend initialized in %s is %q, not KiloLock's http backend", dir, typ), "configure backend \"http\" with kld's address and run `tofu init`, or name the server and state with --server URL --state NAME")
	}
	addr, _ := f.Backend.Config["address"].(string)
	server, state, err := ParseStateAddress(addr)
	if err != nil {
		return nil, err
	}
	return &TFBackend{Server: server, State: state, Address: addr, Config: f.Backend.Config}, nil
}

// ParseStateAddress splits a backend address of kld into the server's base
// URL and the state's API name: …/v1/states/NAME (the local lane) or
// …/v1/states/WS/ENV/NAME (the authenticated lane, named WS.ENV.NAME).
func ParseStateAddress(addr string) (server, state string, err error) {
	u, perr := url.Parse(addr)
	bad := func(why string) error {
		return invalid(fmt.Sprintf("backend address %q is not a KiloLock state address: %s", addr, why), "kld's state addresses look like http://HOST:8080/v1/states/NAME; or name the server and state with --server URL --state NAME")
	}
	if perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", "", bad("not an http(s) URL")
	}
	prefix, rest, ok := strings.Cut(u.Path, "/v1/states/")
	if !ok {
		return "", "", bad("its path has no /v1/states/")
	}
	segs := strings.Split(strings.Trim(rest, "/"), "/")
	switch len(segs) {
	case 1:
		state = segs[0]
	case 3:
		if state, err = tenancy.TenantStateName(segs[0], segs[1], segs[2]); err != nil {
			return "", "", bad(err.Error())
		}
	default:
		return "", "", bad("the state is /v1/states/NAME or /v1/states/WS/ENV/NAME")
	}
	if err := kilolock.ValidStateName(state); err != nil {
		return "", "", bad(err.Error())
	}
	base := url.URL{Scheme: u.Scheme, Host: u.Host, User: u.User, Path: strings.TrimSuffix(prefix, "/")}
	return base.String(), state, nil
}

// RunAddress returns a backend address with ?run=RUN_ID added: the lock
// an orchestrated apply's CLI takes there is the run's. The http backend
// keeps the query and adds its own ID= for writes.
func RunAddress(addr, run string) (string, error) {
	u, err := url.Parse(addr)
	if err != nil {
		return "", fmt.Errorf("backend address: %w", err)
	}
	q := u.Query()
	q.Set("run", run)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// backendConfigArgs returns the -backend-config=KEY=VALUE arguments that
// reproduce cfg with its three addresses pointed at the run: so a scratch
// init keeps the credentials, methods and certificates the user's init
// had.
func backendConfigArgs(cfg map[string]any, run string) ([]string, error) {
	out := map[string]string{}
	for k, v := range cfg {
		switch v := v.(type) {
		case nil:
		case string:
			if v != "" {
				out[k] = v
			}
		case bool, float64:
			out[k] = fmt.Sprint(v)
		case json.Number:
			out[k] = v.String()
		}
	}
	addr := out["address"]
	for _, k := range []string{"address", "lock_address", "unlock_address"} {
		a := out[k]
		if a == "" {
			if k == "address" {
				continue
			}
			a = addr // unset lock/unlock addresses: the CLI would not lock
		}
		ra, err := RunAddress(a, run)
		if err != nil {
			return nil, err
		}
		out[k] = ra
	}
	keys := make([]string, 0, len(out))
	for k := range out {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	args := make([]string, 0, len(keys))
	for _, k := range keys {
		args = append(args, k+"="+out[k])
	}
	return args, nil
}

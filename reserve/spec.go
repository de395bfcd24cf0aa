package reserve

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/kilolock/kilolock/quota"
)

// SpecFormat and SpecVersion identify a plan spec file; a reader refuses
// a version it does not know rather than guess.
const (
	SpecFormat  = "kilolock-plan-spec"
	SpecVersion = 1
)

// Spec is what `kl plan` writes and `kl apply --orchestrated --plan-spec`
// reads: which state a plan was made against, what it will write and read,
// and the reservations an orchestrated apply takes before it changes any
// infrastructure.
type Spec struct {
	Format        string `json:"format"`
	FormatVersion int    `json:"format_version"`

	// State and Server name the backend the plan was made against.
	State  string `json:"state"`
	Server string `json:"server,omitempty"`
	// Source is the state the plan read: its serial and lineage.
	Source Source `json:"source"`

	// Dir is the configuration directory; Files and Targets the scope the
	// plan was limited to (neither: the whole configuration).
	Dir     string   `json:"dir"`
	Files   []string `json:"files,omitempty"`
	Targets []string `json:"targets,omitempty"`
	// PlanFile is the saved plan (tofu plan -out), relative to Dir.
	PlanFile string `json:"plan_file,omitempty"`
	// Variables and VarFiles were given to the plan; an apply of the spec
	// passes them again.
	Variables []Variable `json:"variables,omitempty"`
	VarFiles  []string   `json:"var_files,omitempty"`

	// Writes are every instance (and output) with an action other than
	// no-op; Reads what the written resources depend on.
	Writes []Change  `json:"writes"`
	Reads  []Pattern `json:"reads"`
	// Reservations are what an orchestrated apply takes: a write on each
	// write, a read on each read, in canonical order.
	Reservations []Reservation `json:"reservations"`
	Actions      Actions       `json:"actions"`
	// Quota is what the plan changes of what quotas count
	// (quota.CountPlan): its Delta is what kl apply asks the backend to
	// admit.
	Quota quota.PlanChanges `json:"quota"`

	Created   time.Time `json:"created"`
	CreatedBy string    `json:"created_by,omitempty"`
	TFVersion string    `json:"terraform_version,omitempty"`
}

// Source identifies the state a plan was made against.
type Source struct {
	Serial  uint64 `json:"serial"`
	Lineage string `json:"lineage"`
}

// Variable is a variable given on the command line (-var NAME=VALUE).
type Variable struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Change is one address a plan changes, with the plan's actions on it
// (["create"], ["update"], ["delete", "create"], …).
type Change struct {
	Address string   `json:"address"`
	Actions []string `json:"actions"`
	// Deposed is the deposed key when the change is to a deposed object.
	Deposed string `json:"deposed,omitempty"`
}

// Actions counts a plan's changes to managed resource instances. Replace
// counts both create-then-delete orders; Read counts data sources read.
type Actions struct {
	Create  int `json:"create"`
	Update  int `json:"update"`
	Delete  int `json:"delete"`
	Replace int `json:"replace"`
	Read    int `json:"read"`
	Outputs int `json:"outputs"`
}

// Summary is a one-line account: "1 to add, 1 to change, 0 to destroy,
// 1 to replace; reservations: 3 write, 1 read".
func (s *Spec) Summary() string {
	var w, r int
	for _, res := range s.Reservations {
		if res.Mode == Write {
			w++
		} else {
			r++
		}
	}
	return fmt.Sprintf("%d to add, %d to change, %d to destroy, %d to replace; reservations: %d write, %d read",
		s.Actions.Create, s.Actions.Update, s.Actions.Delete, s.Actions.Replace, w, r)
}

// WriteFile saves the spec as indented JSON.
func (s *Spec) WriteFile(path string) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// ReadSpec loads a plan spec, refusing another format or a version this
// package does not know.
func ReadSpec(path string) (*Spec, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read plan spec: %w", err)
	}
	var head struct {
		Format        string `json:"format"`
		FormatVersion int    `json:"format_version"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return nil, fmt.Errorf("plan spec %s is not JSON: %v", path, err)
	}
	if head.Format != SpecFormat {
		return nil, fmt.Errorf("%s is not a plan spec (format %q, want %q): make one with `kl plan`", path, head.Format, SpecFormat)
	}
	if head.FormatVersion != SpecVersion {
		return nil, fmt.Errorf("plan spec %s has format version %d; this kl reads version %d: plan again with this kl", path, head.FormatVersion, SpecVersion)
	}
	var s Spec
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("plan spec %s: %v", path, err)
	}
	return &s, nil
}

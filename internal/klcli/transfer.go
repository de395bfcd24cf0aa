package klcli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/history"
	"github.com/kilolock/kilolock/internal/progress"
)

// ExportCmd is kl export.
type ExportCmd struct {
	Name string `arg:"" help:"State name." predictor:"state"`
	Ref  string `arg:"" optional:"" help:"Version: ${version_ref}"`
	VersionFlag
}

// Run runs the command.
func (c *ExportCmd) Run(ctx context.Context, g *Globals) error {
	ref, err := versionRef(c.Ref, c.Version)
	if err != nil {
		return err
	}
	return g.with(ctx, false, func(cli *CLI) error { return cli.Export(ctx, c.Name, ref) })
}

// ImportCmd is kl import.
type ImportCmd struct {
	JSONFlag
	Name  string `arg:"" help:"State name (created when missing)." predictor:"state"`
	File  string `arg:"" help:"State file to import; - reads stdin." type:"path"`
	Force bool   `help:"Import a state of another lineage over a non-empty state (its history is kept)."`
}

// Run runs the command.
func (c *ImportCmd) Run(ctx context.Context, g *Globals) error {
	var (
		data []byte
		err  error
	)
	if c.File == "-" {
		data, err = io.ReadAll(os.Stdin)
	} else {
		data, err = readFile(c.File, g.progress(c.JSON))
	}
	if err != nil {
		return withHint(err, "name a state file, e.g. one written by `tofu state pull` or `kl export`")
	}
	return g.with(ctx, c.JSON, func(cli *CLI) error { return cli.Import(ctx, c.Name, c.File, data, c.Force) })
}

// Export writes version ref of a state to Documents as a state file that `tofu
// state push` accepts.
func (c *CLI) Export(ctx context.Context, name string, ref kilolock.VersionRef) error {
	data, err := readAll(c.api().Export(transfer(c.withProgress(ctx)), name, ref.String()))
	if err != nil {
		return err
	}
	_, err = c.documents().Write(data)
	return err
}

// Import writes data, a state file read from source, into a state as a new
// version (source import), under the lineage guard unless force.
func (c *CLI) Import(ctx context.Context, name, source string, data []byte, force bool) error {
	res, err := c.api().Import(transfer(c.withProgress(ctx)), name, data, force)
	if err != nil {
		return err
	}
	return c.show(res, func() error {
		if res.Unchanged {
			return c.printf("%s is identical to the current version %s of state %s: nothing was written\n", source, versionText(&res.Version), name)
		}
		_, err = fmt.Fprintf(c.Out, "Imported %s into state %s as version %s: %s; read %s, stored %s in %s\n", source, name, versionText(&res.Version),
			plural(res.Version.Instances, "instance", "instances"), exactBytes(len(data)), byteCount(res.Stats.Bytes), plural(res.Stats.Rows, "row", "rows"))
		return err
	})
}

// byteCount shows a size in bytes for people.
func byteCount(n int) string { return progress.Size(int64(n)) }

// exactBytes shows a size a user can check against ls -l: the bytes, and
// the rounded size past a KiB.
func exactBytes(n int) string {
	if n < 1024 {
		return plural(n, "byte", "bytes")
	}
	return fmt.Sprintf("%d bytes (%s)", n, byteCount(n))
}

// readFile reads a state file, showing its progress on rep.
func readFile(path string, rep progress.Reporter) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	step := rep.Start("read "+path, fi.Size(), progress.Bytes)
	defer step.Done()
	buf := bytes.NewBuffer(make([]byte, 0, fi.Size()+bytes.MinRead))
	_, err = buf.ReadFrom(step.Reader(f))
	return buf.Bytes(), err
}

// StatePullCmd is kl state pull.
type StatePullCmd struct {
	Name    string   `arg:"" help:"State name." predictor:"state"`
	Ref     string   `arg:"" optional:"" help:"Version: ${version_ref}"`
	Version string   `help:"The version, as REF takes it (--version 3 is @3)." placeholder:"REF"`
	Address []string `sep:"none" help:"Pull a slice: only this instance or resource (repeat the flag for more) and its cone, with every output, the same lineage and serial." placeholder:"ADDR"`
	Cone    string   `help:"What the slice adds to the addresses: dependencies (what they rest on, the default), dependents (what rests on them) or none." placeholder:"CONE"`
}

// run runs kl state pull.
func (c *StatePullCmd) run(ctx context.Context, g *Globals) error {
	ref, err := versionRef(c.Ref, c.Version)
	if err != nil {
		return err
	}
	if len(c.Address) == 0 {
		if c.Cone != "" {
			return &UsageError{Message: "--cone shapes a slice, and no --address was given", Hint: "use kl state pull NAME --address ADDR --cone " + c.Cone}
		}
		return g.with(ctx, false, func(cli *CLI) error { return cli.Pull(ctx, c.Name, ref) })
	}
	cone, err := history.ParseSliceCone(c.Cone)
	if err != nil {
		return err
	}
	return g.with(ctx, false, func(cli *CLI) error { return cli.PullSlice(ctx, c.Name, ref, c.Address, cone) })
}

// Pull writes one version of a state to Documents as the state document,
// exactly as served to terraform/tofu.
func (c *CLI) Pull(ctx context.Context, name string, ref kilolock.VersionRef) error {
	number, err := c.api().VersionNumber(ctx, name, ref)
	if err != nil {
		return err
	}
	doc, err := readAll(c.api().StateVersion(transfer(ctx), name, number))
	if err != nil {
		return err
	}
	_, err = c.documents().Write(doc)
	return err
}

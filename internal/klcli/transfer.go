package klcli

import (
	"context"
	"fmt"

	"github.com/kilolock/kilolock"
)

// Export writes version ref of a state to Out as a state file that `tofu
// state push` accepts.
func (c *CLI) Export(ctx context.Context, name string, ref kilolock.VersionRef) error {
	data, err := c.Backend.Export(ctx, name, ref)
	if err != nil {
		return err
	}
	_, err = c.Out.Write(data)
	return err
}

// Import writes data, a state file read from source, into a state as a new
// version (source import), under the lineage guard unless force.
func (c *CLI) Import(ctx context.Context, name, source string, data []byte, force bool) error {
	res, err := c.Backend.Import(ctx, name, data, force)
	if err != nil {
		return err
	}
	if c.JSON {
		return c.writeJSON(res)
	}
	if res.Unchanged {
		_, err = fmt.Fprintf(c.Out, "%s is identical to the current version %s of state %s: nothing was written\n", source, versionText(&res.Version), name)
		return err
	}
	_, err = fmt.Fprintf(c.Out, "Imported %s into state %s as version %s: %s, %s\n", source, name, versionText(&res.Version),
		plural(res.Version.Instances, "instance", "instances"), byteCount(res.Stats.Bytes))
	return err
}

// byteCount shows a size in bytes for people.
func byteCount(n int) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := int64(n) / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

package klcli

import (
	"context"
	"fmt"

	"github.com/kilolock/kilolock"
)

// Pull writes one version of a state to Documents as the state document,
// exactly as served to terraform/tofu.
func (c *CLI) Pull(ctx context.Context, name string, ref kilolock.VersionRef) error {
	var number int64
	switch ref.Kind {
	case kilolock.RefNumber:
		number = int64(ref.N)
	case kilolock.RefLatest:
		s, err := c.Backend.Status(ctx, name)
		if err != nil {
			return err
		}
		if number = statusVersion(s); number == 0 {
			return fmt.Errorf("state %q has no version yet: %w", name, kilolock.ErrNotFound)
		}
	default: // a tag, a serial, @-K: the server resolves it
		v, err := c.Backend.Show(ctx, name, ref)
		if err != nil {
			return err
		}
		number = v.Version.Number
	}
	doc, err := c.Backend.ReadVersion(ctx, name, number)
	if err != nil {
		return err
	}
	_, err = c.documents().Write(doc)
	return err
}

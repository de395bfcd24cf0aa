package klcli

import (
	"context"
	"fmt"

	"github.com/kilolock/kilolock"
)

// Pull writes one version of a state to Documents as the state document, exactly
// as served to terraform/tofu: the current version when number is 0.
func (c *CLI) Pull(ctx context.Context, name string, number int64) error {
	if number < 0 {
		return &UsageError{Message: "a version number is positive", Hint: "see the numbers with `kl history NAME`"}
	}
	if number == 0 {
		s, err := c.Backend.Status(ctx, name)
		if err != nil {
			return err
		}
		if number = statusVersion(s); number == 0 {
			return fmt.Errorf("state %q has no version yet: %w", name, kilolock.ErrNotFound)
		}
	}
	doc, err := c.Backend.ReadVersion(ctx, name, number)
	if err != nil {
		return err
	}
	_, err = c.documents().Write(doc)
	return err
}

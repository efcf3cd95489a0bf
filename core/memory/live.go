package memory

import (
	"context"
	"fmt"
)

// live returns ctx's error, wrapped with what, if ctx is done.
func live(ctx context.Context, what string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

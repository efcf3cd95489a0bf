package memory

import (
	"context"
	"fmt"
	"strings"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
)

// checkKey validates k as the adapters do: kind and name are required,
// the namespace may be empty (cluster-scoped kinds), and no part may
// contain '/' (a key's string form is "Kind/namespace/name").
func checkKey(field string, k api.Key) error {
	parts := []struct{ name, value string }{{"kind", k.Kind}, {"namespace", k.Namespace}, {"name", k.Name}}
	for _, p := range parts {
		if p.name != "namespace" && p.value == "" {
			return errs.Permanentf("%s.%s: must not be empty", field, p.name)
		}
		if strings.Contains(p.value, "/") {
			return errs.Permanentf("%s.%s: %q must not contain '/'", field, p.name, p.value)
		}
	}
	return nil
}

// live returns ctx's error, wrapped with what, if ctx is done.
func live(ctx context.Context, what string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

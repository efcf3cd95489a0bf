package policy

import (
	"context"
	"fmt"
)

// The evaluator of spec.plugins.

// evalPlugins runs the checks of the policy's plugins, in plugin name
// order; each violation a plugin returns becomes
// "spec.plugins.<name>: <violation>".
func (c *Compiled) evalPlugins(ctx context.Context, r *Request, m mode) errorList {
	var errs errorList
	for _, p := range c.plugins {
		for _, v := range p.check.Check(ctx, r) {
			if m == quick {
				return failedQuick
			}
			errs = append(errs, fmt.Sprintf("spec.plugins.%s: %s", p.name, v))
		}
	}
	return errs
}

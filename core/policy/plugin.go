package policy

import "context"

// Plugin is an evaluator compiled into certfn and named in a policy's
// spec.plugins (docs/design/approval-policy.md's plugins). Plugins are registered explicitly at
// start-up, by passing them to NewEvaluator (or Compile); nothing registers
// itself from init().
//
// A plugin is consulted only for policies that name it, after the policy
// applies to the request; a policy passes only when its own checks and every
// one of its plugins pass.
type Plugin interface {
	// Name is the key used under spec.plugins.
	Name() string
	// Compile checks the policy's values for the plugin once per policy
	// version and returns the check to run per request. An error makes the
	// policy not Ready; it should name the offending key.
	Compile(values map[string]string) (PluginCheck, error)
}

// PluginCheck judges one request for one policy. It must be pure and
// deterministic (no I/O: everything it needs comes from its values and the
// request) and safe for concurrent use. It returns the violations found,
// each a short sentence; none means the plugin allows the request. r is
// valid only during the call (the Evaluator reuses request views): a check
// must not keep it, or anything it points to, after returning.
type PluginCheck interface {
	Check(ctx context.Context, r *Request) []string
}

package policy

import "context"

// errorList is what an evaluator returns: one message per violation, each
// starting with the path of the policy field the request breaks
// ("spec.allowed.dnsNames: ..."), in the order found; nil when the request
// passes. A full review concatenates the lists of every evaluator.
type errorList []string

// mode says how much a review reports.
type mode bool

const (
	// quick stops at the first violation and describes none: approval only
	// needs to know whether a policy passes (a request that no policy
	// allows is reviewed again in full for its Denied message). A quick
	// evaluator returns failedQuick.
	quick mode = false
	// full reports every violation with its message.
	full mode = true
)

// failedQuick is what a quick evaluator returns at its first violation:
// non-nil, so the caller sees the failure, and shared, so failing
// allocates nothing. It is never shown and must not be modified.
var failedQuick = errorList{"policy violated (a quick review describes no violation)"}

// review runs the evaluators of c on r (approver-policy's per-field
// evaluators, one concern each) and concatenates their lists. The order
// fixes the order of the messages: request contents no field can allow,
// the allowed fields (presence and patterns), isCA, usages, the
// constraints (duration, private key), then CEL validations and plugins.
// The cheap ones come first, so that a quick review of a policy that fails
// on a name never runs its rules.
//
// In quick mode review returns the first non-empty list (failedQuick), nil
// when c allows r; in full mode every violation, nil when there is none.
//
// Each evaluator returns its violations, nil when there are none; in quick
// mode it returns failedQuick at its first violation and formats no
// message. Evaluators must not modify r (plugins see the same Request).
// They are called directly rather than from a table: approval runs them
// for every applicable policy, and direct calls let the small ones inline.
func (c *Compiled) review(ctx context.Context, r *Request, m mode) errorList {
	out, stop := collect(nil, evalUnsupported(r, m), m) // evaluate_allowed.go
	if stop {
		return out
	}
	if out, stop = collect(out, c.evalAllowedValues(r, m), m); stop {
		return out
	}
	if out, stop = collect(out, c.evalIsCA(r, m), m); stop {
		return out
	}
	if out, stop = collect(out, c.evalUsages(r, m), m); stop {
		return out
	}
	if out, stop = collect(out, c.evalDuration(r, m), m); stop { // evaluate_constraints.go
		return out
	}
	if out, stop = collect(out, c.evalPrivateKey(r, m), m); stop {
		return out
	}
	if out, stop = collect(out, c.evalValidations(r, m), m); stop { // evaluate_validations.go
		return out
	}
	out, _ = collect(out, c.evalPlugins(ctx, r, m), m) // evaluate_plugins.go
	return out
}

// collect adds one evaluator's list to out. stop reports a quick review
// that has failed: out is then that list, to return at once.
func collect(out, errs errorList, m mode) (_ errorList, stop bool) {
	if len(errs) == 0 {
		return out, false
	}
	if m == quick {
		return errs, true
	}
	return out.join(errs), false
}

// join returns l followed by more. When l is empty it returns more itself
// rather than a copy: a full-mode list belongs to its caller, so the
// Denied path copies each message once.
func (l errorList) join(more errorList) errorList {
	if len(l) == 0 {
		return more
	}
	return append(l, more...)
}

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
// evaluators, one concern each) and concatenates their lists.
//
// In quick mode review returns the first non-empty list (failedQuick), nil
// when c allows r. The cheap evaluators come first, so that a quick review
// of a policy that fails on a name never runs its rules: request contents
// no policy can allow, the allowed fields (presence and patterns), isCA,
// usages, otherNames and otherAttributes, the constraints (duration,
// private key), then CEL validations and plugins.
//
// In full mode it returns every violation, nil when there is none, in the
// order approver-policy's evaluators report them: commonName, dnsNames,
// ipAddresses, uris, emailAddresses (each field's patterns, then its
// rules), isCA, usages, otherNames (after the subjectAltName entries no
// policy allows), the subject fields, serialNumber, otherAttributes (after
// subject values that are not strings); then maxDuration, minDuration,
// the private key; then plugins.
//
// Each evaluator returns its violations, nil when there are none; in quick
// mode it returns failedQuick at its first violation and formats no
// message. Evaluators must not modify r (plugins see the same Request).
// They are called directly rather than from a table: approval runs them
// for every applicable policy, and direct calls let the small ones inline.
func (c *Compiled) review(ctx context.Context, r *Request, m mode) errorList {
	if m == full {
		return c.reviewFull(ctx, r)
	}
	if errs := evalRejected(r); errs != nil { // evaluate_allowed.go
		return errs
	}
	if errs := c.evalAllowedValues(r); errs != nil {
		return errs
	}
	if errs := c.evalIsCA(r, quick); errs != nil {
		return errs
	}
	if errs := c.evalUsages(r, quick); errs != nil {
		return errs
	}
	if len(r.otherNames)+len(r.otherAttrs) > 0 || c.otherRequired {
		if errs := c.evalOtherNames(r, quick); errs != nil {
			return errs
		}
		if errs := c.evalOtherAttributes(r, quick); errs != nil {
			return errs
		}
	}
	if errs := c.evalDuration(r, quick); errs != nil { // evaluate_constraints.go
		return errs
	}
	if errs := c.evalPrivateKey(r, quick); errs != nil {
		return errs
	}
	if errs := c.evalValidations(r); errs != nil { // evaluate_validations.go
		return errs
	}
	return c.evalPlugins(ctx, r, quick) // evaluate_plugins.go
}

// reviewFull is review in full mode.
func (c *Compiled) reviewFull(ctx context.Context, r *Request) errorList {
	var out errorList
	// fields: commonName, dnsNames, ipAddresses, uris, emailAddresses,
	// the subject fields (organizations ... postalCodes), serialNumber.
	const firstSubjectField = 5
	for _, f := range c.fields[:firstSubjectField] {
		out = out.join(f.evalFieldFull(r))
	}
	out = out.join(c.evalIsCA(r, full))
	out = out.join(c.evalUsages(r, full))
	out = out.join(c.evalOtherNames(r, full))
	for _, f := range c.fields[firstSubjectField:] {
		out = out.join(f.evalFieldFull(r))
	}
	out = out.join(c.evalOtherAttributes(r, full))
	out = out.join(c.evalDuration(r, full))
	out = out.join(c.evalPrivateKey(r, full))
	return out.join(c.evalPlugins(ctx, r, full))
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

package policy

import (
	"fmt"
	"slices"
)

// The evaluators of spec.allowed: the request's contents that no field can
// allow, the string fields (commonName, dnsNames, ipAddresses, uris,
// emailAddresses and the subject fields, one compiled stringField each),
// isCA and usages.

// evalUnsupported fails every policy for request contents no allowed field
// can allow (unknown subject attributes, non-string values, otherName and
// other unsupported subjectAltNames); the messages were built with the
// Request.
func evalUnsupported(r *Request, m mode) errorList {
	if len(r.unsupported) == 0 {
		return nil
	}
	if m == quick {
		return failedQuick
	}
	return slices.Clone(errorList(r.unsupported))
}

// evalAllowedValues checks the allowed string fields. In full mode every
// field, in spec order (evalValues). In quick mode the presence rules are
// decided by bit masks (an attribute the policy does not allow, a required
// one missing); what remains of evalValues for the attributes the request
// carries is that each value matches a pattern of its field, if the field
// sets values.
func (c *Compiled) evalAllowedValues(r *Request, m mode) errorList {
	if m == full {
		var out errorList
		for _, f := range c.fields {
			out = out.join(f.evalValues(r, full))
		}
		return out
	}
	if r.present&^c.allowedMask != 0 || c.requiredMask&^r.present != 0 {
		return failedQuick
	}
	for _, f := range c.valueFields {
		// f.match, unrolled: the plain case stays inlined.
		have := r.classes[f.attr]
		plain := f.need&^have == 0
		for _, v := range r.attrs[f.attr] {
			var ok bool
			if plain {
				ok = f.values.matchAny(v)
			} else {
				ok = f.values.matchValue(v, have)
			}
			if !ok {
				return failedQuick
			}
		}
	}
	return nil
}

// match reports whether v, a value of the field's attribute whose values
// all belong to have, matches one of the field's patterns. When have
// covers what every pattern needs (valid names: the usual case), it is
// plain wildcard matching.
func (f *stringField) match(v string, have charClass) bool {
	if f.need&^have == 0 {
		return f.values.matchAny(v)
	}
	return f.values.matchValue(v, have)
}

// evalValues applies one allowed field's presence and patterns (seed
// 001): an absent attribute passes unless required; a present one needs
// the field to allow values (by values or validations); each value must
// match a pattern, if values are set. Validations are evalRules' job.
// Messages are built by the describe helpers, outside the loop that
// approval runs.
func (f *stringField) evalValues(r *Request, m mode) errorList {
	vals := r.attrs[f.attr]
	if len(vals) == 0 {
		if !f.required {
			return nil
		}
		if m == quick {
			return failedQuick
		}
		return f.describeMissing()
	}
	if !f.set || (f.values == nil && len(f.rules) == 0) {
		if m == quick {
			return failedQuick
		}
		return f.describeNotAllowed(vals)
	}
	if f.values == nil {
		return nil
	}
	for i, v := range vals {
		if !f.match(v, r.classes[f.attr]) {
			if m == quick {
				return failedQuick
			}
			return f.describeUnmatched(vals[i:], r.classes[f.attr])
		}
	}
	return nil
}

// describeMissing is the violation of a required attribute the request
// does not carry.
func (f *stringField) describeMissing() errorList {
	return errorList{fmt.Sprintf("%s.required: the request must carry %s %s", f.path, article(f.what), f.what)}
}

// describeNotAllowed is the violation of values for a field that allows
// none.
func (f *stringField) describeNotAllowed(vals []string) errorList {
	return errorList{fmt.Sprintf("%s: %s not allowed: the policy allows no %s", f.path, quoteList(vals), plural(f.what))}
}

// describeUnmatched lists each of vals (values of a request attribute
// whose values all have class have) that matches no pattern of the field,
// in order.
func (f *stringField) describeUnmatched(vals []string, have charClass) errorList {
	var errs errorList
	for _, v := range vals {
		if f.match(v, have) {
			continue
		}
		if len(*f.values) == 0 {
			errs = append(errs, fmt.Sprintf("%s: %q is not allowed: the policy allows no %s", f.path, v, plural(f.what)))
		} else {
			errs = append(errs, fmt.Sprintf("%s: %q is not allowed (allowed: %s)", f.path, v, f.values))
		}
	}
	return errs
}

// evalIsCA fails a request for a CA certificate unless allowed.isCA is
// true.
func (c *Compiled) evalIsCA(r *Request, m mode) errorList {
	if !r.CR.Spec.IsCA || c.isCA {
		return nil
	}
	if m == quick {
		return failedQuick
	}
	return errorList{"spec.allowed.isCA: the request asks for a CA certificate, which the policy does not allow"}
}

// evalUsages checks each requested usage against allowed.usages; a policy
// without the field allows none.
func (c *Compiled) evalUsages(r *Request, m mode) errorList {
	if len(r.usages) == 0 {
		return nil
	}
	if c.usages == nil {
		if m == quick {
			return failedQuick
		}
		return errorList{fmt.Sprintf("spec.allowed.usages: %s not allowed: the policy allows no key usages", quoteList(r.usages))}
	}
	for i, u := range r.usages {
		if !c.usages.matchAny(u) {
			if m == quick {
				return failedQuick
			}
			return describeUsages(c.usages, r.usages[i:])
		}
	}
	return nil
}

// describeUsages lists each of usages that allowed matches no pattern of,
// in order.
func describeUsages(allowed *patterns, usages []string) errorList {
	var errs errorList
	for _, u := range usages {
		if !allowed.matchAny(u) {
			errs = append(errs, fmt.Sprintf("spec.allowed.usages: %q is not allowed (allowed: %s)", u, allowed))
		}
	}
	return errs
}

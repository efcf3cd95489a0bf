package policy

import (
	"fmt"
	"slices"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
)

// The evaluators of spec.allowed: the request's contents that no policy
// can allow, the string fields (commonName, dnsNames, ipAddresses, uris,
// emailAddresses and the subject fields, one compiled stringField each),
// isCA, usages, otherNames and subject.otherAttributes. Violations are
// reported under approver-policy's field paths: spec.allowed.<field> when
// the field allows nothing, .value / .values for a value no pattern
// matches, .required for a missing attribute, .validations[i] for a rule,
// [i] after commonName or serialNumber when the subject repeats it, and
// [<oid>] for otherNames and otherAttributes entries.

// evalRejected fails every policy for request contents no policy can
// allow (subjectAltName kinds other than DNS, IP, URI, e-mail and
// otherName; a subjectAltName extension that does not decode or is
// repeated; subject values that are not strings). Only quick mode uses
// it: a full review reports each where approver-policy does.
func evalRejected(r *Request) errorList {
	if !r.rejected() {
		return nil
	}
	return failedQuick
}

// evalAllowedValues checks the allowed string fields in quick mode: the
// presence rules are decided by bit masks (an attribute the policy does
// not allow, a required one missing); what remains for the attributes the
// request carries is that each value matches a pattern of its field, if
// the field sets values. (A full review runs evalFieldFull per field.)
func (c *Compiled) evalAllowedValues(r *Request) errorList {
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

// evalFieldFull reports every violation of one named field, as
// approver-policy's evaluator does: what replaces its evaluation (a
// commonName or serialNumber that is not a string), else its presence
// and patterns, then its rules; a commonName or serialNumber repeated in
// the subject is judged value by value (path[i]).
func (f *stringField) evalFieldFull(r *Request) errorList {
	if msg := r.replaced(f.attr); msg != "" {
		return errorList{msg}
	}
	vals := r.attrs[f.attr]
	if f.single && len(vals) > 1 {
		var out errorList
		celVals := r.celValues(f.attr)
		for i, v := range vals {
			p := fmt.Sprintf("%s[%d]", f.path, i)
			out = out.join(f.evalFull(r, p, vals[i:i+1], celVals[i:i+1], classOf(v)))
		}
		return out
	}
	return f.evalFull(r, f.path, vals, nil, r.classes[f.attr])
}

// evalFull reports every violation of the field for vals (values of its
// attribute, all in class have; celVals their CEL values, nil to convert
// them), reporting under path: presence and patterns, then, when the
// field allows the values, its rules.
func (f *stringField) evalFull(r *Request, path string, vals []string, celVals []ref.Val, have charClass) errorList {
	errs := f.evalValues(path, vals, have, full)
	if len(vals) == 0 || !f.allows() || len(f.rules) == 0 {
		return errs
	}
	if celVals == nil {
		if f.attr < numAttrs {
			celVals = r.celValues(f.attr)
		} else {
			celVals = stringVals(vals)
		}
	}
	return errs.join(f.evalRules(r, path, vals, celVals, full))
}

// stringVals converts vals to CEL strings.
func stringVals(vals []string) []ref.Val {
	out := make([]ref.Val, len(vals))
	for i, v := range vals {
		out[i] = types.String(v)
	}
	return out
}

// evalValues applies one allowed field's presence and patterns to vals
// (docs/design/approval-policy.md): absent values pass unless required; present ones need the
// field to allow values (by values or validations); each value must match
// a pattern, if values are set. Validations are evalRules' job. Messages
// are built by the describe helpers, outside the loop that approval runs.
func (f *stringField) evalValues(path string, vals []string, have charClass, m mode) errorList {
	if len(vals) == 0 {
		if !f.required {
			return nil
		}
		if m == quick {
			return failedQuick
		}
		return f.describeMissing(path)
	}
	if !f.allows() {
		if m == quick {
			return failedQuick
		}
		return f.describeNotAllowed(path, vals)
	}
	if f.values == nil {
		return nil
	}
	for i, v := range vals {
		if !f.match(v, have) {
			if m == quick {
				return failedQuick
			}
			return f.describeUnmatched(path, vals[i:], have)
		}
	}
	return nil
}

// describeMissing is the violation of a required attribute the request
// does not carry.
func (f *stringField) describeMissing(path string) errorList {
	return errorList{fmt.Sprintf("%s.required: the request must carry %s %s", path, article(f.what), f.what)}
}

// describeNotAllowed is the violation of values for a field that allows
// none.
func (f *stringField) describeNotAllowed(path string, vals []string) errorList {
	if f.oid != "" && !f.set {
		return errorList{fmt.Sprintf("%s: %s not allowed: the policy allows no %s with OID %s", path, quoteList(vals), plural(f.what), f.oid)}
	}
	return errorList{fmt.Sprintf("%s: %s not allowed: the policy allows no %s", path, quoteList(vals), plural(f.what))}
}

// describeUnmatched lists each of vals (values of a request attribute
// whose values all have class have) that matches no pattern of the field,
// in order, under path.value(s).
func (f *stringField) describeUnmatched(path string, vals []string, have charClass) errorList {
	valuesPath := f.valuesPath
	if path != f.path || valuesPath == "" {
		valuesPath = path + valuesSuffix(f.single)
	}
	var errs errorList
	for _, v := range vals {
		if f.match(v, have) {
			continue
		}
		if len(*f.values) == 0 {
			errs = append(errs, fmt.Sprintf("%s: %q is not allowed: the policy allows no %s", valuesPath, v, plural(f.what)))
		} else {
			errs = append(errs, fmt.Sprintf("%s: %q is not allowed (allowed: %s)", valuesPath, v, f.values))
		}
	}
	return errs
}

// valuesSuffix is the field holding a field's patterns: value or values.
func valuesSuffix(single bool) string {
	if single {
		return ".value"
	}
	return ".values"
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

// evalOtherNames checks the request's otherName SANs against
// allowed.otherNames; in full mode the subjectAltName entries no policy
// allows come first, at spec.allowed.subjectAltName.
func (c *Compiled) evalOtherNames(r *Request, m mode) errorList {
	var out errorList
	if m == full {
		out = slices.Clone(errorList(r.sanRejects))
	}
	return out.join(evalOIDFields(r, c.otherNames, r.otherNames, "spec.allowed.otherNames", "otherName", m))
}

// evalOtherAttributes checks the request's subject attributes without a
// named field against allowed.subject.otherAttributes; in full mode the
// subject values that are not strings come first.
func (c *Compiled) evalOtherAttributes(r *Request, m mode) errorList {
	var out errorList
	if m == full {
		out = slices.Clone(errorList(r.subjectRejects))
	}
	return out.join(evalOIDFields(r, c.otherAttrs, r.otherAttrs, "spec.allowed.subject.otherAttributes", "subject attribute", m))
}

// evalOIDFields checks the values the request carries for each OID (got,
// in first-seen order) against the entry of fields with that OID, as the
// list fields are checked; an OID no entry lists allows nothing. Then
// every required entry must have been seen.
func evalOIDFields(r *Request, fields []*stringField, got []oidValues, list, what string, m mode) errorList {
	if len(got) == 0 && len(fields) == 0 {
		return nil
	}
	var out errorList
	for i := range got {
		g := &got[i]
		if len(g.vals) == 0 {
			continue // only values that are not strings (rejected elsewhere)
		}
		f := findOID(fields, g.oid)
		if f == nil {
			f = &stringField{path: list + "[" + g.oid + "]", what: what, oid: g.oid}
		}
		var errs errorList
		if m == quick {
			if errs = f.evalValues(f.path, g.vals, 0, quick); errs == nil && len(f.rules) > 0 {
				errs = f.evalRules(r, f.path, g.vals, stringVals(g.vals), quick)
			}
		} else {
			errs = f.evalFull(r, f.path, g.vals, nil, 0)
		}
		var stop bool
		if out, stop = collect(out, errs, m); stop {
			return out
		}
	}
	for _, f := range fields {
		if !f.required || slices.ContainsFunc(got, func(g oidValues) bool { return g.oid == f.oid }) {
			continue
		}
		if m == quick {
			return failedQuick
		}
		out = out.join(f.describeMissing(f.path))
	}
	return out
}

// findOID returns the field of fields with oid, or nil.
func findOID(fields []*stringField, oid string) *stringField {
	for _, f := range fields {
		if f.oid == oid {
			return f
		}
	}
	return nil
}

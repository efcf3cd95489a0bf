package policy

import "fmt"

// The evaluator of the allowed fields' CEL validations.

// evalValidations runs the CEL rules of every allowed field that has some,
// in spec order.
func (c *Compiled) evalValidations(r *Request, m mode) errorList {
	var out errorList
	for _, f := range c.ruleFields {
		var stop bool
		if out, stop = collect(out, f.evalRules(r, m), m); stop {
			return out
		}
	}
	return out
}

// evalRules runs the field's CEL rules once per value of its attribute,
// rule by rule. A rule that errors fails (closed), with the error in the
// message.
func (f *stringField) evalRules(r *Request, m mode) errorList {
	vals := r.attrs[f.attr]
	if len(vals) == 0 || len(f.rules) == 0 {
		return nil
	}
	act, err := r.celActivation()
	if err != nil {
		if m == quick {
			return failedQuick
		}
		return errorList{fmt.Sprintf("%s.validations: %v", f.path, err)}
	}
	celVals := r.celValues(f.attr)
	var errs errorList
	for i := range f.rules {
		rule := &f.rules[i]
		for j, v := range vals {
			ok, err := rule.eval(act, celVals[j])
			if ok {
				continue
			}
			if m == quick {
				return failedQuick
			}
			if err != nil {
				errs = append(errs, fmt.Sprintf("%s.validations[%d]: %q: %s (rule error: %s)", f.path, i, v, rule.message, oneLine(err.Error())))
			} else {
				errs = append(errs, fmt.Sprintf("%s.validations[%d]: %q: %s", f.path, i, v, rule.message))
			}
		}
	}
	return errs
}

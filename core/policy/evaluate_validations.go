package policy

import (
	"fmt"

	"github.com/google/cel-go/common/types/ref"
)

// The evaluator of the allowed fields' CEL validations.

// evalValidations runs, in quick mode, the CEL rules of every named
// allowed field that has some, in spec order. (A full review runs each
// field's rules after its patterns, evalFull; otherNames and
// otherAttributes entries run theirs in evalOIDFields.)
func (c *Compiled) evalValidations(r *Request) errorList {
	for _, f := range c.ruleFields {
		vals := r.attrs[f.attr]
		if len(vals) == 0 {
			continue
		}
		if errs := f.evalRules(r, f.path, vals, r.celValues(f.attr), quick); errs != nil {
			return errs
		}
	}
	return nil
}

// evalRules runs the field's CEL rules once per value of vals (celVals
// holds them as CEL strings), value by value, reporting under
// path.validations[i]. A rule that errors (including one stopped by the
// cost limit) fails, closed, with the error in the message.
func (f *stringField) evalRules(r *Request, path string, vals []string, celVals []ref.Val, m mode) errorList {
	if len(vals) == 0 || len(f.rules) == 0 {
		return nil
	}
	act, err := r.celActivation()
	if err != nil {
		if m == quick {
			return failedQuick
		}
		return errorList{fmt.Sprintf("%s.validations: %v", path, err)}
	}
	var errs errorList
	for j, v := range vals { // value by value, as approver-policy reports them
		for i := range f.rules {
			rule := &f.rules[i]
			ok, err := rule.eval(act, celVals[j])
			if ok {
				continue
			}
			if m == quick {
				return failedQuick
			}
			if err != nil {
				errs = append(errs, fmt.Sprintf("%s.validations[%d]: %q: %s (rule error: %s)", path, i, v, rule.message, oneLine(err.Error())))
			} else {
				errs = append(errs, fmt.Sprintf("%s.validations[%d]: %q: %s", path, i, v, rule.message))
			}
		}
	}
	return errs
}

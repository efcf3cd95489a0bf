package terraform_test

// A small evaluator of IAM identity policies: enough of AWS's policy
// evaluation logic to decide whether a role's inline policies allow one
// request (action, resource ARN, request context). It implements explicit
// deny over allow, Action/NotAction and Resource/NotResource with * and ?
// wildcards, and the condition operators the module uses (String*, Arn*,
// Bool, Null, with IfExists and the ForAllValues/ForAnyValue set
// qualifiers). An operator it does not know makes the evaluation fail
// loudly, so an unsupported policy can never pass a check by accident.

import (
	"encoding/json"
	"fmt"
	"strings"
)

// iamPolicy is a parsed policy document.
type iamPolicy struct {
	Version   string         `json:"Version"`
	Statement []iamStatement `json:"Statement"`
}

// iamStatement is one statement. Principal is ignored: these are identity
// policies.
type iamStatement struct {
	Sid         string                        `json:"Sid"`
	Effect      string                        `json:"Effect"`
	Action      strList                       `json:"Action"`
	NotAction   strList                       `json:"NotAction"`
	Resource    strList                       `json:"Resource"`
	NotResource strList                       `json:"NotResource"`
	Condition   map[string]map[string]strList `json:"Condition"`
}

// strList is a JSON string or list of strings.
type strList []string

func (s *strList) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*s = strList{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return fmt.Errorf("want a string or a list of strings, got %s", b)
	}
	*s = many
	return nil
}

// parsePolicy parses a policy document; a statement may be a single object.
func parsePolicy(doc string) (iamPolicy, error) {
	var p iamPolicy
	if err := json.Unmarshal([]byte(doc), &p); err == nil {
		return p, nil
	}
	var single struct {
		Version   string       `json:"Version"`
		Statement iamStatement `json:"Statement"`
	}
	if err := json.Unmarshal([]byte(doc), &single); err != nil {
		return iamPolicy{}, fmt.Errorf("parse policy: %w", err)
	}
	return iamPolicy{Version: single.Version, Statement: []iamStatement{single.Statement}}, nil
}

// iamRequest is one request to decide. Context maps condition keys (any
// case) to their values; a key that is absent is absent from the request.
type iamRequest struct {
	Action   string
	Resource string
	Context  map[string][]string
}

// decision is the outcome of evaluating policies against a request.
type decision int

const (
	implicitDeny decision = iota // no statement allows it
	allowed
	explicitDeny
)

func (d decision) String() string {
	return [...]string{"implicit deny", "allow", "explicit deny"}[d]
}

// evaluate decides req against every statement of policies: an explicit
// deny wins, then any allow, else implicit deny. It also returns the Sids of
// the statements that decided (for messages).
func evaluate(policies []iamPolicy, req iamRequest) (decision, []string, error) {
	ctx := map[string][]string{}
	for k, v := range req.Context {
		ctx[strings.ToLower(k)] = v
	}
	var allows, denies []string
	for _, p := range policies {
		for i, st := range p.Statement {
			ok, err := st.matches(req.Action, req.Resource, ctx)
			if err != nil {
				return implicitDeny, nil, fmt.Errorf("statement %d (%s): %w", i, st.Sid, err)
			}
			if !ok {
				continue
			}
			name := st.Sid
			if name == "" {
				name = fmt.Sprintf("#%d", i)
			}
			switch st.Effect {
			case "Deny":
				denies = append(denies, name)
			case "Allow":
				allows = append(allows, name)
			default:
				return implicitDeny, nil, fmt.Errorf("statement %d (%s): Effect %q is neither Allow nor Deny", i, st.Sid, st.Effect)
			}
		}
	}
	switch {
	case len(denies) > 0:
		return explicitDeny, denies, nil
	case len(allows) > 0:
		return allowed, allows, nil
	}
	return implicitDeny, nil, nil
}

// matches reports whether st applies to (action, resource, ctx).
func (st iamStatement) matches(action, resource string, ctx map[string][]string) (bool, error) {
	switch {
	case len(st.Action) > 0 && len(st.NotAction) > 0:
		return false, fmt.Errorf("both Action and NotAction")
	case len(st.Action) > 0:
		if !anyGlob(st.Action, action, true) {
			return false, nil
		}
	case len(st.NotAction) > 0:
		if anyGlob(st.NotAction, action, true) {
			return false, nil
		}
	default:
		return false, fmt.Errorf("no Action or NotAction")
	}
	switch {
	case len(st.Resource) > 0 && len(st.NotResource) > 0:
		return false, fmt.Errorf("both Resource and NotResource")
	case len(st.Resource) > 0:
		if !anyGlob(st.Resource, resource, false) {
			return false, nil
		}
	case len(st.NotResource) > 0:
		if anyGlob(st.NotResource, resource, false) {
			return false, nil
		}
	default:
		return false, fmt.Errorf("no Resource or NotResource")
	}
	for op, kv := range st.Condition {
		for key, want := range kv {
			ok, err := condition(op, want, ctx[strings.ToLower(key)], hasKey(ctx, key))
			if err != nil {
				return false, fmt.Errorf("condition %s %s: %w", op, key, err)
			}
			if !ok {
				return false, nil
			}
		}
	}
	return true, nil
}

func hasKey(ctx map[string][]string, key string) bool {
	_, ok := ctx[strings.ToLower(key)]
	return ok
}

// anyGlob reports whether s matches one of the IAM patterns (* and ?);
// actions compare case-insensitively, resources case-sensitively.
func anyGlob(patterns []string, s string, fold bool) bool {
	for _, p := range patterns {
		if globMatch(p, s, fold) {
			return true
		}
	}
	return false
}

// globMatch matches IAM wildcards: * any run of characters (including '/'
// and ':'), ? one character; everything else literally.
func globMatch(pattern, s string, fold bool) bool {
	if fold {
		pattern, s = strings.ToLower(pattern), strings.ToLower(s)
	}
	// (path.Match does not fit: its '*' stops at '/' and it knows [...]
	// classes.) Split on '*': the first part is a prefix, the last a suffix,
	// the middle ones must appear in order.
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return qmatch(pattern, s)
	}
	if len(s) < len(parts[0]) || !qmatch(parts[0], s[:len(parts[0])]) {
		return false
	}
	s = s[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, mid := range parts[1 : len(parts)-1] {
		idx := qindex(s, mid)
		if idx < 0 {
			return false
		}
		s = s[idx+len(mid):]
	}
	return len(s) >= len(last) && qmatch(last, s[len(s)-len(last):])
}

// qmatch matches p (which may hold '?') against s of the same length.
func qmatch(p, s string) bool {
	if len(p) != len(s) {
		return false
	}
	for i := 0; i < len(p); i++ {
		if p[i] != '?' && p[i] != s[i] {
			return false
		}
	}
	return true
}

// qindex is strings.Index where '?' in sub matches any byte.
func qindex(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if qmatch(sub, s[i:i+len(sub)]) {
			return i
		}
	}
	return -1
}

// condition evaluates one condition operator for one key. got are the
// request's values for the key and present whether the key is in the
// request at all.
func condition(op string, want []string, got []string, present bool) (bool, error) {
	set := ""
	if i := strings.Index(op, ":"); i >= 0 {
		set, op = op[:i], op[i+1:]
		if set != "ForAllValues" && set != "ForAnyValue" {
			return false, fmt.Errorf("unsupported set operator %q", set)
		}
	}
	ifExists := strings.HasSuffix(op, "IfExists")
	op = strings.TrimSuffix(op, "IfExists")

	if op == "Null" {
		if set != "" || ifExists || len(want) != 1 {
			return false, fmt.Errorf("malformed Null condition")
		}
		switch want[0] {
		case "true":
			return !present, nil
		case "false":
			return present, nil
		}
		return false, fmt.Errorf("Null wants \"true\" or \"false\", got %q", want[0])
	}

	match, negated, err := matcher(op)
	if err != nil {
		return false, err
	}
	// one value against the condition's values
	one := func(v string) bool {
		for _, w := range want {
			if match(w, v) {
				return true
			}
		}
		return false
	}
	switch set {
	case "ForAllValues":
		// Vacuously true for an absent or empty key (AWS semantics).
		for _, v := range got {
			if one(v) == negated {
				return false, nil
			}
		}
		return true, nil
	case "ForAnyValue":
		for _, v := range got {
			if one(v) != negated {
				return true, nil
			}
		}
		return false, nil
	}
	if !present {
		// Negated operators match an absent key; IfExists matches it.
		return negated || ifExists, nil
	}
	anyMatch := false
	for _, v := range got {
		if one(v) {
			anyMatch = true
		}
	}
	if negated {
		return !anyMatch, nil
	}
	return anyMatch, nil
}

// matcher returns the comparison of a base operator and whether the
// operator is a negated one (StringNotEquals, ...).
func matcher(op string) (func(want, got string) bool, bool, error) {
	eq := func(w, g string) bool { return w == g }
	eqFold := func(w, g string) bool { return strings.EqualFold(w, g) }
	like := func(w, g string) bool { return globMatch(w, g, false) }
	switch op {
	case "StringEquals", "ArnEquals":
		return eq, false, nil
	case "StringNotEquals", "ArnNotEquals":
		return eq, true, nil
	case "StringEqualsIgnoreCase":
		return eqFold, false, nil
	case "StringNotEqualsIgnoreCase":
		return eqFold, true, nil
	case "StringLike", "ArnLike":
		return like, false, nil
	case "StringNotLike", "ArnNotLike":
		return like, true, nil
	case "Bool":
		return eqFold, false, nil
	}
	return nil, false, fmt.Errorf("unsupported condition operator %q", op)
}

// allowStatementsFor returns the Sids of Allow statements whose Action (or
// NotAction) covers action, whatever their Resource and Condition: a
// structural check ("no statement even mentions it").
func allowStatementsFor(policies []iamPolicy, action string) []string {
	var out []string
	for _, p := range policies {
		for i, st := range p.Statement {
			if st.Effect != "Allow" {
				continue
			}
			hit := (len(st.Action) > 0 && anyGlob(st.Action, action, true)) ||
				(len(st.NotAction) > 0 && !anyGlob(st.NotAction, action, true))
			if hit {
				name := st.Sid
				if name == "" {
					name = fmt.Sprintf("#%d", i)
				}
				out = append(out, name)
			}
		}
	}
	return out
}

// wildcardAllows returns a description of every Allow statement that is too
// broad to be least privilege: a NotAction or NotResource allow, an action
// that is "*" or "<service>:*" (or has any wildcard), or Resource "*" with an
// action outside listOnly (list calls that AWS does not scope to resources).
func wildcardAllows(policies []iamPolicy, listOnly map[string]bool) []string {
	var out []string
	for _, p := range policies {
		for i, st := range p.Statement {
			if st.Effect != "Allow" {
				continue
			}
			name := st.Sid
			if name == "" {
				name = fmt.Sprintf("#%d", i)
			}
			if len(st.NotAction) > 0 || len(st.NotResource) > 0 {
				out = append(out, fmt.Sprintf("%s: NotAction/NotResource in an Allow", name))
			}
			for _, a := range st.Action {
				if strings.ContainsAny(a, "*?") {
					out = append(out, fmt.Sprintf("%s: wildcard action %q", name, a))
				}
			}
			star := false
			for _, r := range st.Resource {
				if r == "*" {
					star = true
				}
			}
			if star {
				for _, a := range st.Action {
					if !listOnly[strings.ToLower(a)] {
						out = append(out, fmt.Sprintf("%s: action %q on Resource \"*\"", name, a))
					}
				}
			}
		}
	}
	return out
}

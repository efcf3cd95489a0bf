package main

import (
	"fmt"
	"slices"
	"strings"
)

// selector is a parsed label selector (kubectl's -l): requirements that
// all must hold. The forms are Kubernetes': key=value, key==value,
// key!=value, key, !key, key in (a,b), key notin (a,b).
type selector []requirement

type requirement struct {
	key    string
	op     string // "=", "!=", "exists", "!exists", "in", "notin"
	values []string
}

// parseSelector parses s; an empty s selects everything. Errors name the
// requirement and the rule.
func parseSelector(s string) (selector, error) {
	var out selector
	for _, part := range splitSelector(s) {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		r, err := parseRequirement(part)
		if err != nil {
			return nil, fmt.Errorf("-l %q: %q: %w", s, part, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// splitSelector splits at commas outside parentheses.
func splitSelector(s string) []string {
	var parts []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, s[start:])
}

func parseRequirement(p string) (requirement, error) {
	if k, ok := strings.CutPrefix(p, "!"); ok {
		k = strings.TrimSpace(k)
		return requirement{key: k, op: "!exists"}, checkLabelKey(k)
	}
	for _, op := range []string{" notin ", " in "} {
		if k, rest, ok := strings.Cut(p, op); ok {
			rest = strings.TrimSpace(rest)
			if !strings.HasPrefix(rest, "(") || !strings.HasSuffix(rest, ")") {
				return requirement{}, fmt.Errorf("want %s(value, ...)", op)
			}
			var vals []string
			for _, v := range strings.Split(rest[1:len(rest)-1], ",") {
				if v = strings.TrimSpace(v); v != "" {
					vals = append(vals, v)
				}
			}
			if len(vals) == 0 {
				return requirement{}, fmt.Errorf("%s needs at least one value", strings.TrimSpace(op))
			}
			k = strings.TrimSpace(k)
			return requirement{key: k, op: strings.TrimSpace(op), values: vals}, checkLabelKey(k)
		}
	}
	for _, op := range []string{"!=", "==", "="} {
		if k, v, ok := strings.Cut(p, op); ok {
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			if strings.ContainsAny(v, "=!() ") {
				return requirement{}, fmt.Errorf("invalid value %q", v)
			}
			if op == "==" {
				op = "="
			}
			return requirement{key: k, op: op, values: []string{v}}, checkLabelKey(k)
		}
	}
	return requirement{key: p, op: "exists"}, checkLabelKey(p)
}

func checkLabelKey(k string) error {
	if k == "" || strings.ContainsAny(k, " =!(),") {
		return fmt.Errorf("invalid label key %q", k)
	}
	return nil
}

// matches reports whether labels satisfy every requirement.
func (s selector) matches(labels map[string]string) bool {
	for _, r := range s {
		v, has := labels[r.key]
		switch r.op {
		case "=":
			if !has || v != r.values[0] {
				return false
			}
		case "!=":
			if has && v == r.values[0] {
				return false
			}
		case "exists":
			if !has {
				return false
			}
		case "!exists":
			if has {
				return false
			}
		case "in":
			if !has || !slices.Contains(r.values, v) {
				return false
			}
		case "notin":
			if has && slices.Contains(r.values, v) {
				return false
			}
		}
	}
	return true
}

// Package envconf holds the parsers every deployment's CERTFN_*
// configuration uses (internal/awsmode, internal/gcpmode): each reads one
// variable's value and reports a bad one through bad(name, format, ...),
// so a deployment lists every problem of its environment at once, each
// naming its variable and the rule.
package envconf

import (
	"strconv"
	"strings"
)

// Bad records a problem with the variable name.
type Bad func(name, format string, a ...any)

// SplitList splits a comma-separated list, dropping empty items.
func SplitList(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// IntVar parses v as an integer from lo to hi (def when v is empty).
func IntVar(v string, def, lo, hi int, name string, bad Bad) int {
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		bad(name, "%q is not an integer from %d to %d", v, lo, hi)
		return def
	}
	return n
}

// BoolVar parses v as a boolean (def when v is empty).
func BoolVar(v string, def bool, name string, bad Bad) bool {
	if v == "" {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		bad(name, "%q is not a boolean (true or false)", v)
		return def
	}
	return b
}

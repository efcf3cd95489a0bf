package policy

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// pattern is a compiled wildcard pattern (seed 001): "*" stands for any run
// of zero or more characters, every other character stands for itself.
// "*" matches everything, "*foo" matches "foo" and "bar-foo", "*.foo"
// matches "bar-123.foo" but not "barfoo". A "*" also spans dots:
// "*.example.com" matches "a.b.example.com".
type pattern struct {
	raw   string
	kind  patternKind
	parts []string // raw split at '*'; len 1 when there is no '*'
}

// patternKind selects a fast path for the common shapes.
type patternKind uint8

const (
	patExact  patternKind = iota // no '*'
	patAny                       // "*"
	patPrefix                    // "foo*"
	patSuffix                    // "*foo"
	patGlob                      // anything else
)

// compilePattern checks and compiles raw. A pattern is malformed when it is
// not valid UTF-8, contains control characters, has leading or trailing
// white space (it could never match a name) or has adjacent "**" (write one
// "*"). The empty pattern is allowed: it matches only the empty value.
func compilePattern(raw string) (pattern, error) {
	switch {
	case !utf8.ValidString(raw):
		return pattern{}, fmt.Errorf("pattern is not valid UTF-8")
	case strings.IndexFunc(raw, unicode.IsControl) >= 0:
		return pattern{}, fmt.Errorf("pattern %q contains a control character", raw)
	case strings.TrimSpace(raw) != raw:
		return pattern{}, fmt.Errorf("pattern %q has leading or trailing white space", raw)
	case strings.Contains(raw, "**"):
		return pattern{}, fmt.Errorf("malformed wildcard %q: adjacent \"**\"; a single \"*\" already matches any run of characters", raw)
	}
	p := pattern{raw: raw, parts: strings.Split(raw, "*")}
	switch {
	case len(p.parts) == 1:
		p.kind = patExact
	case raw == "*":
		p.kind = patAny
	case len(p.parts) == 2 && p.parts[1] == "":
		p.kind = patPrefix
	case len(p.parts) == 2 && p.parts[0] == "":
		p.kind = patSuffix
	default:
		p.kind = patGlob
	}
	return p, nil
}

// match reports whether s matches the pattern. It runs in time linear in
// len(s) times the number of stars (greedy leftmost search is exact for
// patterns whose only metacharacter is "*").
func (p *pattern) match(s string) bool {
	switch p.kind {
	case patExact:
		return s == p.raw
	case patAny:
		return true
	case patPrefix:
		return strings.HasPrefix(s, p.parts[0])
	case patSuffix:
		return strings.HasSuffix(s, p.parts[1])
	}
	parts := p.parts
	first, last := parts[0], parts[len(parts)-1]
	if len(s) < len(first)+len(last) || !strings.HasPrefix(s, first) || !strings.HasSuffix(s, last) {
		return false
	}
	mid := s[len(first) : len(s)-len(last)]
	for _, part := range parts[1 : len(parts)-1] {
		i := strings.Index(mid, part)
		if i < 0 {
			return false
		}
		mid = mid[i+len(part):]
	}
	return true
}

// patterns is a list of alternatives.
type patterns []pattern

// matchAny reports whether s matches one of ps.
func (ps patterns) matchAny(s string) bool {
	for i := range ps {
		if ps[i].match(s) {
			return true
		}
	}
	return false
}

// String lists the raw patterns, quoted, for messages.
func (ps patterns) String() string {
	q := make([]string, len(ps))
	for i := range ps {
		q[i] = fmt.Sprintf("%q", ps[i].raw)
	}
	return strings.Join(q, ", ")
}

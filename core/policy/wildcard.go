package policy

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// pattern is a compiled wildcard pattern (docs/design/approval-policy.md): "*" stands for any run
// of zero or more characters, every other character stands for itself.
// "*" matches everything, "*foo" matches "foo" and "bar-foo", "*.foo"
// matches "bar-123.foo" but not "barfoo". A "*" also spans dots:
// "*.example.com" matches "a.b.example.com". These are approver-policy's
// semantics (util.WildcardMatches).
//
// Unlike approver-policy, a wildcard pattern of a name field never matches
// a value holding characters that kind of name cannot contain (need, see
// wildcardNeed): the "*" of "*.team-a.example.com" in allowed.dnsNames
// does not match "evil.com\x00.team-a.example.com",
// "evil.org/.team-a.example.com" or "evil.org .team-a.example.com". Exact
// patterns still compare the whole value.
type pattern struct {
	raw   string
	kind  patternKind
	parts []string  // raw split at '*'; len 1 when there is no '*'
	need  charClass // what a value must be for this pattern to match it (0: anything)
}

// charClass is a set of syntactic properties of a value, used to keep
// wildcards from matching across characters a name cannot contain.
type charClass uint8

const (
	// classText: valid UTF-8 without control characters.
	classText charClass = 1 << iota
	// classURI: printable ASCII without space (a URI's characters).
	classURI
	// classEmail: one '@' after a non-empty local part of classURI
	// characters, and a domain of DNS characters without '*'.
	classEmail
	// classDNS: ASCII letters, digits, '-', '.' and '*' (a DNS name's
	// characters, with the wildcard label of a request for a wildcard
	// certificate).
	classDNS
	classAll = classText | classURI | classEmail | classDNS
)

// byteClass is, for each byte, the classes a value holding it may belong
// to (before the UTF-8 and e-mail structure checks of classOf).
var byteClass = func() (t [256]charClass) {
	for c := range 256 {
		switch {
		case isDNSChar(byte(c)) || c == '*':
			t[c] = classAll
		case c > ' ' && c < 0x7f:
			t[c] = classText | classURI | classEmail
		case c == ' ' || c >= 0x80:
			t[c] = classText
		}
	}
	return t
}()

// classOf returns every class v belongs to: one table lookup per byte,
// then the checks that need more than one byte (UTF-8 and C1 controls
// for non-ASCII values, the '@' and domain of an e-mail address).
func classOf(v string) charClass {
	cls := classAll
	for i := 0; i < len(v); i++ {
		cls &= byteClass[v[i]]
	}
	if cls&classText != 0 && cls&classURI == 0 && (!utf8.ValidString(v) || strings.IndexFunc(v, unicode.IsControl) >= 0) {
		cls &^= classText
	}
	if cls&classEmail != 0 {
		at := strings.IndexByte(v, '@')
		if at <= 0 || at == len(v)-1 || strings.IndexByte(v[at+1:], '@') >= 0 || strings.IndexByte(v[at+1:], '*') >= 0 {
			return cls &^ classEmail
		}
		for i := at + 1; i < len(v); i++ {
			if byteClass[v[i]]&classDNS == 0 {
				return cls &^ classEmail
			}
		}
	}
	return cls
}

// isDNSChar reports whether c is an ASCII letter, digit, '-' or '.'.
func isDNSChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.'
}

// wildcardNeed is what a value of attribute a must be for the wildcard
// pattern p to match it: a DNS name's characters for dnsNames, an e-mail
// address's for emailAddresses, a URI's for uris; for commonName, no
// control characters, and a DNS name's characters when the pattern is
// shaped like a DNS name (its literal text is letters, digits, '-' and
// dots, with at least one dot: "*.example.com"); for otherNames (e.g. a
// UPN), no control characters. Exact patterns and other attributes
// (subject fields, usages, selectors) need nothing.
func wildcardNeed(a attr, p *pattern) charClass {
	if p.kind == patExact {
		return 0
	}
	switch a {
	case attrOtherName:
		return classText
	case attrDNSNames:
		return classDNS
	case attrEmailAddresses:
		return classEmail
	case attrURIs:
		return classURI
	case attrCommonName:
		if p.dnsShaped() {
			return classText | classDNS
		}
		return classText
	}
	return 0
}

// dnsShaped reports whether the literal text of p is letters, digits, '-'
// and dots, with at least one dot.
func (p *pattern) dnsShaped() bool {
	dot := false
	for i := 0; i < len(p.raw); i++ {
		switch c := p.raw[i]; {
		case c == '*':
		case c == '.':
			dot = true
		case !isDNSChar(c):
			return false
		}
	}
	return dot
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

// matchAny reports whether s matches one of ps, ignoring need (usages,
// selectors).
func (ps patterns) matchAny(s string) bool {
	for i := range ps {
		if ps[i].match(s) {
			return true
		}
	}
	return false
}

// matchValue reports whether v, a value of a request attribute, matches
// one of ps. have is a class every value of the attribute belongs to
// (Request.classes); a pattern needing more is tried only if v itself
// belongs to what it needs (classOf, computed at most once per call, only
// for requests with a value outside the class).
func (ps patterns) matchValue(v string, have charClass) bool {
	exact := false
	for i := range ps {
		p := &ps[i]
		if p.need&^have != 0 {
			if !exact {
				have, exact = classOf(v), true
			}
			if p.need&^have != 0 {
				continue
			}
		}
		if p.match(v) {
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

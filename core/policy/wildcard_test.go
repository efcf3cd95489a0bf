package policy

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// matchRef is the straightforward recursive definition of docs/design/approval-policy.md's
// wildcard, over runes, used to cross-check pattern.match.
func matchRef(p, s []rune) bool {
	for len(p) > 0 {
		if p[0] == '*' {
			return matchRef(p[1:], s) || (len(s) > 0 && matchRef(p, s[1:]))
		}
		if len(s) == 0 || s[0] != p[0] {
			return false
		}
		p, s = p[1:], s[1:]
	}
	return len(s) == 0
}

func TestPatternMatch(t *testing.T) {
	tests := []struct {
		pattern string
		value   string
		want    bool
	}{
		// docs/design/approval-policy.md's examples
		{"*", "anything.at.all", true},
		{"*", "", true},
		{"*foo", "foo", true},
		{"*foo", "bar-foo", true},
		{"*foo", "foobar", false},
		{"*.foo", "bar-123.foo", true},
		{"*.foo", "barfoo", false},
		{"*.com", "example.com", true},
		{"*.com", "example.org", false},
		{"10.0.1.*", "10.0.1.7", true},
		{"10.0.1.*", "10.0.2.7", false},
		{"*@example.com", "alice@example.com", true},
		{"*@example.com", "alice@example.com.evil", false},
		{"spiffe://example.org/ns/*/sa/*", "spiffe://example.org/ns/team-a/sa/web", true},
		{"spiffe://example.org/ns/*/sa/*", "spiffe://example.org/ns/team-a/web", false},
		{"*Issuer", "ClusterIssuer", true},
		{"*Issuer", "Issuer", true},
		{"app-team-*", "app-team-", true},
		{"app-team-*", "app-tea", false},
		// exact and empty
		{"hello.world", "hello.world", true},
		{"hello.world", "hello.worlds", false},
		{"", "", true},
		{"", "x", false},
		// stars span dots
		{"*.example.com", "a.b.example.com", true},
		{"a*b*c", "abc", true},
		{"a*b*c", "aXbYc", true},
		{"a*b*c", "acb", false},
		{"a*a", "a", false},
		{"a*a", "aa", true},
		{"ab*ba", "aba", false},
		{"*ü*", "grün", true},
	}
	for _, tc := range tests {
		p, err := compilePattern(tc.pattern)
		if err != nil {
			t.Fatalf("compilePattern(%q): %v", tc.pattern, err)
		}
		if got := p.match(tc.value); got != tc.want {
			t.Errorf("%q matches %q = %v, want %v", tc.pattern, tc.value, got, tc.want)
		}
		if ref := matchRef([]rune(tc.pattern), []rune(tc.value)); ref != tc.want {
			t.Errorf("reference matcher disagrees with the table for %q/%q", tc.pattern, tc.value)
		}
	}
}

func TestCompilePatternErrors(t *testing.T) {
	tests := []struct{ pattern, want string }{
		{"a**b", "adjacent"},
		{" example.com", "white space"},
		{"example.com\n", "control character"},
		{"\xff", "UTF-8"},
	}
	for _, tc := range tests {
		if _, err := compilePattern(tc.pattern); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("compilePattern(%q) error = %v, want %q", tc.pattern, err, tc.want)
		}
	}
}

func FuzzPatternMatch(f *testing.F) {
	f.Add("*.foo", "bar-123.foo")
	f.Add("a*b*c", "aXbYc")
	f.Add("*x*", "xx")
	f.Fuzz(func(t *testing.T, pat, s string) {
		if len(pat) > 24 || len(s) > 48 {
			return
		}
		p, err := compilePattern(pat)
		if err != nil {
			return
		}
		// Compare on valid UTF-8 only: the reference works on runes.
		if !utf8.ValidString(s) {
			return
		}
		if got, want := p.match(s), matchRef([]rune(pat), []rune(s)); got != want {
			t.Fatalf("%q vs %q: match=%v reference=%v", pat, s, got, want)
		}
	})
}

// A wildcard pattern of a name field never matches a value holding
// characters that kind of name cannot contain; valid names keep
// approver-policy's semantics ("*" spans dots), exact patterns compare the
// whole value, and other fields are unrestricted.
func TestWildcardNeed(t *testing.T) {
	tests := []struct {
		attr    attr
		pattern string
		value   string
		want    bool
	}{
		// dnsNames: the external probe's names
		{attrDNSNames, "*.team-a.example.com", "www.team-a.example.com", true},
		{attrDNSNames, "*.team-a.example.com", "a.b.team-a.example.com", true},
		{attrDNSNames, "*.team-a.example.com", "*.team-a.example.com", true},
		{attrDNSNames, "*.team-a.example.com", "xn--bcher-kva.team-a.example.com", true},
		{attrDNSNames, "*.team-a.example.com", "evil.com\x00.team-a.example.com", false},
		{attrDNSNames, "*.team-a.example.com", "evil.org/.team-a.example.com", false},
		{attrDNSNames, "*.team-a.example.com", "evil.org .team-a.example.com", false},
		{attrDNSNames, "*.team-a.example.com", "evil.org\t.team-a.example.com", false},
		{attrDNSNames, "*.team-a.example.com", "evil.org\\.team-a.example.com", false},
		{attrDNSNames, "*.team-a.example.com", "bücher.team-a.example.com", false},
		{attrDNSNames, "*.team-a.example.com", "evil\u0085.team-a.example.com", false},
		{attrDNSNames, "*", "evil.org/x", false},
		{attrDNSNames, "*", "web.example.com", true},
		{attrDNSNames, "www.*", "www.evil.org/", false},
		{attrDNSNames, "team-a-*", "team-a-x.example.com", true},
		// an exact pattern is the value itself
		{attrDNSNames, "odd/name.example.com", "odd/name.example.com", true},
		// e-mail addresses
		{attrEmailAddresses, "*@team-a.example.com", "alice@team-a.example.com", true},
		{attrEmailAddresses, "*@team-a.example.com", "a!#$%&'*+/=?^_`{|}~-@team-a.example.com", true},
		{attrEmailAddresses, "*@team-a.example.com", "evil@evil.org/@team-a.example.com", false},
		{attrEmailAddresses, "*@team-a.example.com", "evil\x00@team-a.example.com", false},
		{attrEmailAddresses, "*@team-a.example.com", "al ice@team-a.example.com", false},
		{attrEmailAddresses, "alice@*", "alice@evil.org/.x", false},
		{attrEmailAddresses, "alice@*", "alice@team-a.example.com", true},
		{attrEmailAddresses, "*", "no-at-sign", false},
		// URIs
		{attrURIs, "spiffe://team-a.example.com/*", "spiffe://team-a.example.com/ns/a/sa/web", true},
		{attrURIs, "spiffe://team-a.example.com/*", "spiffe://team-a.example.com/a%20b", true},
		{attrURIs, "spiffe://team-a.example.com/*", "spiffe://team-a.example.com/a b", false},
		{attrURIs, "spiffe://team-a.example.com/*", "spiffe://team-a.example.com/\x1b[31m", false},
		{attrURIs, "spiffe://*", "spiffe://bücher.example/", false},
		// commonName: no control characters; a DNS name's characters under a DNS-shaped pattern
		{attrCommonName, "*.team-a.example.com", "www.team-a.example.com", true},
		{attrCommonName, "*.team-a.example.com", "evil.org/.team-a.example.com", false},
		{attrCommonName, "*.team-a.example.com", "evil.org .team-a.example.com", false},
		{attrCommonName, "*.team-a.example.com", "evil.com\x00.team-a.example.com", false},
		{attrCommonName, "*", "Example Inc. Root CA", true},
		{attrCommonName, "*", "evil\x00", false},
		{attrCommonName, "Example *", "Example Inc. Root CA", true},
		{attrCommonName, "system:node:*", "system:node:ip-10-0-0-1.ec2.internal", true},
		// other fields keep approver-policy's matching
		{attrOrganizations, "*", "evil\x00org", true},
		{attrOrganizations, "Example *", "Example Inc/Co", true},
	}
	for _, tc := range tests {
		p, err := compilePattern(tc.pattern)
		if err != nil {
			t.Fatalf("compilePattern(%q): %v", tc.pattern, err)
		}
		p.need = wildcardNeed(tc.attr, &p)
		ps := patterns{p}
		// have: the value's own class, and the lower bound 0 (another value
		// of the attribute is outside every class), must agree.
		for _, have := range []charClass{classOf(tc.value), 0} {
			if got := ps.matchValue(tc.value, have); got != tc.want {
				t.Errorf("attr %d: %q matches %q = %v (have %04b), want %v", tc.attr, tc.pattern, tc.value, got, have, tc.want)
			}
		}
	}
}

func TestClassOf(t *testing.T) {
	tests := []struct {
		v    string
		want charClass
	}{
		{"www.example.com", classAll &^ classEmail},
		{"*.example.com", classAll &^ classEmail},
		{"alice@example.com", classText | classURI | classEmail},
		{"spiffe://x/y", classText | classURI},
		{"a b", classText},
		{"a\x00b", 0},
		{"grün", classText},
		{"\u0085", 0},
		{"\xff", 0},
		{"", classAll &^ classEmail},
		{"@example.com", classText | classURI},
		{"a@", classText | classURI},
		{"a@*.example.com", classText | classURI},
	}
	for _, tc := range tests {
		if got := classOf(tc.v); got != tc.want {
			t.Errorf("classOf(%q) = %04b, want %04b", tc.v, got, tc.want)
		}
	}
}

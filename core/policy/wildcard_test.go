package policy

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// matchRef is the straightforward recursive definition of seed 001's
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
		// seed 001's examples
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

// Package txtrr writes and reads the text of a TXT record in the
// presentation form DNS APIs take: quoted character-strings of at most 255
// octets (RFC 1035 §3.3) separated by spaces, '"' and '\' escaped by a
// backslash, other octets outside printable ASCII as a three-digit escape.
// Zone files (and Cloud DNS) read \DDD as decimal, Route 53 as octal: a
// Syntax says which.
package txtrr

import "strings"

// MaxString is the longest character-string of a TXT record (RFC 1035 §3.3).
const MaxString = 255

// Syntax is a TXT presentation form, told apart by the base of its \DDD
// escapes.
type Syntax struct{ base int }

var (
	// Decimal is zone file syntax (RFC 1035 §5.1): \DDD is decimal.
	Decimal = Syntax{base: 10}
	// Octal is Route 53's syntax: \DDD is octal.
	Octal = Syntax{base: 8}
)

// Encode returns text as one TXT value: one or more quoted
// character-strings of at most MaxString octets separated by spaces.
func (s Syntax) Encode(text string) string {
	var b strings.Builder
	for first := true; first || len(text) > 0; first = false {
		n := min(len(text), MaxString)
		chunk := text[:n]
		text = text[n:]
		if !first {
			b.WriteByte(' ')
		}
		b.WriteByte('"')
		for i := 0; i < len(chunk); i++ {
			c := chunk[i]
			switch {
			case c == '"' || c == '\\':
				b.WriteByte('\\')
				b.WriteByte(c)
			case c < 0x20 || c > 0x7e:
				d := int(c)
				b.WriteByte('\\')
				b.WriteByte(byte('0' + d/(s.base*s.base)))
				b.WriteByte(byte('0' + d/s.base%s.base))
				b.WriteByte(byte('0' + d%s.base))
			default:
				b.WriteByte(c)
			}
		}
		b.WriteByte('"')
	}
	return b.String()
}

// Decode returns the text of a TXT value: its character-strings (quoted
// or not) concatenated, escapes (\X, \DDD) resolved. It is the inverse of
// Encode and also reads values written by other tools.
func (s Syntax) Decode(v string) string {
	var b strings.Builder
	for _, str := range s.Split(v) {
		b.WriteString(str)
	}
	return b.String()
}

// Split returns the character-strings of a TXT value, escapes resolved
// (quoted strings, or unquoted ones separated by blanks).
func (s Syntax) Split(v string) []string {
	var out []string
	i := 0
	for i < len(v) {
		switch c := v[i]; {
		case c == ' ' || c == '\t':
			i++
		case c == '"':
			var b strings.Builder
			i = s.readString(v, i+1, &b, true)
			out = append(out, b.String())
		default:
			var b strings.Builder
			i = s.readString(v, i, &b, false)
			out = append(out, b.String())
		}
	}
	return out
}

// readString copies one character-string starting at i (after the opening
// quote when quoted) into b and returns the index after it.
func (s Syntax) readString(v string, i int, b *strings.Builder, quoted bool) int {
	for i < len(v) {
		c := v[i]
		switch {
		case quoted && c == '"':
			return i + 1
		case !quoted && (c == ' ' || c == '\t'):
			return i
		case c == '\\' && i+3 < len(v) && isDigit(v[i+1]) && isDigit(v[i+2]) && isDigit(v[i+3]):
			n := int(v[i+1]-'0')*s.base*s.base + int(v[i+2]-'0')*s.base + int(v[i+3]-'0')
			b.WriteByte(byte(n))
			i += 4
		case c == '\\' && i+1 < len(v):
			b.WriteByte(v[i+1])
			i += 2
		default:
			b.WriteByte(c)
			i++
		}
	}
	return i
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

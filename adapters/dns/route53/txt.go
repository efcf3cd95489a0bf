package route53

import (
	"strings"
)

// maxString is the longest character-string of a TXT record (RFC 1035 §3.3).
const maxString = 255

// EncodeTXT returns text as a Route 53 TXT value: one or more quoted
// character-strings of at most 255 octets, separated by spaces, with '"'
// and '\' escaped by a backslash and other octets outside printable ASCII
// as \DDD (octal, as Route 53 documents).
func EncodeTXT(text string) string {
	var b strings.Builder
	for first := true; first || len(text) > 0; first = false {
		n := min(len(text), maxString)
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
				b.WriteByte('\\')
				b.WriteByte('0' + c/64)
				b.WriteByte('0' + c/8%8)
				b.WriteByte('0' + c%8)
			default:
				b.WriteByte(c)
			}
		}
		b.WriteByte('"')
	}
	return b.String()
}

// DecodeTXT returns the text of a Route 53 TXT value: its character-strings
// (quoted or not) concatenated, escapes (\X, \DDD) resolved. It is the
// inverse of EncodeTXT and also reads values written by other tools.
func DecodeTXT(v string) string {
	var b strings.Builder
	i := 0
	for i < len(v) {
		switch c := v[i]; {
		case c == ' ' || c == '\t':
			i++
		case c == '"':
			i = readString(v, i+1, &b, true)
		default:
			i = readString(v, i, &b, false)
		}
	}
	return b.String()
}

// readString copies one character-string starting at i (after the opening
// quote when quoted) into b and returns the index after it.
func readString(v string, i int, b *strings.Builder, quoted bool) int {
	for i < len(v) {
		c := v[i]
		switch {
		case quoted && c == '"':
			return i + 1
		case !quoted && (c == ' ' || c == '\t'):
			return i
		case c == '\\' && i+3 < len(v) && isDigit(v[i+1]) && isDigit(v[i+2]) && isDigit(v[i+3]):
			b.WriteByte((v[i+1]-'0')*64 + (v[i+2]-'0')*8 + (v[i+3] - '0'))
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

// decodeValues decodes raw values.
func decodeValues(raw []string) []string {
	out := make([]string, len(raw))
	for i, v := range raw {
		out[i] = DecodeTXT(v)
	}
	return out
}

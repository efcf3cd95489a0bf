package clouddns

import "strings"

// maxString is the longest character-string of a TXT record (RFC 1035 §3.3).
const maxString = 255

// EncodeTXT returns text as one Cloud DNS TXT rrdata: one or more quoted
// character-strings of at most 255 octets separated by spaces, in zone
// file syntax (RFC 1035 §5.1): '"' and '\' escaped by a backslash, octets
// outside printable ASCII as \DDD (decimal).
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
				b.WriteByte('0' + c/100)
				b.WriteByte('0' + c/10%10)
				b.WriteByte('0' + c%10)
			default:
				b.WriteByte(c)
			}
		}
		b.WriteByte('"')
	}
	return b.String()
}

// DecodeTXT returns the text of a TXT rrdata: its character-strings
// (quoted or not) concatenated, escapes (\X, \DDD decimal) resolved. It is
// the inverse of EncodeTXT and also reads rrdatas written by other tools.
func DecodeTXT(v string) string {
	var b strings.Builder
	for _, s := range SplitTXT(v) {
		b.WriteString(s)
	}
	return b.String()
}

// SplitTXT returns the character-strings of a TXT rrdata, escapes
// resolved (quoted strings, or unquoted ones separated by blanks).
func SplitTXT(v string) []string {
	var out []string
	i := 0
	for i < len(v) {
		switch c := v[i]; {
		case c == ' ' || c == '\t':
			i++
		case c == '"':
			var b strings.Builder
			i = readString(v, i+1, &b, true)
			out = append(out, b.String())
		default:
			var b strings.Builder
			i = readString(v, i, &b, false)
			out = append(out, b.String())
		}
	}
	return out
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
			n := int(v[i+1]-'0')*100 + int(v[i+2]-'0')*10 + int(v[i+3]-'0')
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

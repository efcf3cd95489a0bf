package route53

import "github.com/certfn/certfn/adapters/dns/txtrr"

// EncodeTXT returns text as a Route 53 TXT value: one or more quoted
// character-strings of at most 255 octets, separated by spaces, with '"'
// and '\' escaped by a backslash and other octets outside printable ASCII
// as \DDD (octal, as Route 53 documents).
func EncodeTXT(text string) string { return txtrr.Octal.Encode(text) }

// DecodeTXT returns the text of a Route 53 TXT value: its character-strings
// (quoted or not) concatenated, escapes (\X, \DDD) resolved. It is the
// inverse of EncodeTXT and also reads values written by other tools.
func DecodeTXT(v string) string { return txtrr.Octal.Decode(v) }

// decodeValues decodes raw values.
func decodeValues(raw []string) []string {
	out := make([]string, len(raw))
	for i, v := range raw {
		out[i] = DecodeTXT(v)
	}
	return out
}

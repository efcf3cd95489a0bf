package clouddns

import "github.com/certfn/certfn/adapters/dns/txtrr"

// EncodeTXT returns text as one Cloud DNS TXT rrdata: one or more quoted
// character-strings of at most 255 octets separated by spaces, in zone
// file syntax (RFC 1035 §5.1): '"' and '\' escaped by a backslash, octets
// outside printable ASCII as \DDD (decimal).
func EncodeTXT(text string) string { return txtrr.Decimal.Encode(text) }

// DecodeTXT returns the text of a TXT rrdata: its character-strings
// (quoted or not) concatenated, escapes (\X, \DDD decimal) resolved. It is
// the inverse of EncodeTXT and also reads rrdatas written by other tools.
func DecodeTXT(v string) string { return txtrr.Decimal.Decode(v) }

// SplitTXT returns the character-strings of a TXT rrdata, escapes
// resolved (quoted strings, or unquoted ones separated by blanks).
func SplitTXT(v string) []string { return txtrr.Decimal.Split(v) }

package pki

import (
	"bytes"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// attributeTypes maps the RFC 4514 short names (and a few common aliases,
// matched case-insensitively) to attribute type OIDs, as cert-manager's
// literalSubject support.
var attributeTypes = map[string]asn1.ObjectIdentifier{
	"CN":           {2, 5, 4, 3},
	"SERIALNUMBER": {2, 5, 4, 5},
	"C":            {2, 5, 4, 6},
	"L":            {2, 5, 4, 7},
	"ST":           {2, 5, 4, 8},
	"STREET":       {2, 5, 4, 9},
	"O":            {2, 5, 4, 10},
	"OU":           {2, 5, 4, 11},
	"POSTALCODE":   {2, 5, 4, 17},
	"UID":          {0, 9, 2342, 19200300, 100, 1, 1},
	"DC":           {0, 9, 2342, 19200300, 100, 1, 25},
	"EMAILADDRESS": {1, 2, 840, 113549, 1, 9, 1},
	"E":            {1, 2, 840, 113549, 1, 9, 1},
}

// MaxLiteralSubjectLength bounds spec.literalSubject.
const MaxLiteralSubjectLength = 4096

// ParseLiteralSubject parses an RFC 4514 distinguished name string (as in
// spec.literalSubject) into an RDNSequence in ASN.1 order, which is the
// reverse of the string order ("CN=a,O=b" encodes O first). It supports
// multi-valued RDNs ("+"), backslash escapes of special characters and of
// hex pairs (UTF-8 bytes), '#'-prefixed hex DER values, short names (CN, O,
// OU, C, L, ST, STREET, POSTALCODE, SERIALNUMBER, UID, DC, EMAILADDRESS) and
// dotted OIDs as attribute types. An empty string yields an empty sequence.
func ParseLiteralSubject(s string) (pkix.RDNSequence, error) {
	if len(s) > MaxLiteralSubjectLength {
		return nil, fmt.Errorf("longer than %d bytes", MaxLiteralSubjectLength)
	}
	if !utf8.ValidString(s) {
		return nil, errors.New("not valid UTF-8")
	}
	if strings.TrimSpace(s) == "" {
		return pkix.RDNSequence{}, nil
	}
	var (
		seq pkix.RDNSequence
		rdn pkix.RelativeDistinguishedNameSET
		i   int
	)
	for {
		atv, next, sep, err := parseATV(s, i)
		if err != nil {
			return nil, err
		}
		rdn = append(rdn, atv)
		i = next
		if sep == '+' {
			continue
		}
		seq = append(seq, rdn)
		rdn = nil
		if sep == 0 {
			break
		}
	}
	slices.Reverse(seq)
	return seq, nil
}

// parseATV parses "type=value" starting at s[i]. It returns the position
// after the separator and the separator (',', '+', or 0 at the end).
func parseATV(s string, i int) (pkix.AttributeTypeAndValue, int, byte, error) {
	var atv pkix.AttributeTypeAndValue
	eq := strings.IndexByte(s[i:], '=')
	if eq < 0 {
		return atv, 0, 0, fmt.Errorf("at offset %d: want type=value", i)
	}
	typ := strings.TrimSpace(s[i : i+eq])
	oid, err := attributeType(typ)
	if err != nil {
		return atv, 0, 0, fmt.Errorf("at offset %d: %w", i, err)
	}
	atv.Type = oid
	i += eq + 1
	for i < len(s) && s[i] == ' ' {
		i++
	}
	if i < len(s) && s[i] == '#' {
		end := i + 1
		for end < len(s) && s[end] != ',' && s[end] != '+' && s[end] != ';' {
			end++
		}
		der, err := hex.DecodeString(strings.TrimRight(s[i+1:end], " "))
		if err != nil {
			return atv, 0, 0, fmt.Errorf("attribute %s: '#' value is not valid hex", typ)
		}
		var raw asn1.RawValue
		rest, err := asn1.Unmarshal(der, &raw)
		if err != nil || len(rest) != 0 {
			return atv, 0, 0, fmt.Errorf("attribute %s: '#' value is not one DER-encoded ASN.1 value", typ)
		}
		atv.Value = raw
		return atv, advance(s, end), sepAt(s, end), nil
	}
	var val bytes.Buffer
	trailing := 0 // unescaped trailing spaces, trimmed at the end
	for ; i < len(s); i++ {
		c := s[i]
		switch c {
		case ',', ';', '+':
			v := val.Bytes()[:val.Len()-trailing]
			atv.Value, err = attributeValue(typ, v)
			if err != nil {
				return atv, 0, 0, err
			}
			if c == ';' {
				c = ','
			}
			return atv, i + 1, c, nil
		case '\\':
			if i+1 >= len(s) {
				return atv, 0, 0, fmt.Errorf("attribute %s: value ends with a lone backslash", typ)
			}
			n := s[i+1]
			if strings.IndexByte(" \"#+,;<=>\\", n) >= 0 {
				val.WriteByte(n)
				i++
			} else if i+2 < len(s) && isHex(n) && isHex(s[i+2]) {
				b, _ := strconv.ParseUint(s[i+1:i+3], 16, 8)
				val.WriteByte(byte(b))
				i += 2
			} else {
				return atv, 0, 0, fmt.Errorf("attribute %s: invalid escape at offset %d", typ, i)
			}
			trailing = 0
		case ' ':
			val.WriteByte(c)
			trailing++
		case '"':
			return atv, 0, 0, fmt.Errorf("attribute %s: unescaped '\"' at offset %d", typ, i)
		default:
			val.WriteByte(c)
			trailing = 0
		}
	}
	v := val.Bytes()[:val.Len()-trailing]
	atv.Value, err = attributeValue(typ, v)
	if err != nil {
		return atv, 0, 0, err
	}
	return atv, len(s), 0, nil
}

func advance(s string, end int) int {
	if end < len(s) {
		return end + 1
	}
	return end
}

func sepAt(s string, end int) byte {
	if end >= len(s) {
		return 0
	}
	if s[end] == ';' {
		return ','
	}
	return s[end]
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func attributeValue(typ string, v []byte) (string, error) {
	if !utf8.Valid(v) {
		return "", fmt.Errorf("attribute %s: escaped value is not valid UTF-8", typ)
	}
	return string(v), nil
}

func attributeType(t string) (asn1.ObjectIdentifier, error) {
	if t == "" {
		return nil, errors.New("empty attribute type")
	}
	if oid, ok := attributeTypes[strings.ToUpper(t)]; ok {
		return oid, nil
	}
	if t[0] >= '0' && t[0] <= '9' {
		oid, err := parseOID(t)
		if err != nil {
			return nil, fmt.Errorf("attribute type %q: %w", t, err)
		}
		return oid, nil
	}
	return nil, fmt.Errorf("unknown attribute type %q: use CN, O, OU, C, L, ST, STREET, POSTALCODE, SERIALNUMBER, UID, DC, EMAILADDRESS or a dotted OID", t)
}

// parseOID parses a dotted object identifier such as "1.3.6.1.4.1.311.20.2.3".
func parseOID(s string) (asn1.ObjectIdentifier, error) {
	parts := strings.Split(s, ".")
	if len(parts) < 2 {
		return nil, errors.New("not a dotted OID")
	}
	oid := make(asn1.ObjectIdentifier, len(parts))
	for i, p := range parts {
		if p == "" || (len(p) > 1 && p[0] == '0') {
			return nil, errors.New("not a dotted OID")
		}
		n, err := strconv.ParseUint(p, 10, 31)
		if err != nil {
			return nil, errors.New("not a dotted OID")
		}
		oid[i] = int(n)
	}
	if oid[0] > 2 || (oid[0] < 2 && oid[1] > 39) {
		return nil, errors.New("not a valid OID: first arc must be 0, 1 or 2 (second arc below 40 unless the first is 2)")
	}
	return oid, nil
}

// rawATV and rawRDNSET let a subject be decoded without losing value types.
type rawATV struct {
	Type  asn1.ObjectIdentifier
	Value asn1.RawValue
}

type rawRDNSET []rawATV

// canonicalSubject renders a DER subject as a comparable string: each
// attribute as OID=value, string types (Printable, UTF8, IA5, ...) compared
// by their text so that encoders choosing different string types agree.
func canonicalSubject(der []byte) (string, error) {
	var seq []rawRDNSET
	rest, err := asn1.Unmarshal(der, &seq)
	if err != nil || len(rest) != 0 {
		return "", errors.New("subject is not a valid DER Name")
	}
	var b strings.Builder
	for _, rdn := range seq {
		b.WriteByte('/')
		for j, atv := range rdn {
			if j > 0 {
				b.WriteByte('+')
			}
			b.WriteString(atv.Type.String())
			b.WriteByte('=')
			var s string
			if _, err := asn1.Unmarshal(atv.Value.FullBytes, &s); err == nil && atv.Value.Class == asn1.ClassUniversal {
				b.WriteString(strconv.Quote(s))
			} else {
				b.WriteString("#" + hex.EncodeToString(atv.Value.FullBytes))
			}
		}
	}
	return b.String(), nil
}

package pki

import (
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// The syntax of the names a CA signs. The names are read with the one
// GeneralName reader (CSRSubjectAltName), which the policy's view and the
// signers use too, and the signers re-encode the names read, so these
// checks judge exactly the names that are signed.

// Name kinds, as NameError.Kind names them.
const (
	NameKindDNS        = "DNS name"
	NameKindEmail      = "e-mail address"
	NameKindURI        = "URI"
	NameKindIP         = "IP address"
	NameKindOtherName  = "otherName"
	NameKindCommonName = "subject commonName"
)

// NameError is a name carried by a CSR that a CA must not sign.
type NameError struct {
	// Kind is one of the NameKind constants.
	Kind string
	// Value is the name as the CSR carries it (for an IP address, the hex
	// of its bytes). Error quotes it with %q, so control characters and
	// invalid UTF-8 never reach a log or a status message raw.
	Value string
	// SAN is the 1-based position of the name among the CSR's
	// subjectAltName entries, 0 for a subject attribute.
	SAN int
	// Rule is the rule the name breaks.
	Rule string
}

// Error renders `DNS name "a..b" (SAN 2): has an empty label` or, for the
// subject, `subject commonName "x": ...`.
func (e *NameError) Error() string {
	if e.SAN > 0 && e.Value == "" {
		return fmt.Sprintf("%s (SAN %d): %s", e.Kind, e.SAN, e.Rule)
	}
	if e.SAN > 0 {
		return fmt.Sprintf("%s %q (SAN %d): %s", e.Kind, e.Value, e.SAN, e.Rule)
	}
	return fmt.Sprintf("%s %q: %s", e.Kind, e.Value, e.Rule)
}

// CheckCSRNames checks the syntax of every name csr carries, in order: each
// subjectAltName entry, then each subject commonName. It returns nil when
// all are names a CA may sign, else a *NameError for the first that is
// not (a subjectAltName extension that CSRSubjectAltName refuses — a
// GeneralName whose constructed bit is wrong for its kind, an unknown
// tag, bytes after a value, a second subjectAltName extension — is a
// plain error naming the entry and the rule). The rules:
//
//   - DNS names: CheckDNSName with a wildcard allowed;
//   - e-mail addresses: CheckEmailAddress;
//   - URIs: CheckURI;
//   - IP addresses: 4 or 16 bytes;
//   - otherNames: a UTF8String value holds no control character (other
//     encodings are left to the policy, which allows no otherName);
//   - x400Address, directoryName, ediPartyName, registeredID: refused,
//     certfn signs none;
//   - commonName: CheckCommonName.
//
// The function is pure and does not verify the signature: pass a CSR
// from ParseCSRPEM. Callers prefix the error with the field that carried
// the CSR ("spec.request: ").
func CheckCSRNames(csr *x509.CertificateRequest) error {
	if csr == nil {
		return errors.New("no certificate request")
	}
	san, err := CSRSubjectAltName(csr.Extensions)
	if err != nil {
		return err
	}
	for i, g := range san.Names {
		if err := checkGeneralName(g, i+1); err != nil {
			return err
		}
	}
	for _, atv := range csr.Subject.Names {
		if !atv.Type.Equal(attributeTypes["CN"]) {
			continue
		}
		if cn, ok := atv.Value.(string); ok {
			if err := CheckCommonName(cn); err != nil {
				return &NameError{Kind: NameKindCommonName, Value: cn, Rule: err.Error()}
			}
		}
	}
	return nil
}

// checkGeneralName checks one parsed GeneralName at SAN position pos.
func checkGeneralName(g GeneralName, pos int) error {
	var kind string
	var err error
	value := g.Text
	switch g.Tag {
	case gnDNS:
		kind, err = NameKindDNS, CheckDNSName(value, true)
	case gnRFC822:
		kind, err = NameKindEmail, CheckEmailAddress(value)
	case gnURI:
		kind, err = NameKindURI, CheckURI(value)
	case gnIP:
		kind, value = NameKindIP, hex.EncodeToString(g.IP)
		if n := len(g.IP); n != net.IPv4len && n != net.IPv6len {
			err = fmt.Errorf("is %d bytes long; an IP address is 4 (IPv4) or 16 (IPv6)", n)
		}
	case gnOtherName:
		kind = NameKindOtherName
		if v, ok := g.OtherName.UTF8(); ok {
			value = g.OtherName.OID.String() + "=" + v
			if r, i := firstControl(v); i >= 0 {
				err = fmt.Errorf("value contains a control character (%s)", describeRune(r))
			}
		}
	default:
		kind, value = GeneralNameKind(g.Tag), ""
		err = errors.New("certfn signs no names of this kind (only DNS names, IP addresses, e-mail addresses, URIs and otherNames)")
	}
	if err != nil {
		return &NameError{Kind: kind, Value: value, SAN: pos, Rule: err.Error()}
	}
	return nil
}

// CheckDNSName checks that name is a DNS name a certificate may carry: at
// most 253 octets without a trailing dot, of labels made of ASCII letters,
// digits and '-' (LDH), each 1..63 octets, not starting or ending with
// '-'; a label starting with "xn--" must be an IDNA A-label (it decodes,
// and encodes back to itself, under IDNA's lookup profile). With wildcard,
// the leftmost label may be exactly "*" ("*.example.com"); '*' is allowed
// nowhere else. The last label is not all digits (RFC 3696 2: no
// top-level domain is; "10.0.0.1" or "127.1" is an IP address, which goes
// in an iPAddress SAN). The error states the rule broken, without the name.
func CheckDNSName(name string, wildcard bool) error {
	if name == "" {
		return errors.New("is empty")
	}
	for i := 0; i < len(name); {
		c := name[i]
		if isLDH(c) || c == '.' || c == '*' {
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(name[i:])
		if r == utf8.RuneError && size <= 1 {
			return errors.New("is not valid UTF-8")
		}
		if r >= utf8.RuneSelf && !unicode.IsControl(r) && !unicode.IsSpace(r) {
			return fmt.Errorf("contains a character a DNS name cannot hold (%s); write internationalised names as IDNA A-labels (xn--...)", describeRune(r))
		}
		return fmt.Errorf("contains a character a DNS name cannot hold (%s)", describeRune(r))
	}
	if len(name) > 253 {
		return fmt.Errorf("is %d octets long; a DNS name has at most 253", len(name))
	}
	if strings.HasSuffix(name, ".") {
		return errors.New("ends with a dot; write the name without the root label")
	}
	rest := name
	if wildcard && strings.HasPrefix(name, "*.") {
		rest = name[2:]
	}
	if strings.Contains(rest, "*") {
		if !wildcard {
			return errors.New("contains '*': a wildcard is not allowed here")
		}
		return errors.New("contains '*' other than as the whole leftmost label (\"*.example.com\")")
	}
	for label := range strings.SplitSeq(rest, ".") {
		if err := checkLabel(label); err != nil {
			return err
		}
	}
	if last := rest[strings.LastIndexByte(rest, '.')+1:]; strings.Trim(last, "0123456789") == "" {
		return errors.New("has an all-numeric last label, which no DNS name has (it reads as an IP address; put IP addresses in ipAddresses)")
	}
	return nil
}

// checkLabel checks one LDH label (its characters are already known to
// be letters, digits and '-').
func checkLabel(l string) error {
	switch {
	case l == "":
		return errors.New("has an empty label")
	case len(l) > 63:
		return fmt.Errorf("has a label of %d octets; a label has at most 63", len(l))
	case l[0] == '-' || l[len(l)-1] == '-':
		return fmt.Errorf("has a label starting or ending with '-' (%q)", l)
	}
	if len(l) >= 4 && strings.EqualFold(l[:4], "xn--") {
		u, err := idna.Lookup.ToUnicode(l)
		if err != nil || u == "" {
			return fmt.Errorf("has a label that is not a valid IDNA A-label (%q)", l)
		}
		if a, err := idna.Lookup.ToASCII(u); err != nil || !strings.EqualFold(a, l) {
			return fmt.Errorf("has a label that is not a valid IDNA A-label (%q does not encode back to itself)", l)
		}
	}
	return nil
}

func isLDH(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-'
}

// CheckEmailAddress checks that addr is an e-mail address a certificate
// may carry (rfc822Name): exactly one '@'; a local part of 1..64 octets of
// printable ASCII other than space (no quoting, no control characters);
// a domain that passes CheckDNSName without a wildcard. The error states
// the rule broken, without the address.
func CheckEmailAddress(addr string) error {
	if addr == "" {
		return errors.New("is empty")
	}
	if n := strings.Count(addr, "@"); n != 1 {
		return fmt.Errorf("has %d '@'; an e-mail address has exactly one", n)
	}
	local, domain, _ := strings.Cut(addr, "@")
	switch {
	case local == "":
		return errors.New("has an empty local part")
	case len(local) > 64:
		return fmt.Errorf("has a local part of %d octets; at most 64", len(local))
	}
	for i := 0; i < len(local); i++ {
		if c := local[i]; c <= ' ' || c >= 0x7f {
			r, _ := utf8.DecodeRuneInString(local[i:])
			return fmt.Errorf("local part contains a character an e-mail address cannot hold (%s)", describeRune(r))
		}
	}
	if err := CheckDNSName(domain, false); err != nil {
		return fmt.Errorf("domain %w", err)
	}
	return nil
}

// CheckURI checks that raw is a URI a certificate may carry
// (uniformResourceIdentifier): printable ASCII without spaces or control
// characters (non-ASCII must be percent-encoded), parsed by net/url, with
// a scheme, without user info ("user@" or "user:password@" before the
// host), and without percent-encoded control characters in its host, path
// or fragment. The error states the rule broken, without the URI.
func CheckURI(raw string) error {
	if raw == "" {
		return errors.New("is empty")
	}
	for i := 0; i < len(raw); i++ {
		if c := raw[i]; c <= ' ' || c >= 0x7f {
			r, _ := utf8.DecodeRuneInString(raw[i:])
			return fmt.Errorf("contains a character a URI cannot hold (%s)", describeRune(r))
		}
	}
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("does not parse as a URI: %v", err)
	}
	switch {
	case u.Scheme == "":
		return errors.New("has no scheme; want an absolute URI such as spiffe://trust.domain/workload")
	case u.User != nil:
		return errors.New("carries user info (user@ or user:password@), which a certificate must not hold")
	}
	for _, part := range []string{u.Hostname(), u.Path, u.Fragment} {
		if r, i := firstControl(part); i >= 0 {
			return fmt.Errorf("contains a percent-encoded control character (%s)", describeRune(r))
		}
	}
	return nil
}

// CheckCommonName checks a subject commonName: valid UTF-8 without control
// characters. A commonName read as a host name by clients that still look
// at it — one that contains a dot, is not an IP address and holds none of
// the characters that mark other kinds of names (white space as in
// "Example Inc. Root CA", '@' as in an e-mail address, ':' as in
// "system:node:host.example.com") — must also pass CheckDNSName (a
// wildcard allowed). The error states the rule broken, without the name.
func CheckCommonName(cn string) error {
	if !utf8.ValidString(cn) {
		return errors.New("is not valid UTF-8")
	}
	if r, i := firstControl(cn); i >= 0 {
		return fmt.Errorf("contains a control character (%s)", describeRune(r))
	}
	if !strings.Contains(cn, ".") || net.ParseIP(cn) != nil ||
		strings.ContainsFunc(cn, func(r rune) bool { return unicode.IsSpace(r) || r == '@' || r == ':' }) {
		return nil
	}
	if err := CheckDNSName(cn, true); err != nil {
		return fmt.Errorf("is read as a host name but %w", err)
	}
	return nil
}

// firstControl returns the first control character of s and its index,
// or -1.
func firstControl(s string) (rune, int) {
	for i, r := range s {
		if unicode.IsControl(r) {
			return r, i
		}
	}
	return 0, -1
}

// describeRune names r for a message without ever writing it raw when it
// is not printable: "NUL", "space", "'/'", "control character U+001B",
// "non-ASCII 'ü'".
func describeRune(r rune) string {
	switch r {
	case 0:
		return "NUL"
	case '\t':
		return "TAB"
	case '\n':
		return "LF"
	case '\r':
		return "CR"
	case ' ':
		return "space"
	case 0x7f:
		return "DEL"
	case utf8.RuneError:
		return "invalid UTF-8"
	}
	switch {
	case unicode.IsControl(r):
		return fmt.Sprintf("control character U+%04X", r)
	case unicode.IsSpace(r):
		return fmt.Sprintf("white space U+%04X", r)
	case !unicode.IsPrint(r):
		return fmt.Sprintf("U+%04X", r)
	case r >= utf8.RuneSelf:
		return fmt.Sprintf("non-ASCII %q", r)
	}
	return fmt.Sprintf("%q", r)
}

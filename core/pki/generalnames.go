package pki

import (
	"bytes"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"unicode/utf8"

	"github.com/certfn/certfn/core/api"
)

// The one reader of GeneralNames (RFC 5280 4.2.1.6): the policy's view of
// a request, the name checks (CheckCSRNames) and the signers read a CSR's
// subjectAltName through CSRSubjectAltName, and a CA request's
// nameConstraints through ParseCSRExtensions, so that what is judged is
// what is signed. crypto/x509 silently skips a GeneralName whose
// constructed bit is wrong for its kind (a constructed [7] is not an
// iPAddress to it), while other parsers (OpenSSL) read it as one; this
// reader refuses it instead.

// GeneralName tags that certfn recognises but never signs.
const (
	gnX400Address   = 3
	gnDirectoryName = 4
	gnEDIPartyName  = 5
	gnRegisteredID  = 8
)

// GeneralName is one parsed GeneralName.
type GeneralName struct {
	// Tag is the context-specific tag: 0 otherName, 1 rfc822Name, 2
	// dNSName, 3 x400Address, 4 directoryName, 5 ediPartyName, 6
	// uniformResourceIdentifier, 7 iPAddress, 8 registeredID.
	Tag int
	// Text is the IA5String of an rfc822Name, dNSName or URI.
	Text string
	// IP is the content of an iPAddress: 4 or 16 bytes in a
	// subjectAltName, address and mask (8 or 32 bytes) in a name
	// constraint.
	IP []byte
	// OtherName is an otherName's type-id and value.
	OtherName OtherNameValue
}

// OtherNameValue is an otherName: type-id and the one DER value inside
// its [0] EXPLICIT.
type OtherNameValue struct {
	OID   asn1.ObjectIdentifier
	Value asn1.RawValue
}

// Text renders the value as a policy matches it: the text of a
// UTF8String, PrintableString, IA5String or T61String, else the hex of
// its DER encoding.
func (o OtherNameValue) Text() string {
	if o.Value.Class == asn1.ClassUniversal && !o.Value.IsCompound {
		switch o.Value.Tag {
		case asn1.TagUTF8String, asn1.TagPrintableString, asn1.TagIA5String, asn1.TagT61String:
			return string(o.Value.Bytes)
		}
	}
	return hex.EncodeToString(o.Value.FullBytes)
}

// UTF8 returns the value and true when it is a UTF8String.
func (o OtherNameValue) UTF8() (string, bool) {
	if o.Value.Class == asn1.ClassUniversal && o.Value.Tag == asn1.TagUTF8String && !o.Value.IsCompound {
		return string(o.Value.Bytes), true
	}
	return "", false
}

// GeneralNameKind names a GeneralName tag as RFC 5280 does.
func GeneralNameKind(tag int) string {
	switch tag {
	case gnOtherName:
		return "otherName"
	case gnRFC822:
		return "rfc822Name"
	case gnDNS:
		return "dNSName"
	case gnX400Address:
		return "x400Address"
	case gnDirectoryName:
		return "directoryName"
	case gnEDIPartyName:
		return "ediPartyName"
	case gnURI:
		return "uniformResourceIdentifier"
	case gnIP:
		return "iPAddress"
	case gnRegisteredID:
		return "registeredID"
	}
	return fmt.Sprintf("GeneralName [%d]", tag)
}

// Signable reports whether certfn signs names of this kind (otherName,
// rfc822Name, dNSName, URI, iPAddress).
func (g GeneralName) Signable() bool {
	switch g.Tag {
	case gnOtherName, gnRFC822, gnDNS, gnURI, gnIP:
		return true
	}
	return false
}

// parseGeneralName reads one GeneralName. The rules, each an error naming
// the kind and the rule:
//   - context-specific class, a tag from 0 to 8;
//   - rfc822Name, dNSName, URI, iPAddress and registeredID primitive;
//     otherName, x400Address, directoryName and ediPartyName constructed
//     (the DER encoding of their types; a BER constructed string is
//     refused, not concatenated);
//   - rfc822Name, dNSName and URI: ASCII; a URI that net/url parses and
//     writes back unchanged (so the text judged is the text signed);
//   - iPAddress: 4 or 16 bytes (constraint: 8 or 32, a contiguous mask,
//     no address bit outside it);
//   - otherName: a type-id OID then [0] EXPLICIT holding exactly one DER
//     value; a string value primitive, a UTF8String valid UTF-8, an
//     IA5String or PrintableString ASCII;
//   - no bytes after a value.
//
// x400Address, directoryName, ediPartyName and registeredID are returned
// with their tag only (their content is not read): no policy allows them
// and no signer signs them.
func parseGeneralName(rv asn1.RawValue, constraint bool) (GeneralName, error) {
	g := GeneralName{Tag: rv.Tag}
	if rv.Class != asn1.ClassContextSpecific {
		return g, errors.New("is not a GeneralName (not a context-specific tag)")
	}
	constructed := false
	switch rv.Tag {
	case gnOtherName, gnX400Address, gnDirectoryName, gnEDIPartyName:
		constructed = true
	case gnRFC822, gnDNS, gnURI, gnIP, gnRegisteredID:
	default:
		return g, fmt.Errorf("has the unknown tag [%d]; a GeneralName is tagged [0] to [8]", rv.Tag)
	}
	kind := GeneralNameKind(rv.Tag)
	if rv.IsCompound != constructed {
		if constructed {
			return g, fmt.Errorf("is encoded as primitive; an %s is constructed", kind)
		}
		return g, fmt.Errorf("is encoded as constructed; %s is primitive (DER), a constructed (BER) encoding is refused", aKind(kind))
	}
	switch rv.Tag {
	case gnRFC822, gnDNS, gnURI:
		for _, c := range rv.Bytes {
			if c >= utf8.RuneSelf {
				return g, fmt.Errorf("holds a non-ASCII byte; %s is an IA5String", aKind(kind))
			}
		}
		g.Text = string(rv.Bytes)
		if rv.Tag == gnURI && !constraint {
			if u, err := url.Parse(g.Text); err == nil && u.String() != g.Text {
				return g, errors.New("is not in the form net/url writes it back; write the URI in its canonical form")
			}
		}
	case gnIP:
		n := len(rv.Bytes)
		switch {
		case !constraint && n != net.IPv4len && n != net.IPv6len:
			return g, fmt.Errorf("is %d bytes long; an IP address is 4 (IPv4) or 16 (IPv6)", n)
		case constraint && n != 2*net.IPv4len && n != 2*net.IPv6len:
			return g, fmt.Errorf("is %d bytes long; an IP range is 8 (IPv4) or 32 (IPv6): address then mask", n)
		}
		g.IP = append([]byte(nil), rv.Bytes...)
		if constraint {
			addr, mask := g.IP[:n/2], g.IP[n/2:]
			if _, bitsLen := net.IPMask(mask).Size(); bitsLen == 0 {
				return g, errors.New("has a mask that is not a prefix (its one bits are not contiguous)")
			}
			for i := range addr {
				if addr[i]&^mask[i] != 0 {
					return g, errors.New("has address bits outside its mask")
				}
			}
		}
	case gnOtherName:
		on, err := parseOtherNameValue(rv.Bytes)
		if err != nil {
			return g, err
		}
		g.OtherName = on
	}
	return g, nil
}

func aKind(kind string) string {
	switch kind[0] {
	case 'a', 'e', 'i', 'o', 'u', 'r':
		return "an " + kind
	}
	return "a " + kind
}

// parseOtherNameValue reads an otherName's content: type-id, [0]
// EXPLICIT value.
func parseOtherNameValue(b []byte) (OtherNameValue, error) {
	var on OtherNameValue
	rest, err := asn1.Unmarshal(b, &on.OID)
	if err != nil {
		return on, errors.New("has no valid type-id OID")
	}
	var explicit asn1.RawValue
	rest, err = asn1.Unmarshal(rest, &explicit)
	if err != nil || explicit.Class != asn1.ClassContextSpecific || explicit.Tag != 0 || !explicit.IsCompound {
		return on, errors.New("has no value: want [0] EXPLICIT after the type-id")
	}
	if len(rest) != 0 {
		return on, errors.New("has bytes after its value")
	}
	rest, err = asn1.Unmarshal(explicit.Bytes, &on.Value)
	if err != nil || len(rest) != 0 {
		return on, errors.New("value is not exactly one DER value")
	}
	v := on.Value
	if v.Class == asn1.ClassUniversal {
		switch v.Tag {
		case asn1.TagUTF8String, asn1.TagPrintableString, asn1.TagIA5String, asn1.TagT61String, asn1.TagBMPString, 28 /* UniversalString */, 27 /* GeneralString */, 26 /* VisibleString */, 25 /* GraphicString */, 21 /* VideotexString */, 18 /* NumericString */, asn1.TagOctetString, asn1.TagBitString:
			if v.IsCompound {
				return on, errors.New("value is a constructed (BER) string; DER strings are primitive")
			}
		}
		switch v.Tag {
		case asn1.TagUTF8String:
			if !utf8.Valid(v.Bytes) {
				return on, errors.New("value is a UTF8String that is not valid UTF-8")
			}
		case asn1.TagIA5String, asn1.TagPrintableString:
			for _, c := range v.Bytes {
				if c >= utf8.RuneSelf {
					return on, errors.New("value is an IA5String or PrintableString holding a non-ASCII byte")
				}
			}
		}
	}
	return on, nil
}

// ParseGeneralNames reads a SEQUENCE OF GeneralName (a subjectAltName
// extension's value) with parseGeneralName's rules: exactly one DER
// SEQUENCE, no bytes after it, at least one entry. Errors name the entry
// (1-based) and its kind: `subjectAltName entry 2 (iPAddress): is encoded
// as constructed; ...`.
func ParseGeneralNames(der []byte) ([]GeneralName, error) {
	var seq asn1.RawValue
	rest, err := asn1.Unmarshal(der, &seq)
	if err != nil || seq.Class != asn1.ClassUniversal || seq.Tag != asn1.TagSequence || !seq.IsCompound {
		return nil, errors.New("the subjectAltName extension is not a valid SEQUENCE OF GeneralName")
	}
	if len(rest) != 0 {
		return nil, errors.New("the subjectAltName extension has bytes after its SEQUENCE")
	}
	var out []GeneralName
	for b := seq.Bytes; len(b) > 0; {
		var rv asn1.RawValue
		if b, err = asn1.Unmarshal(b, &rv); err != nil {
			return nil, fmt.Errorf("subjectAltName entry %d is not a valid DER value", len(out)+1)
		}
		g, err := parseGeneralName(rv, false)
		if err != nil {
			return nil, fmt.Errorf("subjectAltName entry %d (%s): %w", len(out)+1, GeneralNameKind(rv.Tag), err)
		}
		out = append(out, g)
	}
	if len(out) == 0 {
		return nil, errors.New("the subjectAltName extension is empty; it holds at least one name")
	}
	return out, nil
}

// SubjectAltName is a CSR's subjectAltName extension as read by
// CSRSubjectAltName.
type SubjectAltName struct {
	// Present is false when the CSR has no subjectAltName extension.
	Present  bool
	Critical bool
	Names    []GeneralName
}

// CSRSubjectAltName reads the subjectAltName extension of exts (a CSR's
// or certificate's extensions) with ParseGeneralNames; more than one
// subjectAltName extension is an error.
func CSRSubjectAltName(exts []pkix.Extension) (SubjectAltName, error) {
	var out SubjectAltName
	for _, ext := range exts {
		if !ext.Id.Equal(OIDExtensionSubjectAltName) {
			continue
		}
		if out.Present {
			return SubjectAltName{}, errors.New("the CSR carries more than one subjectAltName extension; at most one is allowed")
		}
		names, err := ParseGeneralNames(ext.Value)
		if err != nil {
			return SubjectAltName{}, err
		}
		out = SubjectAltName{Present: true, Critical: ext.Critical, Names: names}
	}
	return out, nil
}

// marshalGeneralName encodes g in DER.
func marshalGeneralName(g GeneralName) (asn1.RawValue, error) {
	switch g.Tag {
	case gnRFC822, gnDNS, gnURI:
		return contextValue(g.Tag, false, []byte(g.Text)), nil
	case gnIP:
		return contextValue(gnIP, false, append([]byte(nil), g.IP...)), nil
	case gnOtherName:
		oidDER, err := asn1.Marshal(g.OtherName.OID)
		if err != nil {
			return asn1.RawValue{}, err
		}
		v := g.OtherName.Value
		valDER, err := asn1.Marshal(asn1.RawValue{Class: v.Class, Tag: v.Tag, IsCompound: v.IsCompound, Bytes: v.Bytes})
		if err != nil {
			return asn1.RawValue{}, err
		}
		explicit, err := asn1.Marshal(contextValue(0, true, valDER))
		if err != nil {
			return asn1.RawValue{}, err
		}
		return contextValue(gnOtherName, true, append(oidDER, explicit...)), nil
	}
	return asn1.RawValue{}, fmt.Errorf("%s names are not signed", GeneralNameKind(g.Tag))
}

// MarshalGeneralNames encodes names, in order, as a DER SEQUENCE OF
// GeneralName (a subjectAltName extension's value). Only the kinds
// GeneralName.Signable reports can be encoded.
func MarshalGeneralNames(names []GeneralName) ([]byte, error) {
	seq := make([]asn1.RawValue, 0, len(names))
	for i, g := range names {
		rv, err := marshalGeneralName(g)
		if err != nil {
			return nil, fmt.Errorf("subjectAltName entry %d: %w", i+1, err)
		}
		seq = append(seq, rv)
	}
	return asn1.Marshal(seq)
}

// SANsOf groups parsed names by kind. An otherName whose value is not a
// UTF8String has UTF8Value "#" followed by the hex of its DER value (so it
// never equals a spec entry); kinds certfn does not sign are left out.
func SANsOf(names []GeneralName) SANs {
	var s SANs
	for _, g := range names {
		switch g.Tag {
		case gnDNS:
			s.DNSNames = append(s.DNSNames, g.Text)
		case gnRFC822:
			s.EmailAddresses = append(s.EmailAddresses, g.Text)
		case gnIP:
			s.IPAddresses = append(s.IPAddresses, net.IP(append([]byte(nil), g.IP...)))
		case gnURI:
			if u, err := url.Parse(g.Text); err == nil {
				s.URIs = append(s.URIs, u)
			}
		case gnOtherName:
			v, ok := g.OtherName.UTF8()
			if !ok {
				v = "#" + hex.EncodeToString(g.OtherName.Value.FullBytes)
			}
			s.OtherNames = append(s.OtherNames, api.OtherName{OID: g.OtherName.OID.String(), UTF8Value: v})
		}
	}
	return s
}

// parseNameConstraints reads a nameConstraints extension value (RFC 5280
// 4.2.1.10) into the spec form, with the GeneralName rules of
// parseGeneralName: at least one of permittedSubtrees [0] and
// excludedSubtrees [1], each non-empty; every subtree without minimum or
// maximum (RFC 5280: must be absent); bases of the kinds spec.nameConstraints
// holds (dNSName, iPAddress ranges, rfc822Name, URI domains). Errors name
// the rule.
func parseNameConstraints(der []byte, critical bool) (*api.NameConstraints, error) {
	var seq asn1.RawValue
	rest, err := asn1.Unmarshal(der, &seq)
	if err != nil || len(rest) != 0 || seq.Class != asn1.ClassUniversal || seq.Tag != asn1.TagSequence || !seq.IsCompound {
		return nil, errors.New("the nameConstraints extension is not one DER SEQUENCE")
	}
	nc := &api.NameConstraints{Critical: critical}
	last := -1
	for b := seq.Bytes; len(b) > 0; {
		var part asn1.RawValue
		if b, err = asn1.Unmarshal(b, &part); err != nil || part.Class != asn1.ClassContextSpecific || !part.IsCompound || part.Tag > 1 || part.Tag <= last {
			return nil, errors.New("the nameConstraints extension holds something other than permittedSubtrees [0] then excludedSubtrees [1]")
		}
		last = part.Tag
		item := &api.NameConstraintItem{}
		which := "permittedSubtrees"
		if part.Tag == 1 {
			which = "excludedSubtrees"
		}
		n := 0
		for sb := part.Bytes; len(sb) > 0; n++ {
			var subtree asn1.RawValue
			if sb, err = asn1.Unmarshal(sb, &subtree); err != nil || subtree.Class != asn1.ClassUniversal || subtree.Tag != asn1.TagSequence || !subtree.IsCompound {
				return nil, fmt.Errorf("nameConstraints %s entry %d is not a GeneralSubtree", which, n+1)
			}
			var base asn1.RawValue
			after, err := asn1.Unmarshal(subtree.Bytes, &base)
			if err != nil {
				return nil, fmt.Errorf("nameConstraints %s entry %d has no valid base", which, n+1)
			}
			if len(after) != 0 {
				return nil, fmt.Errorf("nameConstraints %s entry %d has a minimum or maximum, which RFC 5280 requires absent", which, n+1)
			}
			g, err := parseGeneralName(base, true)
			if err != nil {
				return nil, fmt.Errorf("nameConstraints %s entry %d (%s): %w", which, n+1, GeneralNameKind(base.Tag), err)
			}
			switch g.Tag {
			case gnDNS:
				item.DNSDomains = append(item.DNSDomains, g.Text)
			case gnRFC822:
				item.EmailAddresses = append(item.EmailAddresses, g.Text)
			case gnURI:
				item.URIDomains = append(item.URIDomains, g.Text)
			case gnIP:
				half := len(g.IP) / 2
				if half == net.IPv6len && net.IP(g.IP[:half]).To4() != nil {
					return nil, fmt.Errorf("nameConstraints %s entry %d is an IPv4-mapped IPv6 range; write it as an IPv4 range", which, n+1)
				}
				ones, _ := net.IPMask(g.IP[half:]).Size()
				item.IPRanges = append(item.IPRanges, (&net.IPNet{IP: net.IP(g.IP[:half]), Mask: net.CIDRMask(ones, 8*half)}).String())
			default:
				return nil, fmt.Errorf("nameConstraints %s entry %d is %s; certfn signs constraints on DNS names, IP ranges, e-mail addresses and URI domains only", which, n+1, aKind(GeneralNameKind(g.Tag)))
			}
		}
		if n == 0 {
			return nil, fmt.Errorf("nameConstraints %s is empty", which)
		}
		if part.Tag == 0 {
			nc.Permitted = item
		} else {
			nc.Excluded = item
		}
	}
	if nc.Permitted == nil && nc.Excluded == nil {
		return nil, errors.New("the nameConstraints extension is empty")
	}
	return nc, nil
}

// CheckRawSubject checks that raw, a subject Name, is in DER form with
// every attribute value a primitive universal string, and so is read by
// every parser as crypto/x509 reads it: it decodes as an RDNSequence of
// SETs of (OID, value) and encodes back to the same bytes.
func CheckRawSubject(raw []byte) error {
	var rdns []asn1.RawValue
	rest, err := asn1.Unmarshal(raw, &rdns)
	if err != nil || len(rest) != 0 {
		return errors.New("the subject is not one DER Name")
	}
	var body []byte
	for i, rdn := range rdns {
		if rdn.Class != asn1.ClassUniversal || rdn.Tag != asn1.TagSet || !rdn.IsCompound {
			return fmt.Errorf("subject RDN %d is not a SET", i+1)
		}
		var set []byte
		n := 0
		for b := rdn.Bytes; len(b) > 0; n++ {
			var atv struct {
				Type  asn1.ObjectIdentifier
				Value asn1.RawValue
			}
			if b, err = asn1.Unmarshal(b, &atv); err != nil {
				return fmt.Errorf("subject RDN %d holds an attribute that is not (type, value)", i+1)
			}
			if atv.Value.Class != asn1.ClassUniversal || atv.Value.IsCompound {
				return fmt.Errorf("subject attribute %s: its value is not a primitive universal type (a constructed or tagged value is refused)", atv.Type)
			}
			enc, err := asn1.Marshal(struct {
				Type  asn1.ObjectIdentifier
				Value asn1.RawValue
			}{atv.Type, asn1.RawValue{Class: asn1.ClassUniversal, Tag: atv.Value.Tag, Bytes: atv.Value.Bytes}})
			if err != nil {
				return fmt.Errorf("subject attribute %s: %w", atv.Type, err)
			}
			set = append(set, enc...)
		}
		if n == 0 {
			return fmt.Errorf("subject RDN %d is empty", i+1)
		}
		enc, err := asn1.Marshal(asn1.RawValue{Class: asn1.ClassUniversal, Tag: asn1.TagSet, IsCompound: true, Bytes: set})
		if err != nil {
			return err
		}
		body = append(body, enc...)
	}
	enc, err := asn1.Marshal(asn1.RawValue{Class: asn1.ClassUniversal, Tag: asn1.TagSequence, IsCompound: true, Bytes: body})
	if err != nil {
		return err
	}
	if !bytes.Equal(enc, raw) {
		return errors.New("the subject is not in DER form (it does not encode back to the same bytes)")
	}
	return nil
}

// checkSubjectStrings checks that crypto/x509 decoded every subject
// attribute value of csr as a string (the only values a policy judges).
func checkSubjectStrings(csr *x509.CertificateRequest) error {
	for _, atv := range csr.Subject.Names {
		if _, ok := atv.Value.(string); !ok {
			return fmt.Errorf("subject attribute %s uses an unsupported ASN.1 type or string encoding", atv.Type)
		}
	}
	return nil
}

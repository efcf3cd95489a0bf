package pki

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/certfn/certfn/core/api"
)

// Extension OIDs (RFC 5280 4.2.1).
var (
	OIDExtensionKeyUsage         = asn1.ObjectIdentifier{2, 5, 29, 15}
	OIDExtensionSubjectAltName   = asn1.ObjectIdentifier{2, 5, 29, 17}
	OIDExtensionBasicConstraints = asn1.ObjectIdentifier{2, 5, 29, 19}
	OIDExtensionNameConstraints  = asn1.ObjectIdentifier{2, 5, 29, 30}
	OIDExtensionExtendedKeyUsage = asn1.ObjectIdentifier{2, 5, 29, 37}
)

// GeneralName tags (RFC 5280 4.2.1.6), context-specific.
const (
	gnOtherName = 0
	gnRFC822    = 1
	gnDNS       = 2
	gnURI       = 6
	gnIP        = 7
)

// SANs is the full set of subject alternative names certfn handles,
// including otherNames, which crypto/x509 does not parse.
type SANs struct {
	DNSNames       []string
	EmailAddresses []string
	IPAddresses    []net.IP
	URIs           []*url.URL
	OtherNames     []api.OtherName
}

// Empty reports whether no name is set.
func (s SANs) Empty() bool {
	return len(s.DNSNames)+len(s.EmailAddresses)+len(s.IPAddresses)+len(s.URIs)+len(s.OtherNames) == 0
}

func ia5(field string, i int, v string) error {
	for j := 0; j < len(v); j++ {
		if v[j] >= utf8.RuneSelf {
			return fmt.Errorf("%s[%d]: %q contains non-ASCII characters, which a certificate cannot carry", field, i, v)
		}
	}
	return nil
}

func contextValue(tag int, compound bool, b []byte) asn1.RawValue {
	return asn1.RawValue{Class: asn1.ClassContextSpecific, Tag: tag, IsCompound: compound, Bytes: b}
}

// marshalOtherName encodes one otherName GeneralName with a UTF8String value:
// [0] { type-id OID, [0] EXPLICIT UTF8String } (cert-manager's encoding).
func marshalOtherName(oid asn1.ObjectIdentifier, value string) (asn1.RawValue, error) {
	oidDER, err := asn1.Marshal(oid)
	if err != nil {
		return asn1.RawValue{}, err
	}
	valDER, err := asn1.Marshal(asn1.RawValue{Class: asn1.ClassUniversal, Tag: asn1.TagUTF8String, Bytes: []byte(value)})
	if err != nil {
		return asn1.RawValue{}, err
	}
	explicit, err := asn1.Marshal(contextValue(0, true, valDER))
	if err != nil {
		return asn1.RawValue{}, err
	}
	return contextValue(gnOtherName, true, append(oidDER, explicit...)), nil
}

// MarshalSANs encodes the subjectAltName extension value. Names are written
// in the order DNS, email, IP, URI, otherName. Every otherName needs a
// dotted OID and a valid UTF-8 value.
func MarshalSANs(s SANs) ([]byte, error) {
	var names []asn1.RawValue
	for i, n := range s.DNSNames {
		if err := ia5("spec.dnsNames", i, n); err != nil {
			return nil, err
		}
		names = append(names, contextValue(gnDNS, false, []byte(n)))
	}
	for i, e := range s.EmailAddresses {
		if err := ia5("spec.emailAddresses", i, e); err != nil {
			return nil, err
		}
		names = append(names, contextValue(gnRFC822, false, []byte(e)))
	}
	for i, ip := range s.IPAddresses {
		b := ip.To4()
		if b == nil {
			b = ip.To16()
		}
		if b == nil {
			return nil, fmt.Errorf("spec.ipAddresses[%d]: not a valid IP address", i)
		}
		names = append(names, contextValue(gnIP, false, b))
	}
	for i, u := range s.URIs {
		if u == nil {
			return nil, fmt.Errorf("spec.uris[%d]: empty URI", i)
		}
		str := u.String()
		if err := ia5("spec.uris", i, str); err != nil {
			return nil, err
		}
		names = append(names, contextValue(gnURI, false, []byte(str)))
	}
	for i, on := range s.OtherNames {
		oid, err := parseOID(on.OID)
		if err != nil {
			return nil, fmt.Errorf("spec.otherNames[%d].oid: %q is %w", i, on.OID, err)
		}
		if !utf8.ValidString(on.UTF8Value) {
			return nil, fmt.Errorf("spec.otherNames[%d].utf8Value: not valid UTF-8", i)
		}
		rv, err := marshalOtherName(oid, on.UTF8Value)
		if err != nil {
			return nil, fmt.Errorf("spec.otherNames[%d]: encode: %w", i, err)
		}
		names = append(names, rv)
	}
	return asn1.Marshal(names)
}

// UnmarshalSANs decodes a subjectAltName extension value with
// ParseGeneralNames (every rule of the one GeneralName reader applies) and
// groups the names by kind (SANsOf: an otherName whose value is not a
// UTF8String is returned with UTF8Value "#" followed by the hex of its DER
// value, so it never equals a spec entry; x400Address, directoryName,
// ediPartyName and registeredID are left out).
func UnmarshalSANs(v []byte) (SANs, error) {
	names, err := ParseGeneralNames(v)
	if err != nil {
		return SANs{}, err
	}
	return SANsOf(names), nil
}

// findExtension returns the extension with id, or nil.
func findExtension(exts []pkix.Extension, id asn1.ObjectIdentifier) *pkix.Extension {
	for i := range exts {
		if exts[i].Id.Equal(id) {
			return &exts[i]
		}
	}
	return nil
}

// basicConstraints is RFC 5280's BasicConstraints; MaxPathLen -1 means absent.
type basicConstraints struct {
	IsCA       bool `asn1:"optional"`
	MaxPathLen int  `asn1:"optional,default:-1"`
}

// CSRExtensions is the parsed view of every extension a CSR carries:
// what approval judges and what a signer builds the certificate from
// (signers.TemplateFromRequest re-encodes each from this view and never
// copies a CSR's extension bytes).
type CSRExtensions struct {
	// KeyUsage is nil when the CSR has no keyUsage extension.
	KeyUsage *x509.KeyUsage
	// HasExtKeyUsage is true when the CSR has an extKeyUsage extension;
	// ExtKeyUsage and UnknownExtKeyUsage hold its content.
	HasExtKeyUsage     bool
	ExtKeyUsage        []x509.ExtKeyUsage
	UnknownExtKeyUsage []asn1.ObjectIdentifier
	// IsCA is nil when the CSR has no basicConstraints extension.
	IsCA *bool
	// SubjectAltName is the parsed subjectAltName extension
	// (CSRSubjectAltName), nil when the CSR has none.
	SubjectAltName *SubjectAltName
	// NameConstraints is the parsed nameConstraints extension (its
	// Critical from the extension), nil when the CSR has none.
	NameConstraints *api.NameConstraints
	// OtherNames are the otherName SANs (SANsOf).
	OtherNames []api.OtherName
	// Dropped lists the non-critical extensions of other types, which no
	// certificate certfn signs carries.
	Dropped []asn1.ObjectIdentifier
}

// ParseCSRExtensions reads every extension of csr, and checks its
// subject, with the rules a CA applies before signing:
//   - each extension type at most once;
//   - keyUsage, extKeyUsage and basicConstraints decode;
//   - subjectAltName: CSRSubjectAltName (the one GeneralName reader:
//     a GeneralName whose constructed bit is wrong for its kind, an
//     unknown tag or bytes after a value are refused);
//   - nameConstraints: parsed into the spec form (parseNameConstraints);
//   - any other extension: refused when critical (a CA cannot honour
//     what it does not understand), else listed in Dropped (not signed);
//   - the subject: DER (CheckRawSubject), every value decoded as a
//     string.
//
// Errors name the extension or attribute and the rule; callers prefix
// the field ("spec.request: ").
func ParseCSRExtensions(csr *x509.CertificateRequest) (CSRExtensions, error) {
	var out CSRExtensions
	if csr == nil {
		return out, errors.New("no certificate request")
	}
	if err := CheckRawSubject(csr.RawSubject); err != nil {
		return out, err
	}
	if err := checkSubjectStrings(csr); err != nil {
		return out, err
	}
	seen := map[string]bool{}
	for i := range csr.Extensions {
		ext := csr.Extensions[i]
		id := ext.Id.String()
		if seen[id] {
			return out, fmt.Errorf("the CSR carries more than one %s extension (%s); each extension is allowed once", extensionName(ext.Id), id)
		}
		seen[id] = true
		switch {
		case ext.Id.Equal(OIDExtensionKeyUsage):
			ku, err := unmarshalKeyUsage(ext.Value)
			if err != nil {
				return out, err
			}
			out.KeyUsage = &ku
		case ext.Id.Equal(OIDExtensionExtendedKeyUsage):
			known, unknown, err := unmarshalExtKeyUsage(ext.Value)
			if err != nil {
				return out, err
			}
			out.HasExtKeyUsage, out.ExtKeyUsage, out.UnknownExtKeyUsage = true, known, unknown
		case ext.Id.Equal(OIDExtensionBasicConstraints):
			var bc basicConstraints
			rest, err := asn1.Unmarshal(ext.Value, &bc)
			if err != nil || len(rest) != 0 {
				return out, errors.New("basicConstraints extension is not valid")
			}
			isCA := bc.IsCA
			out.IsCA = &isCA
		case ext.Id.Equal(OIDExtensionSubjectAltName):
			names, err := ParseGeneralNames(ext.Value)
			if err != nil {
				return out, err
			}
			out.SubjectAltName = &SubjectAltName{Present: true, Critical: ext.Critical, Names: names}
			out.OtherNames = SANsOf(names).OtherNames
		case ext.Id.Equal(OIDExtensionNameConstraints):
			nc, err := parseNameConstraints(ext.Value, ext.Critical)
			if err != nil {
				return out, err
			}
			out.NameConstraints = nc
		case ext.Critical:
			return out, fmt.Errorf("the CSR carries the critical extension %s, which certfn does not sign; remove it or mark it non-critical", id)
		default:
			out.Dropped = append(out.Dropped, ext.Id)
		}
	}
	return out, nil
}

func extensionName(id asn1.ObjectIdentifier) string {
	switch {
	case id.Equal(OIDExtensionKeyUsage):
		return "keyUsage"
	case id.Equal(OIDExtensionExtendedKeyUsage):
		return "extKeyUsage"
	case id.Equal(OIDExtensionBasicConstraints):
		return "basicConstraints"
	case id.Equal(OIDExtensionSubjectAltName):
		return "subjectAltName"
	case id.Equal(OIDExtensionNameConstraints):
		return "nameConstraints"
	}
	return "extension"
}

// MarshalNameConstraints encodes nc (RFC 5280 4.2.1.10) in DER; nil when
// nothing is constrained.
func MarshalNameConstraints(nc *api.NameConstraints) ([]byte, error) {
	return marshalNameConstraints(nc)
}

// otherNamesOf returns the otherName SANs of a certificate.
func otherNamesOf(exts []pkix.Extension) ([]api.OtherName, error) {
	ext := findExtension(exts, OIDExtensionSubjectAltName)
	if ext == nil {
		return nil, nil
	}
	sans, err := UnmarshalSANs(ext.Value)
	if err != nil {
		return nil, err
	}
	return sans.OtherNames, nil
}

// marshalNameConstraints encodes spec.nameConstraints (RFC 5280 4.2.1.10).
// It returns nil when nothing is constrained.
func marshalNameConstraints(nc *api.NameConstraints) ([]byte, error) {
	if nc == nil {
		return nil, nil
	}
	subtrees := func(field string, item *api.NameConstraintItem) ([]byte, error) {
		if item == nil {
			return nil, nil
		}
		var out []byte
		add := func(gn asn1.RawValue) error {
			b, err := asn1.Marshal(struct{ Base asn1.RawValue }{gn})
			out = append(out, b...)
			return err
		}
		for i, d := range item.DNSDomains {
			if err := ia5(field+".dnsDomains", i, d); err != nil {
				return nil, err
			}
			if err := add(contextValue(gnDNS, false, []byte(d))); err != nil {
				return nil, err
			}
		}
		for i, r := range item.IPRanges {
			_, ipnet, err := net.ParseCIDR(r)
			if err != nil {
				return nil, fmt.Errorf("%s.ipRanges[%d]: %q is not a CIDR range", field, i, r)
			}
			ip := ipnet.IP
			if ip4 := ip.To4(); ip4 != nil && len(ipnet.Mask) == net.IPv4len {
				ip = ip4
			}
			if err := add(contextValue(gnIP, false, append(append([]byte(nil), ip...), ipnet.Mask...))); err != nil {
				return nil, err
			}
		}
		for i, e := range item.EmailAddresses {
			if err := ia5(field+".emailAddresses", i, e); err != nil {
				return nil, err
			}
			if err := add(contextValue(gnRFC822, false, []byte(e))); err != nil {
				return nil, err
			}
		}
		for i, u := range item.URIDomains {
			if err := ia5(field+".uriDomains", i, u); err != nil {
				return nil, err
			}
			if err := add(contextValue(gnURI, false, []byte(u))); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	permitted, err := subtrees("spec.nameConstraints.permitted", nc.Permitted)
	if err != nil {
		return nil, err
	}
	excluded, err := subtrees("spec.nameConstraints.excluded", nc.Excluded)
	if err != nil {
		return nil, err
	}
	if len(permitted) == 0 && len(excluded) == 0 {
		return nil, nil
	}
	var body []byte
	if len(permitted) > 0 {
		b, err := asn1.Marshal(contextValue(0, true, permitted))
		if err != nil {
			return nil, err
		}
		body = append(body, b...)
	}
	if len(excluded) > 0 {
		b, err := asn1.Marshal(contextValue(1, true, excluded))
		if err != nil {
			return nil, err
		}
		body = append(body, b...)
	}
	return asn1.Marshal(asn1.RawValue{Class: asn1.ClassUniversal, Tag: asn1.TagSequence, IsCompound: true, Bytes: body})
}

// sansOfSpec parses the SAN fields of a spec, with field-path errors.
func sansOfSpec(spec *api.CertificateSpec) (SANs, error) {
	out := SANs{DNSNames: spec.DNSNames, EmailAddresses: spec.EmailAddresses, OtherNames: spec.OtherNames}
	for i, s := range spec.IPAddresses {
		ip := net.ParseIP(strings.TrimSpace(s))
		if ip == nil {
			return out, fmt.Errorf("spec.ipAddresses[%d]: %q is not a valid IP address", i, s)
		}
		out.IPAddresses = append(out.IPAddresses, ip)
	}
	for i, s := range spec.URIs {
		u, err := url.Parse(s)
		if err != nil || s == "" {
			return out, fmt.Errorf("spec.uris[%d]: %q is not a valid URI", i, s)
		}
		out.URIs = append(out.URIs, u)
	}
	return out, nil
}

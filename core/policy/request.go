package policy

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"encoding/asn1"
	"fmt"
	"time"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/rbac"
)

// Request is the view of one CertificateRequest that policies and plugins
// judge. It is built once per evaluation (the CSR is parsed once, not per
// policy) and must not be modified by plugins.
type Request struct {
	// CR is the request; CSR its parsed spec.request.
	CR  *api.CertificateRequest
	CSR *x509.CertificateRequest
	// Identity is the requester recorded on the request (spec.username,
	// uid, groups, extra; seed 004).
	Identity rbac.Identity
	// NamespaceLabels are the labels of the request's Namespace.
	NamespaceLabels map[string]string

	// CommonNames lists every common name in the CSR subject (normally
	// zero or one; a subject repeating CN has each value checked).
	CommonNames    []string
	DNSNames       []string
	IPAddresses    []string // canonical text form (net.IP.String)
	URIs           []string
	EmailAddresses []string
	// Duration is the requested lifetime: spec.duration, else
	// spec.expirationSeconds (seed 003); nil when neither is set.
	Duration *time.Duration
	// KeyAlgorithm and KeySize describe the CSR's public key: RSA modulus
	// bits, ECDSA curve bits; Ed25519 has size 0.
	KeyAlgorithm api.PrivateKeyAlgorithm
	KeySize      int

	attrs   [numAttrs][]string
	present attrMask // attributes with at least one value
	// classes[a] is the classes every value of attribute a belongs to
	// (classAll for attributes wildcards are not restricted on).
	classes     [numAttrs]charClass
	usages      []string
	unsupported []string // request contents no policy can allow
	celVals     [numAttrs][]ref.Val
	act         activation
}

// Subject attribute OIDs with an allowed.* field.
var (
	oidCommonName         = asn1.ObjectIdentifier{2, 5, 4, 3}
	oidSerialNumber       = asn1.ObjectIdentifier{2, 5, 4, 5}
	oidCountry            = asn1.ObjectIdentifier{2, 5, 4, 6}
	oidLocality           = asn1.ObjectIdentifier{2, 5, 4, 7}
	oidProvince           = asn1.ObjectIdentifier{2, 5, 4, 8}
	oidStreetAddress      = asn1.ObjectIdentifier{2, 5, 4, 9}
	oidOrganization       = asn1.ObjectIdentifier{2, 5, 4, 10}
	oidOrganizationalUnit = asn1.ObjectIdentifier{2, 5, 4, 11}
	oidPostalCode         = asn1.ObjectIdentifier{2, 5, 4, 17}
	oidSubjectAltName     = asn1.ObjectIdentifier{2, 5, 29, 17}
)

var subjectAttrs = []struct {
	oid  asn1.ObjectIdentifier
	attr attr
}{
	{oidCommonName, attrCommonName},
	{oidSerialNumber, attrSerialNumber},
	{oidCountry, attrCountries},
	{oidLocality, attrLocalities},
	{oidProvince, attrProvinces},
	{oidStreetAddress, attrStreetAddresses},
	{oidOrganization, attrOrganizations},
	{oidOrganizationalUnit, attrOrganizationalUnits},
	{oidPostalCode, attrPostalCodes},
}

// newRequest builds the view of cr with its parsed csr.
func newRequest(cr *api.CertificateRequest, csr *x509.CertificateRequest, nsLabels map[string]string) *Request {
	r := &Request{
		CR:              cr,
		CSR:             csr,
		Identity:        identityOf(cr),
		NamespaceLabels: nsLabels,
		DNSNames:        csr.DNSNames,
		EmailAddresses:  csr.EmailAddresses,
	}
	// Subject: read every attribute (pkix.Name keeps only the last CN).
	for _, atv := range csr.Subject.Names {
		a, known := subjectAttr(atv.Type)
		s, isString := atv.Value.(string)
		switch {
		case !known:
			r.unsupported = append(r.unsupported, fmt.Sprintf("spec.allowed.subject: the CSR subject carries attribute %s, which no policy field allows", atv.Type))
		case !isString:
			r.unsupported = append(r.unsupported, fmt.Sprintf("spec.allowed.subject: the CSR subject attribute %s is not a string", atv.Type))
		default:
			r.attrs[a] = append(r.attrs[a], s)
		}
	}
	r.CommonNames = r.attrs[attrCommonName]
	for _, ip := range csr.IPAddresses {
		r.IPAddresses = append(r.IPAddresses, ip.String())
	}
	for _, u := range csr.URIs {
		r.URIs = append(r.URIs, u.String())
	}
	r.attrs[attrDNSNames] = r.DNSNames
	r.attrs[attrIPAddresses] = r.IPAddresses
	r.attrs[attrURIs] = r.URIs
	r.attrs[attrEmailAddresses] = r.EmailAddresses
	for a := range r.attrs {
		if len(r.attrs[a]) > 0 {
			r.present |= 1 << a
		}
		r.classes[a] = classAll
	}
	for _, a := range [...]attr{attrCommonName, attrDNSNames, attrURIs, attrEmailAddresses} {
		for _, v := range r.attrs[a] {
			r.classes[a] &= classOf(v)
		}
	}
	r.unsupported = append(r.unsupported, unsupportedSANs(csr)...)
	for _, u := range cr.Spec.Usages {
		r.usages = append(r.usages, string(u))
	}
	switch {
	case cr.Spec.Duration != nil:
		d := cr.Spec.Duration.Duration
		r.Duration = &d
	case cr.Spec.ExpirationSeconds != nil:
		d := time.Duration(*cr.Spec.ExpirationSeconds) * time.Second
		r.Duration = &d
	}
	switch k := csr.PublicKey.(type) {
	case *rsa.PublicKey:
		r.KeyAlgorithm, r.KeySize = api.RSAKeyAlgorithm, k.N.BitLen()
	case *ecdsa.PublicKey:
		r.KeyAlgorithm, r.KeySize = api.ECDSAKeyAlgorithm, k.Curve.Params().BitSize
	case ed25519.PublicKey:
		r.KeyAlgorithm = api.Ed25519KeyAlgorithm
	}
	return r
}

func subjectAttr(oid asn1.ObjectIdentifier) (attr, bool) {
	for _, s := range subjectAttrs {
		if s.oid.Equal(oid) {
			return s.attr, true
		}
	}
	return 0, false
}

// unsupportedSANs reports subjectAltName entries other than DNS names, IP
// addresses, URIs and e-mail addresses (otherName, directoryName, ...):
// crypto/x509 skips them, no policy field can allow them, and a signer
// copying the extension would issue them, so they fail every policy.
func unsupportedSANs(csr *x509.CertificateRequest) []string {
	var out []string
	for _, ext := range csr.Extensions {
		if !ext.Id.Equal(oidSubjectAltName) {
			continue
		}
		var seq asn1.RawValue
		if rest, err := asn1.Unmarshal(ext.Value, &seq); err != nil || len(rest) > 0 || seq.Tag != asn1.TagSequence {
			return append(out, "spec.allowed: the CSR's subjectAltName extension is malformed")
		}
		for b := seq.Bytes; len(b) > 0; {
			var gn asn1.RawValue
			var err error
			if b, err = asn1.Unmarshal(b, &gn); err != nil {
				return append(out, "spec.allowed: the CSR's subjectAltName extension is malformed")
			}
			switch {
			case gn.Class != asn1.ClassContextSpecific:
				out = append(out, "spec.allowed: the CSR's subjectAltName extension is malformed")
			case gn.Tag == 1 || gn.Tag == 2 || gn.Tag == 6 || gn.Tag == 7: // email, DNS, URI, IP
			default:
				n := sanTagName(gn.Tag)
				out = append(out, fmt.Sprintf("spec.allowed: the CSR carries %s %s subjectAltName, which no policy field allows", article(n), n))
			}
		}
	}
	return out
}

func sanTagName(tag int) string {
	switch tag {
	case 0:
		return "otherName"
	case 3:
		return "x400Address"
	case 4:
		return "directoryName"
	case 5:
		return "ediPartyName"
	case 8:
		return "registeredID"
	}
	return fmt.Sprintf("[%d]", tag)
}

func identityOf(cr *api.CertificateRequest) rbac.Identity {
	return rbac.Identity{Username: cr.Spec.Username, UID: cr.Spec.UID, Groups: cr.Spec.Groups, Extra: cr.Spec.Extra}
}

// celActivation returns the activation for validation rules, building the
// `cr` value on first use.
func (r *Request) celActivation() (*activation, error) {
	if r.act.cr == nil {
		env, err := celEnv()
		if err != nil {
			return nil, err
		}
		r.act.cr = newCRValue(env.CELTypeAdapter(), r.CR.Namespace, r.CR.Name, identityFields{
			username: r.Identity.Username, uid: r.Identity.UID, groups: r.Identity.Groups, extra: r.Identity.Extra})
	}
	return &r.act, nil
}

// celValues returns the values of attribute a as CEL strings, converted
// once per evaluation.
func (r *Request) celValues(a attr) []ref.Val {
	if r.celVals[a] == nil {
		vals := r.attrs[a]
		out := make([]ref.Val, len(vals))
		for i, v := range vals {
			out[i] = types.String(v)
		}
		r.celVals[a] = out
	}
	return r.celVals[a]
}

package policy

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"encoding/asn1"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/pki"
	"github.com/certfn/certfn/core/rbac"
)

// Request is the view of one CertificateRequest that policies and plugins
// judge. It is built once per evaluation (the CSR is parsed once, not per
// policy), must not be modified by plugins, and is reused by later
// evaluations once this one returns (a pool), so nothing may keep it.
type Request struct {
	// CR is the request; CSR its parsed spec.request.
	CR  *api.CertificateRequest
	CSR *x509.CertificateRequest
	// Identity is the requester recorded on the request (spec.username,
	// uid, groups, extra; docs/design/certificates-api.md).
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
	// spec.expirationSeconds (docs/design/request-duration.md); nil when neither is set.
	Duration *time.Duration
	// KeyAlgorithm and KeySize describe the CSR's public key: RSA modulus
	// bits, ECDSA curve bits; Ed25519 has size 0.
	KeyAlgorithm api.PrivateKeyAlgorithm
	KeySize      int

	attrs   [numAttrs][]string
	present attrMask // attributes with at least one value
	// classes[a] is the classes every value of attribute a belongs to
	// (classAll for attributes wildcards are not restricted on).
	classes [numAttrs]charClass
	usages  []string
	// otherNames are the otherName SANs and otherAttrs the subject
	// attributes of OIDs without a named field (their string values),
	// grouped by OID in the order the OIDs first appear.
	otherNames, otherAttrs []oidValues
	// What no policy can allow, each message starting with the path it
	// is reported under: replacedCN and replacedSerial replace the
	// evaluation of commonName and serialNumber (a value that is not a
	// string, see replaced); sanRejects are subjectAltName entries
	// (reported with otherNames), subjectRejects other subject values that
	// are not strings (reported with otherAttributes).
	replacedCN, replacedSerial string
	sanRejects, subjectRejects []string
	celVals                    [numAttrs][]ref.Val
	celDone                    attrMask // attributes whose celVals are converted
	// failed lists the applicable policies that failed their quick review
	// (Evaluator.evaluate), for a Denied decision's message.
	failed []*Compiled
	act    activation
	crv    crValue // the value of act.cr
	// cand and tmp are the scratch sets of listIndex.candidates.
	cand, tmp policySet
}

// oidValues is the values a request carries for one OID.
type oidValues struct {
	oid  string
	vals []string
}

// rejected reports request contents no policy can allow.
func (r *Request) rejected() bool {
	return len(r.sanRejects)+len(r.subjectRejects) > 0 || r.replacedCN != "" || r.replacedSerial != ""
}

// replaced returns the message replacing the evaluation of attribute a's
// field, or "".
func (r *Request) replaced(a attr) string {
	switch a {
	case attrCommonName:
		return r.replacedCN
	case attrSerialNumber:
		return r.replacedSerial
	}
	return ""
}

// addOID appends v (omitted when it is not a string) to the values of oid
// in l.
func addOID(l []oidValues, oid string, v string, isString bool) []oidValues {
	for i := range l {
		if l[i].oid == oid {
			if isString {
				l[i].vals = append(l[i].vals, v)
			}
			return l
		}
	}
	e := oidValues{oid: oid}
	if isString {
		e.vals = []string{v}
	}
	return append(l, e)
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
	r := requestPool.Get().(*Request)
	r.CR, r.CSR = cr, csr
	r.Identity = identityOf(cr)
	r.NamespaceLabels = nsLabels
	// Subject: read every attribute (pkix.Name keeps only the last CN).
	for _, atv := range csr.Subject.Names {
		a, named := subjectAttr(atv.Type)
		s, isString := atv.Value.(string)
		switch {
		case named && isString:
			if (a == attrCommonName || a == attrSerialNumber) && s == "" {
				continue // an empty commonName or serialNumber is no value
			}
			r.attrs[a] = append(r.attrs[a], s)
		case named && (a == attrCommonName || a == attrSerialNumber):
			msg := fmt.Sprintf("%s: subject attribute %s uses an unsupported ASN.1 type or string encoding; re-issue the certificate with a UTF8String or PrintableString subject", namedPath(a), atv.Type)
			if a == attrCommonName {
				r.replacedCN = msg
			} else {
				r.replacedSerial = msg
			}
		case named:
			r.subjectRejects = append(r.subjectRejects, fmt.Sprintf("%s: subject attribute %s uses an unsupported ASN.1 type or string encoding; re-issue the certificate with a UTF8String or PrintableString subject", namedPath(a), atv.Type))
		default:
			oid := atv.Type.String()
			if !isString {
				r.subjectRejects = append(r.subjectRejects, fmt.Sprintf("spec.allowed.subject.otherAttributes[%s]: subject attribute uses an unsupported ASN.1 type or string encoding; re-issue the certificate with a UTF8String or PrintableString subject", oid))
			}
			r.otherAttrs = addOID(r.otherAttrs, oid, s, isString)
		}
	}
	r.CommonNames = r.attrs[attrCommonName]
	r.readSANs(csr)
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

// namedPath is the path of the allowed field of a named subject
// attribute.
func namedPath(a attr) string {
	switch a {
	case attrCommonName:
		return "spec.allowed.commonName"
	case attrSerialNumber:
		return "spec.allowed.subject.serialNumber"
	case attrCountries:
		return "spec.allowed.subject.countries"
	case attrLocalities:
		return "spec.allowed.subject.localities"
	case attrProvinces:
		return "spec.allowed.subject.provinces"
	case attrStreetAddresses:
		return "spec.allowed.subject.streetAddresses"
	case attrOrganizations:
		return "spec.allowed.subject.organizations"
	case attrOrganizationalUnits:
		return "spec.allowed.subject.organizationalUnits"
	case attrPostalCodes:
		return "spec.allowed.subject.postalCodes"
	}
	return "spec.allowed.subject"
}

// namedSubjectOID reports an OID with a named subject field (or
// commonName).
func namedSubjectOID(oid asn1.ObjectIdentifier) bool {
	_, ok := subjectAttr(oid)
	return ok
}

const sanPath = "spec.allowed.subjectAltName"

// readSANs reads the subjectAltName extension with the reader the name
// checks and the signers use (pki.CSRSubjectAltName), so the names judged
// are the names signed: DNS names, e-mail addresses, IP addresses
// (net.IP.String), URIs, each otherName (by OID, its value as text or
// hex, as approver-policy renders it) and the kinds no policy can allow
// (directoryName, x400Address, ediPartyName, registeredID). A CSR whose
// subjectAltName the reader refuses (a GeneralName whose constructed bit
// is wrong for its kind, an unknown tag, bytes after a value, more than
// one subjectAltName extension) fails every policy.
func (r *Request) readSANs(csr *x509.CertificateRequest) {
	san, err := pki.CSRSubjectAltName(csr.Extensions)
	if err != nil {
		r.sanRejects = append(r.sanRejects, fmt.Sprintf("%s: the CSR's subjectAltName extension could not be decoded (spec.request: %v)", sanPath, err))
		return
	}
	for _, g := range san.Names {
		switch g.Tag {
		case 1:
			r.EmailAddresses = append(r.EmailAddresses, g.Text)
		case 2:
			r.DNSNames = append(r.DNSNames, g.Text)
		case 6:
			r.URIs = append(r.URIs, g.Text)
		case 7:
			r.IPAddresses = append(r.IPAddresses, net.IP(g.IP).String())
		case 0:
			r.otherNames = addOID(r.otherNames, g.OtherName.OID.String(), g.OtherName.Text(), true)
		default:
			k := sanTagName(g.Tag)
			r.sanRejects = append(r.sanRejects, fmt.Sprintf("%s.%s: %s SAN entries are not permitted", sanPath, k, k))
		}
	}
}

func sanTagName(tag int) string {
	switch tag {
	case 3:
		return "x400Address"
	case 4:
		return "directoryName"
	case 5:
		return "ediPartyName"
	case 8:
		return "registeredID"
	}
	return fmt.Sprintf("generalName[%d]", tag)
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
		id := identityFields{username: r.Identity.Username, uid: r.Identity.UID, groups: r.Identity.Groups, extra: r.Identity.Extra}
		r.crv.set(env.CELTypeAdapter(), r.CR.Namespace, r.CR.Name, id)
		r.act.cr = &r.crv
		r.act.crBounded = id.withinEstimate(r.CR.Namespace, r.CR.Name)
	}
	return &r.act, nil
}

// withinEstimate reports whether the request's fields are within the
// sizes the static cost estimate of rules assumes (celSizes).
func (id identityFields) withinEstimate(namespace, name string) bool {
	if len(namespace) > 63 || len(name) > 253 || len(id.username) > celMaxString || len(id.uid) > celMaxString ||
		len(id.groups) > celMaxList || len(id.extra) > celMaxList {
		return false
	}
	for _, g := range id.groups {
		if len(g) > celMaxString {
			return false
		}
	}
	for k, vs := range id.extra {
		if len(k) > celMaxString || len(vs) > celMaxList {
			return false
		}
		for _, v := range vs {
			if len(v) > celMaxString {
				return false
			}
		}
	}
	return true
}

// celValues returns the values of attribute a as CEL strings, converted
// once per evaluation.
func (r *Request) celValues(a attr) []ref.Val {
	if r.celDone&(1<<a) == 0 {
		out := r.celVals[a][:0]
		for _, v := range r.attrs[a] {
			out = append(out, types.String(v))
		}
		r.celVals[a] = out
		r.celDone |= 1 << a
	}
	return r.celVals[a]
}

// requestPool recycles Request views: an approval drops its view before
// Evaluate returns, so the approve path reuses the view and its slices
// instead of allocating them for every request.
var requestPool = sync.Pool{New: func() any { return new(Request) }}

// release returns r to the pool. r must not be used afterwards (a Denied
// decision keeps its view, which is then never released).
func (r *Request) release() {
	keep := Request{
		DNSNames:       r.DNSNames[:0],
		EmailAddresses: r.EmailAddresses[:0],
		IPAddresses:    r.IPAddresses[:0],
		URIs:           r.URIs[:0],
		usages:         r.usages[:0],
		otherNames:     r.otherNames[:0],
		otherAttrs:     r.otherAttrs[:0],
		sanRejects:     r.sanRejects[:0],
		subjectRejects: r.subjectRejects[:0],
		failed:         r.failed[:0],
		cand:           r.cand[:0],
		tmp:            r.tmp[:0],
	}
	for a := range r.attrs {
		if a != int(attrDNSNames) && a != int(attrIPAddresses) && a != int(attrURIs) && a != int(attrEmailAddresses) {
			keep.attrs[a] = r.attrs[a][:0]
		}
		keep.celVals[a] = r.celVals[a][:0]
	}
	*r = keep
	requestPool.Put(r)
}

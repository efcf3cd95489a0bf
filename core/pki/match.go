package pki

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"net"
	"slices"
	"time"

	"github.com/certfn/certfn/core/api"
)

// DefaultCertificateDuration is api.DefaultCertificateDuration (90 days).
const DefaultCertificateDuration = api.DefaultCertificateDuration

// SpecDuration returns spec.duration, or DefaultCertificateDuration when it
// is unset or not positive.
func SpecDuration(spec *api.CertificateSpec) time.Duration {
	if spec == nil || spec.Duration == nil || spec.Duration.Duration <= 0 {
		return api.DefaultCertificateDuration
	}
	return spec.DurationOrDefault()
}

// RequestedDuration returns the lifetime a CertificateRequest asks for
// (docs/design/request-duration.md): spec.duration when set, else spec.expirationSeconds, else
// DefaultCertificateDuration. A zero or negative value is an error naming
// the field.
func RequestedDuration(spec *api.CertificateRequestSpec) (time.Duration, error) {
	if spec == nil {
		return 0, errors.New("no request spec")
	}
	d, ok := spec.RequestedDuration()
	switch {
	case !ok:
		return api.DefaultCertificateDuration, nil
	case d <= 0 && spec.Duration != nil:
		return 0, fmt.Errorf("spec.duration: %s is not positive", d)
	case d <= 0:
		return 0, fmt.Errorf("spec.expirationSeconds: %s is not positive", d)
	}
	return d, nil
}

// sameStrings compares two string lists as multisets (order ignored).
func sameStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func ipStrings(ips []net.IP) []string {
	out := make([]string, len(ips))
	for i, ip := range ips {
		out[i] = ip.String()
	}
	return out
}

func otherNameStrings(ons []api.OtherName) []string {
	out := make([]string, len(ons))
	for i, on := range ons {
		out[i] = on.OID + "=" + on.UTF8Value
	}
	return out
}

func uriStrings(s SANs) []string {
	out := make([]string, len(s.URIs))
	for i, u := range s.URIs {
		out[i] = u.String()
	}
	return out
}

func issuerKind(ref api.IssuerReference) string {
	if ref.Kind == "" {
		return api.KindIssuer
	}
	return ref.Kind
}

func issuerGroup(ref api.IssuerReference) string {
	if ref.Group == "" {
		return api.CertManagerGroup
	}
	return ref.Group
}

// RequestMatchesSpec compares a CertificateRequest with the Certificate spec
// it should have been made for (docs/design/certificate-controllers.md: "verify the CSR options match what
// is requested in certificate.spec") and returns the spec fields that do not
// match, empty when it matches:
//
//	spec.commonName, spec.subject.{organizations,countries,organizationalUnits,
//	localities,provinces,streetAddresses,postalCodes,serialNumber} (or
//	spec.literalSubject), spec.dnsNames, spec.ipAddresses, spec.uris,
//	spec.emailAddresses, spec.otherNames, spec.isCA, spec.usages,
//	spec.encodeUsagesInRequest, spec.duration, spec.issuerRef.{name,kind,group},
//	spec.privateKey.algorithm, spec.privateKey.size
//
// Lists compare as sets; usages compare by meaning ("signing" is "digital
// signature", no usages means the defaults); durations and issuerRef compare
// with their defaults applied (90 days; kind Issuer, group cert-manager.io).
// An error means the request's CSR or the spec could not be decoded.
func RequestMatchesSpec(cr *api.CertificateRequest, spec *api.CertificateSpec) ([]string, error) {
	if cr == nil || spec == nil {
		return nil, errors.New("request matches spec: nil request or spec")
	}
	csr, err := ParseCSRPEM(cr.Spec.Request)
	if err != nil {
		return nil, fmt.Errorf("spec.request: %w", err)
	}
	exts, err := ParseCSRExtensions(csr)
	if err != nil {
		return nil, fmt.Errorf("spec.request: %w", err)
	}
	want, err := sansOfSpec(spec)
	if err != nil {
		return nil, err
	}
	var v []string
	add := func(ok bool, field string) {
		if !ok {
			v = append(v, field)
		}
	}

	if spec.LiteralSubject == "" {
		sub := spec.Subject
		if sub == nil {
			sub = &api.X509Subject{}
		}
		n := csr.Subject
		add(n.CommonName == spec.CommonName, "spec.commonName")
		add(sameStrings(n.Organization, sub.Organizations), "spec.subject.organizations")
		add(sameStrings(n.Country, sub.Countries), "spec.subject.countries")
		add(sameStrings(n.OrganizationalUnit, sub.OrganizationalUnits), "spec.subject.organizationalUnits")
		add(sameStrings(n.Locality, sub.Localities), "spec.subject.localities")
		add(sameStrings(n.Province, sub.Provinces), "spec.subject.provinces")
		add(sameStrings(n.StreetAddress, sub.StreetAddresses), "spec.subject.streetAddresses")
		add(sameStrings(n.PostalCode, sub.PostalCodes), "spec.subject.postalCodes")
		add(n.SerialNumber == sub.SerialNumber, "spec.subject.serialNumber")
	} else {
		_, raw, err := subjectOfSpec(spec)
		if err != nil {
			return nil, err
		}
		wantSub, err := canonicalSubject(raw)
		if err != nil {
			return nil, fmt.Errorf("spec.literalSubject: %w", err)
		}
		haveSub, err := canonicalSubject(csr.RawSubject)
		if err != nil {
			return nil, fmt.Errorf("spec.request: %w", err)
		}
		add(wantSub == haveSub, "spec.literalSubject")
	}

	add(sameStrings(csr.DNSNames, spec.DNSNames), "spec.dnsNames")
	add(sameStrings(ipStrings(csr.IPAddresses), ipStrings(want.IPAddresses)), "spec.ipAddresses")
	add(sameStrings(uriStrings(SANs{URIs: csr.URIs}), uriStrings(want)), "spec.uris")
	add(sameStrings(csr.EmailAddresses, spec.EmailAddresses), "spec.emailAddresses")
	add(sameStrings(otherNameStrings(exts.OtherNames), otherNameStrings(spec.OtherNames)), "spec.otherNames")

	isCAOK := cr.Spec.IsCA == spec.IsCA && (exts.IsCA == nil || *exts.IsCA == spec.IsCA)
	add(isCAOK, "spec.isCA")
	usagesOK := SameUsages(cr.Spec.Usages, spec.Usages)
	encode := spec.EncodeUsagesInRequest == nil || *spec.EncodeUsagesInRequest
	if exts.KeyUsage != nil || exts.HasExtKeyUsage {
		if ku, eku, err := KeyUsages(spec.Usages, spec.IsCA); err == nil {
			var haveKU x509.KeyUsage
			if exts.KeyUsage != nil {
				haveKU = *exts.KeyUsage
			}
			usagesOK = usagesOK && haveKU == ku && sameExtKeyUsages(exts.ExtKeyUsage, eku) && len(exts.UnknownExtKeyUsage) == 0
		}
	}
	add(usagesOK, "spec.usages")
	add(encode == (exts.KeyUsage != nil || exts.HasExtKeyUsage), "spec.encodeUsagesInRequest")

	reqDur, err := RequestedDuration(&cr.Spec)
	add(err == nil && reqDur == SpecDuration(spec), "spec.duration")

	add(cr.Spec.IssuerRef.Name == spec.IssuerRef.Name, "spec.issuerRef.name")
	add(issuerKind(cr.Spec.IssuerRef) == issuerKind(spec.IssuerRef), "spec.issuerRef.kind")
	add(issuerGroup(cr.Spec.IssuerRef) == issuerGroup(spec.IssuerRef), "spec.issuerRef.group")

	if field, _ := publicKeyMismatch(csr.PublicKey, spec.PrivateKey); field != "" {
		v = append(v, field)
	}
	return v, nil
}

// commonNameOfSpec returns spec.commonName, or the first CN attribute of
// spec.literalSubject.
func commonNameOfSpec(spec *api.CertificateSpec) string {
	if spec.LiteralSubject == "" {
		return spec.CommonName
	}
	seq, err := ParseLiteralSubject(spec.LiteralSubject)
	if err != nil {
		return ""
	}
	var n pkix.Name
	n.FillFromRDNSequence(&seq)
	return n.CommonName
}

// CertificateMatchesSpec is the trigger's fallback when no request exists
// for the current revision (docs/design/certificate-controllers.md; cert-manager's
// SecretDataAltNamesMatchSpec plus its private key checks). It compares only
// what issuers do not legitimately change: the names and the key. The
// commonName and dnsNames are compared loosely, allowing a name to move
// between the two (CAs promote DNS names to the CN and back). It returns the
// mismatching spec fields: spec.commonName, spec.dnsNames, spec.ipAddresses,
// spec.uris, spec.emailAddresses, spec.otherNames, spec.privateKey.algorithm,
// spec.privateKey.size. Duration, usages, subject and isCA are never flagged.
// A nil cert yields ["certificate"]; an unparseable spec field is reported
// as a mismatch of that field.
func CertificateMatchesSpec(cert *x509.Certificate, spec *api.CertificateSpec) []string {
	if cert == nil || spec == nil {
		return []string{"certificate"}
	}
	var v []string
	wantCN := commonNameOfSpec(spec)
	expected := map[string]bool{}
	for _, d := range spec.DNSNames {
		expected[d] = true
	}
	if wantCN != "" {
		expected[wantCN] = true
	}
	actual := map[string]bool{}
	for _, d := range cert.DNSNames {
		actual[d] = true
	}
	if cert.Subject.CommonName != "" {
		actual[cert.Subject.CommonName] = true
	}
	if !sameSet(expected, actual) {
		if (wantCN != "" && !actual[wantCN]) || (cert.Subject.CommonName != "" && !expected[cert.Subject.CommonName]) {
			v = append(v, "spec.commonName")
		}
		dnsOK := true
		for _, d := range spec.DNSNames {
			dnsOK = dnsOK && actual[d]
		}
		for _, d := range cert.DNSNames {
			dnsOK = dnsOK && expected[d]
		}
		if !dnsOK {
			v = append(v, "spec.dnsNames")
		}
	}
	want, err := sansOfSpec(spec)
	if err != nil {
		// An unparseable IP or URI in the spec can never match.
		v = append(v, "spec.ipAddresses", "spec.uris")
	} else {
		if !sameStrings(ipStrings(cert.IPAddresses), ipStrings(want.IPAddresses)) {
			v = append(v, "spec.ipAddresses")
		}
		if !sameStrings(uriStrings(SANs{URIs: cert.URIs}), uriStrings(want)) {
			v = append(v, "spec.uris")
		}
	}
	if !sameStrings(cert.EmailAddresses, spec.EmailAddresses) {
		v = append(v, "spec.emailAddresses")
	}
	ons, err := otherNamesOf(cert.Extensions)
	if err != nil || !sameStrings(otherNameStrings(ons), otherNameStrings(spec.OtherNames)) {
		v = append(v, "spec.otherNames")
	}
	if field, _ := publicKeyMismatch(cert.PublicKey, spec.PrivateKey); field != "" {
		v = append(v, field)
	}
	return v
}

func sameSet(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

// RenewalTime returns when a certificate valid from notBefore to notAfter
// should be renewed, as cert-manager: renewBefore before expiry when it is
// set, positive and shorter than the actual lifetime; else
// renewBeforePercentage (0 < p < 100) of the lifetime before expiry; else
// at 2/3 of the lifetime. The result is truncated to the second, because
// status timestamps are stored to the second and a renewal time later than
// the stored one would never fire.
func RenewalTime(notBefore, notAfter time.Time, renewBefore *api.Duration, renewBeforePercentage *int32) time.Time {
	lifetime := notAfter.Sub(notBefore)
	var before time.Duration
	switch {
	case renewBefore != nil && renewBefore.Duration > 0 && renewBefore.Duration < lifetime:
		before = renewBefore.Duration
	case renewBeforePercentage != nil && *renewBeforePercentage > 0 && *renewBeforePercentage < 100:
		before = lifetime * time.Duration(*renewBeforePercentage) / 100
	default:
		before = lifetime / 3
	}
	return notAfter.Add(-before).Truncate(time.Second)
}

package policy

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/binary"
	"encoding/pem"
	"slices"
	"testing"
	"unicode/utf16"

	"github.com/certfn/certfn/core/api"
)

// Transcribed from approver-policy (upstreamCommit):
// pkg/internal/approver/allowed/evaluator_test.go, evaluator_rawbypass_test.go
// and evaluator_stringtypes_test.go.

// allAttributes is the request of upstream's "all attributes set" cases:
// every allowed field has two values (one for commonName and serialNumber).
func allAttributes(t *testing.T, opts ...crOpt) *api.CertificateRequest {
	return newCR(t, csr(cn("hello-world"), dns("example.com", "foo.bar"), ips("1.1.1.1", "2.3.4.5"),
		uris("spiffe://cluster.local/ns/foo/sa/bar", "foo.bar.com"), emails("foo@example.com", "bar@example.com"),
		subj(func(n *pkix.Name) {
			n.Organization = []string{"company-1", "company-2"}
			n.Country = []string{"country-1", "country-2"}
			n.OrganizationalUnit = []string{"org-1", "org-2"}
			n.Locality = []string{"loc-1", "loc-2"}
			n.Province = []string{"prov-1", "prov-2"}
			n.StreetAddress = []string{"street-1", "street-2"}
			n.PostalCode = []string{"post-1", "post-2"}
			n.SerialNumber = "serial-1"
		})), opts...)
}

// The field paths of every allowed field, in approver-policy's order.
var allowedFieldPaths = []string{
	"spec.allowed.commonName", "spec.allowed.dnsNames", "spec.allowed.ipAddresses", "spec.allowed.uris", "spec.allowed.emailAddresses",
	"spec.allowed.subject.organizations", "spec.allowed.subject.countries", "spec.allowed.subject.organizationalUnits",
	"spec.allowed.subject.localities", "spec.allowed.subject.provinces", "spec.allowed.subject.streetAddresses",
	"spec.allowed.subject.postalCodes", "spec.allowed.subject.serialNumber",
}

// withSuffix returns paths, each followed by the suffix of commonName and
// serialNumber (one) or of the list fields (list).
func withSuffix(paths []string, one, list string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		if p == "spec.allowed.commonName" || p == "spec.allowed.subject.serialNumber" {
			out[i] = p + one
		} else {
			out[i] = p + list
		}
	}
	return out
}

// pkg/internal/approver/allowed/evaluator_test.go: Test_Evaluate.
func TestUpstreamAllowedEvaluate(t *testing.T) {
	subjectAndSANs := slices.Clone(allowedFieldPaths)
	// Without isCA and usages: SANs, then the subject.
	notAllowed := append(append(slices.Clone(allowedFieldPaths[:5]), "spec.allowed.isCA", "spec.allowed.usages"), allowedFieldPaths[5:]...)
	runUpstreamEval(t, []upstreamEval{
		{name: "if no allowed defined, no attributes set in request, return NotDenied",
			spec: ``, cr: newCR(t, csr())},
		{name: "if no allowed defined, all attributes set in request, return Denied",
			spec: ``, cr: allAttributes(t, isCA(), usages(api.UsageCRLSign, api.UsageClientAuth)),
			want:     notAllowed,
			contains: []string{`spec.allowed.commonName: "hello-world" is not allowed`, `spec.allowed.usages: "crl sign", "client auth" are not allowed`}},
		{name: "if all allowed defined, all attributes set in request but are different, return Denied",
			spec: `
allowed:
  commonName: {value: "hello-world2"}
  dnsNames: {values: ["example.com2", "foo.bar2"]}
  ipAddresses: {values: ["1.1.1.12", "2.3.4.52"]}
  uris: {values: ["spiffe://cluster.local/ns/foo/sa/bar2", "foo.bar.com2"]}
  emailAddresses: {values: ["foo@example.com2", "bar@example.com2"]}
  isCA: false
  usages: ["crl sign", "server auth"]
  subject:
    organizations: {values: ["company-3", "company-4"]}
    countries: {values: ["country-3", "country-4"]}
    organizationalUnits: {values: ["org-3", "org-4"]}
    localities: {values: ["loc-3", "loc-4"]}
    provinces: {values: ["prov-3", "prov-4"]}
    streetAddresses: {values: ["street-3", "street-4"]}
    postalCodes: {values: ["post-3", "post-4"]}
    serialNumber: {value: "serial-2"}
`, cr: allAttributes(t, isCA(), usages(api.UsageCRLSign, api.UsageClientAuth)),
			want: append(append(withSuffix(allowedFieldPaths[:5], ".value", ".values"), "spec.allowed.isCA", "spec.allowed.usages"),
				withSuffix(allowedFieldPaths[5:], ".value", ".values")...),
			contains: []string{`spec.allowed.commonName.value: "hello-world" is not allowed (allowed: "hello-world2")`,
				`spec.allowed.usages: "client auth" is not allowed (allowed: "crl sign", "server auth")`}},
		{name: "if all allowed defined, all attributes set in request and match exactly, return Not-Denied",
			spec: `
allowed:
  commonName: {value: "hello-world"}
  dnsNames: {values: ["example.com", "foo.bar", "*.example.com"]}
  ipAddresses: {values: ["1.1.1.1", "2.3.4.5"]}
  uris: {values: ["spiffe://cluster.local/ns/foo/sa/bar", "foo.bar.com"]}
  emailAddresses: {values: ["foo@example.com", "bar@example.com"]}
  isCA: true
  usages: ["crl sign", "client auth"]
  subject:
    organizations: {values: ["company-1", "company-2"]}
    countries: {values: ["country-1", "country-2"]}
    organizationalUnits: {values: ["org-1", "org-2"]}
    localities: {values: ["loc-1", "loc-2"]}
    provinces: {values: ["prov-1", "prov-2"]}
    streetAddresses: {values: ["street-1", "street-2"]}
    postalCodes: {values: ["post-1", "post-2"]}
    serialNumber: {value: "serial-1"}
`, cr: newCR(t, csr(cn("hello-world"), dns("example.com", "foo.bar", "*.example.com"), ips("1.1.1.1", "2.3.4.5"),
				uris("spiffe://cluster.local/ns/foo/sa/bar", "foo.bar.com"), emails("foo@example.com", "bar@example.com"),
				subj(func(n *pkix.Name) {
					n.Organization, n.Country = []string{"company-1", "company-2"}, []string{"country-1", "country-2"}
					n.OrganizationalUnit, n.Locality = []string{"org-1", "org-2"}, []string{"loc-1", "loc-2"}
					n.Province, n.StreetAddress = []string{"prov-1", "prov-2"}, []string{"street-1", "street-2"}
					n.PostalCode, n.SerialNumber = []string{"post-1", "post-2"}, "serial-1"
				})), isCA(), usages(api.UsageCRLSign, api.UsageClientAuth))},
		{name: "if all allowed defined, all attributes set in request and match with wildcard, return Not-Denied",
			spec: `
allowed:
  commonName: {value: "hello-*"}
  dnsNames: {values: ["example.*", "*.bar"]}
  ipAddresses: {values: ["1.1*", "*2.3.4.5"]}
  uris: {values: ["spiffe://cluster.local/*/foo/sa/bar", "*.bar.com"]}
  emailAddresses: {values: ["foo@*", "*r@example.com"]}
  isCA: true
  usages: ["crl sign", "client auth"]
  subject:
    organizations: {values: ["company*"]}
    countries: {values: ["country*"]}
    organizationalUnits: {values: ["*-1", "*-2"]}
    localities: {values: ["loc-*", "*-2"]}
    provinces: {values: ["prov*"]}
    streetAddresses: {values: ["street-1", "street-*"]}
    postalCodes: {values: ["post-1", "post-2"]}
    serialNumber: {value: "serial-*"}
`, cr: allAttributes(t, isCA(), usages(api.UsageCRLSign, api.UsageClientAuth))},
		{name: "if all allowed defined as required, none of the attributes are set, return Denied",
			spec: requiredEverything, cr: newCR(t, csr()),
			want: withSuffix(subjectAndSANs, ".required", ".required")},
		{name: "if all allowed defined as required, all of the attributes are set, return Not-Denied",
			spec: requiredEverything, cr: allAttributes(t)},
		{name: "if all has validation, but all attributes are invalid, return Denied",
			spec: validateEverything, cr: allAttributes(t, inNamespace("foo")),
			want: withSuffix(subjectAndSANs, ".validations[0]", ".validations[0]"),
			contains: []string{`spec.allowed.commonName.validations[0]: "hello-world": failed rule: self.contains('cn-1')`,
				`spec.allowed.dnsNames.validations[0]: "example.com": only local namespace DNS names are allowed`,
				`spec.allowed.dnsNames.validations[0]: "foo.bar": only local namespace DNS names are allowed`,
				`spec.allowed.uris.validations[0]: "foo.bar.com": must be a namespced SPIFFE ID in local trust domain`,
				`spec.allowed.emailAddresses.validations[0]: "bar@example.com": failed rule: self == cr.namespace + '@example.com'`}},
		{name: "if all has validation, and all attributes are valid, return Not-Denied",
			spec: validateEverything, cr: newCR(t, csr(cn("cn-1.foo.svc"), dns("cn-1.foo.svc"), ips("10.0.1.14"),
				uris("spiffe://cluster.local/ns/foo/sa/bar"), emails("foo@example.com"),
				subj(func(n *pkix.Name) {
					n.Organization, n.Country, n.OrganizationalUnit = []string{"company-1"}, []string{"country-1"}, []string{"org-1"}
					n.Locality, n.Province, n.StreetAddress = []string{"loc-1"}, []string{"prov-1"}, []string{"street-1"}
					n.PostalCode, n.SerialNumber = []string{"post-1"}, "serial-2"
				})), inNamespace("foo"))},
		{name: "if has values AND validations, both should apply",
			spec: `
allowed:
  commonName:
    value: "hello-world2"
    validations: [{rule: "self.contains('hello')", message: "should contain namespace"}]
  dnsNames:
    values: ["*.com"]
    validations: [{rule: "self.endsWith(cr.namespace + '.com')"}]
  uris:
    values: ["spiffe://*"]
    validations: [{rule: "self.startsWith('spiffe://foo.bar/ns/')"}]
  emailAddresses:
    values: ["foo@example.com"]
    validations: [{rule: "self == cr.namespace + '@example.com'"}]
`, cr: newCR(t, csr(cn("hello-world"), dns("foo.com"), uris("spiffe://cluster.local/ns/foo/sa/bar"),
				emails("foo@example.com", "bar@example.com")), inNamespace("foo")),
			want: []string{"spec.allowed.commonName.value", "spec.allowed.uris.validations[0]",
				"spec.allowed.emailAddresses.values", "spec.allowed.emailAddresses.validations[0]"},
			contains: []string{`spec.allowed.uris.validations[0]: "spiffe://cluster.local/ns/foo/sa/bar": failed rule: self.startsWith('spiffe://foo.bar/ns/')`}},
	})
}

const requiredEverything = `
allowed:
  commonName: {required: true, value: "*"}
  dnsNames: {required: true, values: ["*"]}
  ipAddresses: {required: true, values: ["*"]}
  uris: {required: true, values: ["*"]}
  emailAddresses: {required: true, values: ["*"]}
  subject:
    organizations: {required: true, values: ["*"]}
    countries: {required: true, values: ["*"]}
    organizationalUnits: {required: true, values: ["*"]}
    localities: {required: true, values: ["*"]}
    provinces: {required: true, values: ["*"]}
    streetAddresses: {required: true, values: ["*"]}
    postalCodes: {required: true, values: ["*"]}
    serialNumber: {required: true, value: "*"}
`

const validateEverything = `
allowed:
  commonName: {validations: [{rule: "self.contains('cn-1')"}]}
  dnsNames: {validations: [{rule: "self.endsWith(cr.namespace + '.svc')", message: "only local namespace DNS names are allowed"}]}
  ipAddresses: {validations: [{rule: "self.startsWith('10.0.1.')"}]}
  uris: {validations: [{rule: "self.startsWith('spiffe://cluster.local/ns/' + cr.namespace + '/sa/')", message: "must be a namespced SPIFFE ID in local trust domain"}]}
  emailAddresses: {validations: [{rule: "self == cr.namespace + '@example.com'"}]}
  subject:
    organizations: {validations: [{rule: "self == 'company-1'"}]}
    countries: {validations: [{rule: "self == 'country-1'"}]}
    organizationalUnits: {validations: [{rule: "self == 'org-1'"}]}
    localities: {validations: [{rule: "self == 'loc-1'"}]}
    provinces: {validations: [{rule: "self == 'prov-1'"}]}
    streetAddresses: {validations: [{rule: "self == 'street-1'"}]}
    postalCodes: {validations: [{rule: "self == 'post-1'"}]}
    serialNumber: {validations: [{rule: "self == 'serial-2'"}]}
`

// OIDs of upstream's bypass tests.
var (
	oidUPN          = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 311, 20, 2, 3}
	oidEmailAddress = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 1}
)

// rawSAN is a CSR option adding a subjectAltName extension holding gns as
// they are.
func rawSAN(t testing.TB, gns ...asn1.RawValue) csrOpt {
	t.Helper()
	body, err := asn1.Marshal(gns)
	if err != nil {
		t.Fatal(err)
	}
	return extension(pkix.Extension{Id: oidSubjectAltName, Value: body})
}

// dnsGN is a dNSName GeneralName.
func dnsGN(name string) asn1.RawValue {
	return asn1.RawValue{Class: asn1.ClassContextSpecific, Tag: 2, Bytes: []byte(name)}
}

// otherNameGN is an otherName GeneralName with a UTF8String value.
func otherNameGN(t testing.TB, oid asn1.ObjectIdentifier, value string) asn1.RawValue {
	t.Helper()
	inner, err := asn1.MarshalWithParams(value, "utf8")
	if err != nil {
		t.Fatal(err)
	}
	return otherNameRawGN(t, oid, inner)
}

// otherNameRawGN is an otherName GeneralName whose value is the DER inner.
func otherNameRawGN(t testing.TB, oid asn1.ObjectIdentifier, inner []byte) asn1.RawValue {
	t.Helper()
	explicit := mustMarshal(t, asn1.RawValue{Class: asn1.ClassContextSpecific, Tag: 0, IsCompound: true, Bytes: inner})
	return asn1.RawValue{Class: asn1.ClassContextSpecific, Tag: 0, IsCompound: true, Bytes: append(mustMarshal(t, oid), explicit...)}
}

// constructedGN is a constructed context-specific GeneralName (x400Address,
// directoryName, ediPartyName: never allowed, their content is not read).
func constructedGN(t *testing.T, tag int) asn1.RawValue {
	return asn1.RawValue{Class: asn1.ClassContextSpecific, Tag: tag, IsCompound: true, Bytes: mustMarshal(t, "dummy")}
}

// registeredIDGN is a registeredID GeneralName.
func registeredIDGN(t *testing.T, oid asn1.ObjectIdentifier) asn1.RawValue {
	der := mustMarshal(t, oid)
	return asn1.RawValue{Class: asn1.ClassContextSpecific, Tag: 8, Bytes: der[2:]}
}

// rawSubject is a CSR option replacing the subject with rdns, one
// attribute per RDN; a value is a Go string (UTF8String or
// PrintableString as encoding/asn1 chooses), []byte (OCTET STRING) or an
// asn1.RawValue as it is.
func rawSubject(t testing.TB, atvs ...pkix.AttributeTypeAndValue) csrOpt {
	t.Helper()
	var rdns pkix.RDNSequence
	for _, atv := range atvs {
		rdns = append(rdns, pkix.RelativeDistinguishedNameSET{atv})
	}
	der := mustMarshal(t, rdns)
	return func(s *csrSpec) { s.rawSubject = der }
}

func atv(oid asn1.ObjectIdentifier, v any) pkix.AttributeTypeAndValue {
	return pkix.AttributeTypeAndValue{Type: oid, Value: v}
}

// pkg/internal/approver/allowed/evaluator_rawbypass_test.go: the SAN and
// raw subject tests (each upstream test function is one case).
func TestUpstreamAllowedRawBypass(t *testing.T) {
	upnPath := "spec.allowed.otherNames[1.3.6.1.4.1.311.20.2.3]"
	emailAttrPath := "spec.allowed.subject.otherAttributes[1.2.840.113549.1.9.1]"
	runUpstreamEval(t, []upstreamEval{
		{name: "TestEvaluate_SANOtherNameDeniedByDefault",
			spec: `allowed: {dnsNames: {values: ["allowed.example.com"]}}`,
			cr:   newCR(t, csr(rawSAN(t, dnsGN("allowed.example.com"), otherNameGN(t, oidUPN, "administrator@victim.corp")))),
			want: []string{upnPath}, contains: []string{"administrator@victim.corp"}},
		{name: "TestEvaluate_SANOtherNameAllowedByPolicy",
			spec: `
allowed:
  dnsNames: {values: ["allowed.example.com"]}
  otherNames: [{oid: "1.3.6.1.4.1.311.20.2.3", values: ["*@tenant.example.com"]}]
`, cr: newCR(t, csr(rawSAN(t, dnsGN("allowed.example.com"), otherNameGN(t, oidUPN, "user@tenant.example.com"))))},
		{name: "TestEvaluate_SANOtherNameValueMismatch",
			spec: `
allowed:
  dnsNames: {values: ["allowed.example.com"]}
  otherNames: [{oid: "1.3.6.1.4.1.311.20.2.3", values: ["*@tenant.example.com"]}]
`, cr: newCR(t, csr(rawSAN(t, dnsGN("allowed.example.com"), otherNameGN(t, oidUPN, "administrator@victim.corp")))),
			want: []string{upnPath + ".values"}},
		{name: "TestEvaluate_SANOtherNameRequired",
			spec: `
allowed:
  dnsNames: {values: ["allowed.example.com"]}
  otherNames: [{oid: "1.3.6.1.4.1.311.20.2.3", values: ["*@tenant.example.com"], required: true}]
`, cr: newCR(t, csr(rawSAN(t, dnsGN("allowed.example.com")))),
			want: []string{upnPath + ".required"}},
		{name: "TestEvaluate_SANForbiddenTypesAlwaysDenied/x400Address",
			spec: `allowed: {dnsNames: {values: ["allowed.example.com"]}}`,
			cr:   newCR(t, csr(rawSAN(t, dnsGN("allowed.example.com"), constructedGN(t, 3)))),
			want: []string{"spec.allowed.subjectAltName.x400Address"}},
		{name: "TestEvaluate_SANForbiddenTypesAlwaysDenied/directoryName",
			spec: `allowed: {dnsNames: {values: ["allowed.example.com"]}}`,
			cr:   newCR(t, csr(rawSAN(t, dnsGN("allowed.example.com"), constructedGN(t, 4)))),
			want: []string{"spec.allowed.subjectAltName.directoryName"}},
		{name: "TestEvaluate_SANForbiddenTypesAlwaysDenied/ediPartyName",
			spec: `allowed: {dnsNames: {values: ["allowed.example.com"]}}`,
			cr:   newCR(t, csr(rawSAN(t, dnsGN("allowed.example.com"), constructedGN(t, 5)))),
			want: []string{"spec.allowed.subjectAltName.ediPartyName"}},
		{name: "TestEvaluate_SANForbiddenTypesAlwaysDenied/registeredID",
			spec: `allowed: {dnsNames: {values: ["allowed.example.com"]}}`,
			cr:   newCR(t, csr(rawSAN(t, dnsGN("allowed.example.com"), registeredIDGN(t, asn1.ObjectIdentifier{1, 2, 3, 4, 5})))),
			want: []string{"spec.allowed.subjectAltName.registeredID"}},
		{name: "TestEvaluate_SANDNSOnlyUnaffected",
			spec: `allowed: {dnsNames: {values: ["*.example.com", "allowed.example.com"]}}`,
			cr:   newCR(t, csr(rawSAN(t, dnsGN("allowed.example.com"), dnsGN("api.allowed.example.com"))))},
		{name: "TestEvaluate_SubjectDualCNDenied",
			spec: `allowed: {commonName: {value: "*.tenant.example.com"}}`,
			cr:   newCR(t, csr(rawSubject(t, atv(oidCommonName, "kubernetes-admin"), atv(oidCommonName, "app.tenant.example.com")))),
			want: []string{"spec.allowed.commonName[0].value"}, contains: []string{"kubernetes-admin"}},
		{name: "TestEvaluate_SubjectDualCNBothAllowed",
			spec: `allowed: {commonName: {value: "*.tenant.example.com"}}`,
			cr:   newCR(t, csr(rawSubject(t, atv(oidCommonName, "a.tenant.example.com"), atv(oidCommonName, "b.tenant.example.com"))))},
		{name: "TestEvaluate_SubjectDualSerialNumberDenied",
			spec: `allowed: {commonName: {value: "*.tenant.example.com"}, subject: {serialNumber: {value: "legit-*"}}}`,
			cr: newCR(t, csr(rawSubject(t, atv(oidCommonName, "app.tenant.example.com"),
				atv(oidSerialNumber, "legit-001"), atv(oidSerialNumber, "smuggled-002")))),
			want: []string{"spec.allowed.subject.serialNumber[1].value"}, contains: []string{"smuggled-002"}},
		{name: "TestEvaluate_SubjectUnknownOIDDeniedByDefault",
			spec: `allowed: {commonName: {value: "*.tenant.example.com"}}`,
			cr:   newCR(t, csr(rawSubject(t, atv(oidCommonName, "app.tenant.example.com"), atv(oidEmailAddress, "root@victim.corp")))),
			want: []string{emailAttrPath}, contains: []string{"1.2.840.113549.1.9.1"}},
		{name: "TestEvaluate_SubjectUnknownOIDAllowedByPolicy",
			spec: `
allowed:
  commonName: {value: "*.tenant.example.com"}
  subject:
    otherAttributes: [{oid: "1.2.840.113549.1.9.1", values: ["*@tenant.example.com"]}]
`, cr: newCR(t, csr(rawSubject(t, atv(oidCommonName, "app.tenant.example.com"), atv(oidEmailAddress, "ops@tenant.example.com"))))},
		{name: "TestEvaluate_SubjectUnknownOIDValueMismatch",
			spec: `
allowed:
  commonName: {value: "*.tenant.example.com"}
  subject:
    otherAttributes: [{oid: "1.2.840.113549.1.9.1", values: ["*@tenant.example.com"]}]
`, cr: newCR(t, csr(rawSubject(t, atv(oidCommonName, "app.tenant.example.com"), atv(oidEmailAddress, "root@victim.corp")))),
			want: []string{emailAttrPath + ".values"}},
		{name: "TestEvaluate_SubjectOtherAttributesRequired",
			spec: `
allowed:
  commonName: {value: "*.tenant.example.com"}
  subject:
    otherAttributes: [{oid: "1.2.840.113549.1.9.1", values: ["*@tenant.example.com"], required: true}]
`, cr: newCR(t, csr(rawSubject(t, atv(oidCommonName, "app.tenant.example.com")))),
			want: []string{emailAttrPath + ".required"}},
		{name: "TestEvaluate_SubjectNonStringNamedOIDDenied",
			spec: `allowed: {commonName: {value: "*.tenant.example.com"}}`,
			cr:   newCR(t, csr(rawSubject(t, atv(oidCommonName, "app.tenant.example.com"), atv(oidOrganization, []byte("evil-corp"))))),
			want: []string{"spec.allowed.subject.organizations"}, contains: []string{"organizations", "unsupported ASN.1 type"}},
		{name: "TestEvaluate_SubjectMultiStringOrganizationStillWorks",
			spec: `allowed: {commonName: {value: "*.tenant.example.com"}, subject: {organizations: {values: ["tenant-a", "tenant-platform"]}}}`,
			cr: newCR(t, csr(rawSubject(t, atv(oidCommonName, "app.tenant.example.com"),
				atv(oidOrganization, "tenant-a"), atv(oidOrganization, "tenant-platform"))))},
	})
}

// pkg/internal/approver/allowed/evaluator_rawbypass_test.go:
// TestCryptoX509_DropsNonStandardSANTags, the canary that crypto/x509
// drops GeneralNames other than e-mail, DNS, URI and IP from its parsed
// slices (certfn reads them itself, request.go, for the same reason).
func TestUpstreamCryptoX509DropsNonStandardSANTags(t *testing.T) {
	parsed, _ := buildCSR(t, rawSAN(t, dnsGN("canary.example.com"), otherNameGN(t, oidUPN, "user@example.com"),
		constructedGN(t, 3), constructedGN(t, 4), constructedGN(t, 5), registeredIDGN(t, asn1.ObjectIdentifier{1, 2, 3, 4, 5})))
	if !slices.Equal(parsed.DNSNames, []string{"canary.example.com"}) || len(parsed.IPAddresses)+len(parsed.URIs)+len(parsed.EmailAddresses) != 0 {
		t.Fatalf("crypto/x509 parsed DNS %v, IP %v, URI %v, e-mail %v; want only the DNS name", parsed.DNSNames, parsed.IPAddresses, parsed.URIs, parsed.EmailAddresses)
	}
}

// String encodings of subject values (evaluator_stringtypes_test.go).

// bmpString is a BMPString (UTF-16BE) value.
func bmpString(s string) asn1.RawValue {
	u := utf16.Encode([]rune(s))
	b := make([]byte, 2*len(u))
	for i, r := range u {
		binary.BigEndian.PutUint16(b[2*i:], r)
	}
	return asn1.RawValue{Class: asn1.ClassUniversal, Tag: 30, Bytes: b}
}

func teletexString(s string) asn1.RawValue {
	return asn1.RawValue{Class: asn1.ClassUniversal, Tag: 20, Bytes: []byte(s)}
}

// universalString is a UniversalString (UTF-32BE), which Go does not decode.
func universalString(s string) asn1.RawValue {
	r := []rune(s)
	b := make([]byte, 4*len(r))
	for i, c := range r {
		binary.BigEndian.PutUint32(b[4*i:], uint32(c))
	}
	return asn1.RawValue{Class: asn1.ClassUniversal, Tag: 28, Bytes: b}
}

func generalString(s string) asn1.RawValue {
	return asn1.RawValue{Class: asn1.ClassUniversal, Tag: 27, Bytes: []byte(s)}
}

// pkg/internal/approver/allowed/evaluator_stringtypes_test.go.
func TestUpstreamAllowedStringTypes(t *testing.T) {
	const cnPolicy = `allowed: {commonName: {value: "*.tenant.example.com"}}`
	const unsupported = "unsupported ASN.1 type or string encoding"
	runUpstreamEval(t, []upstreamEval{
		{name: "TestEvaluate_CN_SupportedStringEncodings/UTF8String/GoString", spec: cnPolicy,
			cr: newCR(t, csr(rawSubject(t, atv(oidCommonName, "app.tenant.example.com"))))},
		{name: "TestEvaluate_CN_SupportedStringEncodings/BMPString", spec: cnPolicy,
			cr: newCR(t, csr(rawSubject(t, atv(oidCommonName, bmpString("app.tenant.example.com")))))},
		{name: "TestEvaluate_CN_SupportedStringEncodings/TeletexString", spec: cnPolicy,
			cr: newCR(t, csr(rawSubject(t, atv(oidCommonName, teletexString("app.tenant.example.com")))))},
		{name: "TestEvaluate_CN_SupportedEncodingStillPoliced", spec: cnPolicy,
			cr:   newCR(t, csr(rawSubject(t, atv(oidCommonName, bmpString("kubernetes-admin"))))),
			want: []string{"spec.allowed.commonName.value"}, contains: []string{"kubernetes-admin"}},
		{name: "TestEvaluate_CN_UnsupportedEncodingsDenied/UniversalString", spec: cnPolicy,
			cr:   newCR(t, csr(rawSubject(t, atv(oidCommonName, universalString("app.tenant.example.com"))))),
			want: []string{"spec.allowed.commonName"}, contains: []string{unsupported}},
		{name: "TestEvaluate_CN_UnsupportedEncodingsDenied/GeneralString", spec: cnPolicy,
			cr:   newCR(t, csr(rawSubject(t, atv(oidCommonName, generalString("app.tenant.example.com"))))),
			want: []string{"spec.allowed.commonName"}, contains: []string{unsupported}},
		{name: "TestEvaluate_NamedSlice_UnsupportedEncodingDenied",
			spec: `allowed: {commonName: {value: "*.tenant.example.com"}, subject: {organizations: {values: ["tenant-a"]}}}`,
			cr:   newCR(t, csr(rawSubject(t, atv(oidCommonName, "app.tenant.example.com"), atv(oidOrganization, universalString("tenant-a"))))),
			want: []string{"spec.allowed.subject.organizations"}, contains: []string{"organizations"}},
		{name: "TestEvaluate_NamedOID_TrulyNonStringStillDenied/OctetString", spec: cnPolicy,
			cr: newCR(t, csr(rawSubject(t, atv(oidCommonName, "app.tenant.example.com"),
				atv(oidOrganization, asn1.RawValue{Class: asn1.ClassUniversal, Tag: 4, Bytes: []byte("evil-corp")})))),
			want: []string{"spec.allowed.subject.organizations"}, contains: []string{unsupported}},
		{name: "TestEvaluate_NamedOID_TrulyNonStringStillDenied/Integer", spec: cnPolicy,
			cr: newCR(t, csr(rawSubject(t, atv(oidCommonName, "app.tenant.example.com"),
				atv(oidOrganization, asn1.RawValue{Class: asn1.ClassUniversal, Tag: 2, Bytes: []byte{0x2a}})))),
			want: []string{"spec.allowed.subject.organizations"}, contains: []string{unsupported}},
		{name: "TestEvaluate_OtherAttribute_UnsupportedEncodingDenied",
			spec: `
allowed:
  commonName: {value: "*.tenant.example.com"}
  subject:
    otherAttributes: [{oid: "1.2.840.113549.1.9.1", values: ["*@tenant.example.com"]}]
`, cr: newCR(t, csr(rawSubject(t, atv(oidCommonName, "app.tenant.example.com"), atv(oidEmailAddress, universalString("ops@tenant.example.com"))))),
			want: []string{"spec.allowed.subject.otherAttributes[1.2.840.113549.1.9.1]"}, contains: []string{unsupported}},
	})
}

// Beyond upstream's cases: otherName values that are not strings are
// matched as the hex of their DER (approver-policy's rendering), CEL
// validations run on otherNames and otherAttributes, and a request
// carrying an Ed25519 key (for upstream_constraints_test.go).
func TestOtherNamesValuesAndValidations(t *testing.T) {
	octet := mustMarshal(t, []byte{0xca, 0xfe})
	runUpstreamEval(t, []upstreamEval{
		{name: "non-string otherName value matched as hex DER",
			spec: `allowed: {otherNames: [{oid: "1.2.3.4", values: ["0402cafe"]}]}`,
			cr:   newCR(t, csr(rawSAN(t, otherNameRawGN(t, asn1.ObjectIdentifier{1, 2, 3, 4}, octet))))},
		{name: "otherName validations with cr",
			spec: `allowed: {otherNames: [{oid: "1.3.6.1.4.1.311.20.2.3", validations: [{rule: "self.startsWith(cr.username + '@')"}]}]}`,
			cr:   newCR(t, csr(rawSAN(t, otherNameGN(t, oidUPN, "alice@corp.example"), otherNameGN(t, oidUPN, "bob@corp.example")))),
			want: []string{"spec.allowed.otherNames[1.3.6.1.4.1.311.20.2.3].validations[0]"}, contains: []string{`"bob@corp.example"`}},
		{name: "an otherName wildcard never matches across a control character (certfn; approver-policy matches it)",
			spec: `allowed: {otherNames: [{oid: "1.3.6.1.4.1.311.20.2.3", values: ["*@tenant.example.com"]}]}`,
			cr:   newCR(t, csr(rawSAN(t, otherNameRawGN(t, oidUPN, mustMarshalIA5(t, "admin\x01@tenant.example.com"))))),
			want: []string{"spec.allowed.otherNames[1.3.6.1.4.1.311.20.2.3].values"}},
		{name: "an IA5String otherName is matched as text",
			spec: `allowed: {otherNames: [{oid: "1.3.6.1.4.1.311.20.2.3", values: ["*@tenant.example.com"]}]}`,
			cr:   newCR(t, csr(rawSAN(t, otherNameRawGN(t, oidUPN, mustMarshalIA5(t, "admin@tenant.example.com")))))},
		{name: "otherAttributes entry without values or validations allows nothing",
			spec: `allowed: {subject: {otherAttributes: [{oid: "0.9.2342.19200300.100.1.25"}]}}`,
			cr:   newCR(t, csr(rawSubject(t, atv(asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 25}, "example")))),
			want: []string{"spec.allowed.subject.otherAttributes[0.9.2342.19200300.100.1.25]"}},
	})
}

func mustMarshalIA5(t testing.TB, s string) []byte {
	t.Helper()
	b, err := asn1.MarshalWithParams(s, "ia5")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// ed25519CSR returns a request whose CSR has an Ed25519 key.
func ed25519CSR(t *testing.T) *api.CertificateRequest {
	t.Helper()
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, key)
	if err != nil {
		t.Fatal(err)
	}
	return newCR(t, nil, csrPEM(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})))
}

package policy

import (
	"encoding/asn1"
	"testing"

	"github.com/certfn/certfn/core/api"
)

// A subjectAltName entry crypto/x509 skips but other parsers read (an
// iPAddress encoded as constructed, whose segments OpenSSL concatenates
// into IP:127.0.0.1) is not a name the policy can miss: the policy reads
// the SAN with the reader the signers use, and a request whose SAN that
// reader refuses is Denied by every policy, naming spec.request and the
// rule. On the old code each of these was Approved by a policy that
// allows no IP address.
func TestHiddenSANEntriesAreDenied(t *testing.T) {
	dnsOnly := policyYAML(t, "team-a", `
allowed:
  dnsNames: {values: ["*.team-a.example.com"]}
selector: {issuerRef: {}}
`)
	cs := func(tag int, parts ...[]byte) asn1.RawValue {
		var b []byte
		for _, p := range parts {
			b = append(b, p...)
		}
		return asn1.RawValue{Class: asn1.ClassContextSpecific, Tag: tag, IsCompound: true, Bytes: b}
	}
	octets := func(b ...byte) []byte { return mustMarshal(t, asn1.RawValue{Tag: asn1.TagOctetString, Bytes: b}) }
	ia5 := func(s string) []byte { return mustMarshal(t, asn1.RawValue{Tag: asn1.TagIA5String, Bytes: []byte(s)}) }
	hiddenIP := cs(7, octets(127, 0), octets(0, 1), octets(), octets(), octets(), octets())
	web := dnsGN("web.team-a.example.com")
	ev := newEvaluator(t)
	runEvalCases(t, ev, []*api.CertificateRequestPolicy{dnsOnly}, bindAll(), []evalCase{
		{name: "allowed DNS name", cr: newCR(t, csr(rawSAN(t, web))), want: Approved},
		{name: "an IP address the policy does not allow", cr: newCR(t, csr(dns("web.team-a.example.com"), ips("127.0.0.1"))), want: Denied,
			msg: []string{"spec.allowed.ipAddresses"}},
		{name: "an iPAddress encoded as constructed", cr: newCR(t, csr(rawSAN(t, web, hiddenIP))), want: Denied,
			msg: []string{"spec.request: subjectAltName entry 2 (iPAddress): is encoded as constructed"}},
		{name: "a dNSName encoded as constructed", cr: newCR(t, csr(rawSAN(t, web, cs(2, ia5("admin."), ia5("victim.corp"))))), want: Denied,
			msg: []string{"spec.request: subjectAltName entry 2 (dNSName): is encoded as constructed"}},
		{name: "an otherName encoded as primitive", cr: newCR(t, csr(rawSAN(t, web, asn1.RawValue{Class: asn1.ClassContextSpecific, Tag: 0, Bytes: mustMarshal(t, oidUPN)}))), want: Denied,
			msg: []string{"spec.request: subjectAltName entry 2 (otherName): is encoded as primitive"}},
		{name: "an unknown GeneralName tag", cr: newCR(t, csr(rawSAN(t, web, asn1.RawValue{Class: asn1.ClassContextSpecific, Tag: 9, Bytes: []byte{127, 0, 0, 1}}))), want: Denied,
			msg: []string{"spec.request: subjectAltName entry 2 (GeneralName [9]): has the unknown tag [9]"}},
	})
}

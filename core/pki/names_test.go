package pki

import (
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"net"
	"strings"
	"testing"
)

// The names of the external probe that certfn's CA signed under the policy
// "*.team-a.example.com" before CSR names were checked.
var probeNames = []struct{ name, char string }{
	{"evil.com\x00.team-a.example.com", "NUL"},
	{"evil.org/.team-a.example.com", "'/'"},
	{"evil.org .team-a.example.com", "space"},
}

func TestCheckDNSName(t *testing.T) {
	long := strings.Repeat("a", 63)
	tests := []struct {
		name     string
		wildcard bool
		want     string // "" valid, else a substring of the error
	}{
		{"www.team-a.example.com", false, ""},
		{"team-a.example.com", false, ""},
		{"localhost", false, ""},
		{"a-b.c-d.example", false, ""},
		{"WWW.Example.COM", false, ""},
		{"123.example.com", false, ""},
		{"*.team-a.example.com", true, ""},
		{"*.com", true, ""},
		{"xn--bcher-kva.example", false, ""},
		{"XN--BCHER-KVA.example", false, ""},
		{"www.xn--80ak6aa92e.com", false, ""},
		{long + "." + long + "." + long + "." + strings.Repeat("a", 61), false, ""}, // 253 octets
		// the probe's names
		{probeNames[0].name, true, "contains a character a DNS name cannot hold (NUL)"},
		{probeNames[1].name, true, "contains a character a DNS name cannot hold ('/')"},
		{probeNames[2].name, true, "contains a character a DNS name cannot hold (space)"},
		// other characters
		{"evil.org\t.example.com", true, "(TAB)"},
		{"evil.org\n.example.com", true, "(LF)"},
		{"evil\x1b.example.com", true, "(control character U+001B)"},
		{"evil\x7f.example.com", true, "(DEL)"},
		{"evil\\.example.com", true, `('\\')`},
		{"evil@example.com", true, "('@')"},
		{"evil:443.example.com", true, "(':')"},
		{"under_score.example.com", true, "('_')"},
		{"bücher.example", false, "(non-ASCII 'ü'); write internationalised names as IDNA A-labels"},
		{"evil\u00a0.example.com", false, "(white space U+00A0)"},
		{"evil\u202e.example.com", false, "(U+202E)"},
		{"evil\xff.example.com", false, "is not valid UTF-8"},
		// structure
		{"", false, "is empty"},
		{"example.com.", false, "ends with a dot"},
		{"a..example.com", false, "has an empty label"},
		{".example.com", false, "has an empty label"},
		{"-a.example.com", false, `starting or ending with '-' ("-a")`},
		{"a-.example.com", false, `starting or ending with '-' ("a-")`},
		{strings.Repeat("a", 64) + ".example.com", false, "label of 64 octets"},
		{long + "." + long + "." + long + "." + strings.Repeat("a", 62), false, "254 octets long"},
		// wildcards
		{"*.team-a.example.com", false, "a wildcard is not allowed here"},
		{"*", true, "other than as the whole leftmost label"},
		{"a*.example.com", true, "other than as the whole leftmost label"},
		{"www.*.example.com", true, "other than as the whole leftmost label"},
		{"*.*.example.com", true, "other than as the whole leftmost label"},
		{"*.", true, "ends with a dot"},
		// IDNA
		{"xn--zz.example", false, `not a valid IDNA A-label ("xn--zz")`},
		{"xn--.example", false, `starting or ending with '-' ("xn--")`},
		{"xn--a.example", false, `not a valid IDNA A-label ("xn--a")`},
		{"xn--bcher-kva1.example", false, "not a valid IDNA A-label"},
	}
	for _, tc := range tests {
		err := CheckDNSName(tc.name, tc.wildcard)
		checkRule(t, "CheckDNSName", tc.name, err, tc.want)
	}
}

func TestCheckEmailAddress(t *testing.T) {
	tests := []struct{ addr, want string }{
		{"alice@team-a.example.com", ""},
		{"first.last+tag@example.com", ""},
		{"a!#$%&'*/=?^_`{|}~-@example.com", ""},
		{"alice@xn--bcher-kva.example", ""},
		{"", "is empty"},
		{"alice", "has 0 '@'"},
		{"a@b@example.com", "has 2 '@'"},
		{"@example.com", "empty local part"},
		{strings.Repeat("a", 65) + "@example.com", "local part of 65 octets"},
		{"al ice@example.com", "local part contains a character an e-mail address cannot hold (space)"},
		{"al\x00ice@example.com", "(NUL)"},
		{"jörg@example.com", "(non-ASCII 'ö')"},
		{"alice@evil.com\x00.team-a.example.com", "domain contains a character a DNS name cannot hold (NUL)"},
		{"alice@evil.org/.team-a.example.com", "domain contains a character a DNS name cannot hold ('/')"},
		{"alice@*.example.com", "domain contains '*': a wildcard is not allowed here"},
		{"alice@example.com.", "domain ends with a dot"},
		{"alice@", "domain is empty"},
	}
	for _, tc := range tests {
		checkRule(t, "CheckEmailAddress", tc.addr, CheckEmailAddress(tc.addr), tc.want)
	}
}

func TestCheckURI(t *testing.T) {
	tests := []struct{ uri, want string }{
		{"spiffe://team-a.example.com/ns/team-a/sa/web", ""},
		{"mailto:alice@example.com", ""},
		{"https://www.team-a.example.com:8443/path?q=1#frag", ""},
		{"urn:uuid:6e8bc430-9c3a-11d9-9669-0800200c9a66", ""},
		{"spiffe://team-a.example.com/a%20b", ""},
		{"https://[2001:db8::1]/", ""},
		{"", "is empty"},
		{"spiffe://team-a.example.com/a b", "cannot hold (space)"},
		{"spiffe://evil.org .team-a.example.com/", "cannot hold (space)"},
		{"spiffe://evil.com\x00.team-a.example.com/", "cannot hold (NUL)"},
		{"spiffe://team-a.example.com/\x1b[31m", "cannot hold (control character U+001B)"},
		{"spiffe://bücher.example/", "cannot hold (non-ASCII 'ü')"},
		{"/just/a/path", "has no scheme"},
		{"team-a.example.com", "has no scheme"},
		{"https://admin:secret@team-a.example.com/", "carries user info"},
		{"spiffe://user@team-a.example.com/", "carries user info"},
		{"spiffe://team-a.example.com/a%00b", "percent-encoded control character (NUL)"},
		{"spiffe://team-a.example.com/#%0a", "percent-encoded control character (LF)"},
		{"http://evil.org%2F.team-a.example.com/", "does not parse as a URI: invalid URL escape"},
		{"ht tp://x", "cannot hold (space)"},
		{"1http://x", "does not parse as a URI"},
	}
	for _, tc := range tests {
		checkRule(t, "CheckURI", tc.uri, CheckURI(tc.uri), tc.want)
	}
}

func TestCheckCommonName(t *testing.T) {
	tests := []struct{ cn, want string }{
		{"www.team-a.example.com", ""},
		{"*.team-a.example.com", ""},
		{"my-service", ""},
		{"Example Inc. Root CA", ""},
		{"alice@example.com", ""},
		{"system:node:ip-10-0-0-1.ec2.internal", ""},
		{"10.0.0.1", ""},
		{"2001:db8::1", ""},
		{"Grüße GmbH", ""},
		{"certfn test CA", ""},
		{"evil.com\x00.team-a.example.com", "contains a control character (NUL)"},
		{"Example\nInc", "contains a control character (LF)"},
		{"evil.org/.team-a.example.com", "is read as a host name but contains a character a DNS name cannot hold ('/')"},
		{"a..example.com", "is read as a host name but has an empty label"},
		{"www.example.com.", "is read as a host name but ends with a dot"},
		{"bad\xffname", "is not valid UTF-8"},
	}
	for _, tc := range tests {
		checkRule(t, "CheckCommonName", tc.cn, CheckCommonName(tc.cn), tc.want)
	}
}

// gn is one raw GeneralName.
type gn struct {
	tag int
	b   []byte
}

func dnsGN(s string) gn   { return gn{gnDNS, []byte(s)} }
func emailGN(s string) gn { return gn{gnRFC822, []byte(s)} }
func uriGN(s string) gn   { return gn{gnURI, []byte(s)} }
func ipGN(b []byte) gn    { return gn{gnIP, b} }

func otherNameGN(t *testing.T, oid asn1.ObjectIdentifier, v string) gn {
	t.Helper()
	rv, err := marshalOtherName(oid, v)
	if err != nil {
		t.Fatal(err)
	}
	return gn{gnOtherName, rv.Bytes}
}

// sanExtension encodes names, as given (no syntax check), as a
// subjectAltName extension.
func sanExtension(t *testing.T, names ...gn) pkix.Extension {
	t.Helper()
	var seq []asn1.RawValue
	for _, n := range names {
		seq = append(seq, asn1.RawValue{Class: asn1.ClassContextSpecific, Tag: n.tag, IsCompound: n.tag == gnOtherName, Bytes: n.b})
	}
	v, err := asn1.Marshal(seq)
	if err != nil {
		t.Fatal(err)
	}
	return pkix.Extension{Id: OIDExtensionSubjectAltName, Value: v}
}

func TestCheckCSRNames(t *testing.T) {
	upn := asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 311, 20, 2, 3}
	tests := []struct {
		name string
		cns  []string
		sans []gn
		want string // "" valid, else the whole error
	}{
		{name: "valid names of every kind", cns: []string{"www.team-a.example.com"}, sans: []gn{
			dnsGN("www.team-a.example.com"), dnsGN("*.team-a.example.com"), dnsGN("xn--bcher-kva.example"),
			emailGN("alice@team-a.example.com"), uriGN("spiffe://team-a.example.com/ns/a/sa/web"), uriGN("mailto:alice@example.com"),
			ipGN(net.ParseIP("10.0.0.1").To4()), ipGN(net.ParseIP("2001:db8::1")), otherNameGN(t, upn, "alice@corp.example"),
		}},
		{name: "no names at all"},
		{name: "organisation CN", cns: []string{"Example Inc. Root CA"}},
		{name: "probe NUL", sans: []gn{dnsGN(probeNames[0].name)},
			want: `DNS name "evil.com\x00.team-a.example.com" (SAN 1): contains a character a DNS name cannot hold (NUL)`},
		{name: "probe slash", sans: []gn{dnsGN("ok.team-a.example.com"), dnsGN(probeNames[1].name)},
			want: `DNS name "evil.org/.team-a.example.com" (SAN 2): contains a character a DNS name cannot hold ('/')`},
		{name: "probe space", sans: []gn{dnsGN(probeNames[2].name)},
			want: `DNS name "evil.org .team-a.example.com" (SAN 1): contains a character a DNS name cannot hold (space)`},
		{name: "e-mail", sans: []gn{dnsGN("a.example.com"), emailGN("alice@evil.org/.team-a.example.com")},
			want: `e-mail address "alice@evil.org/.team-a.example.com" (SAN 2): domain contains a character a DNS name cannot hold ('/')`},
		{name: "URI with user info", sans: []gn{uriGN("https://admin@team-a.example.com/")},
			want: `URI "https://admin@team-a.example.com/" (SAN 1): carries user info (user@ or user:password@), which a certificate must not hold`},
		{name: "URI with NUL", sans: []gn{uriGN("spiffe://evil.com\x00.team-a.example.com/")},
			want: `URI "spiffe://evil.com\x00.team-a.example.com/" (SAN 1): contains a character a URI cannot hold (NUL)`},
		{name: "otherName with a control character", sans: []gn{otherNameGN(t, upn, "admin\x00@corp.example")},
			want: `otherName "1.3.6.1.4.1.311.20.2.3=admin\x00@corp.example" (SAN 1): value contains a control character (NUL)`},
		{name: "CN after valid SANs", cns: []string{"evil.org/.team-a.example.com"}, sans: []gn{dnsGN("a.team-a.example.com")},
			want: `subject commonName "evil.org/.team-a.example.com": is read as a host name but contains a character a DNS name cannot hold ('/')`},
		{name: "second CN", cns: []string{"a.team-a.example.com", "evil.com\x00.team-a.example.com"},
			want: `subject commonName "evil.com\x00.team-a.example.com": contains a control character (NUL)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			csr := &x509.CertificateRequest{}
			for _, cn := range tc.cns {
				csr.Subject.Names = append(csr.Subject.Names, pkix.AttributeTypeAndValue{Type: asn1.ObjectIdentifier{2, 5, 4, 3}, Value: cn})
			}
			if tc.sans != nil {
				csr.Extensions = []pkix.Extension{sanExtension(t, tc.sans...)}
			}
			err := CheckCSRNames(csr)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("CheckCSRNames = %v, want nil", err)
				}
				return
			}
			if err == nil || err.Error() != tc.want {
				t.Fatalf("CheckCSRNames = %v\nwant %s", err, tc.want)
			}
			var ne *NameError
			if !errors.As(err, &ne) {
				t.Fatalf("error %T is not a *NameError", err)
			}
			if strings.ContainsFunc(err.Error(), func(r rune) bool { return r < ' ' || r == 0x7f }) {
				t.Fatalf("error carries a raw control character: %q", err.Error())
			}
		})
	}
	if err := CheckCSRNames(nil); err == nil {
		t.Error("CheckCSRNames(nil) = nil")
	}
	bad := &x509.CertificateRequest{Extensions: []pkix.Extension{{Id: OIDExtensionSubjectAltName, Value: []byte{0x30, 0x03, 0x82}}}}
	if err := CheckCSRNames(bad); err == nil || !strings.Contains(err.Error(), "not a valid SEQUENCE OF GeneralName") {
		t.Errorf("malformed extension: %v", err)
	}
}

// The probe's names pass crypto/x509's own CSR parser (which is why they
// were signed): CheckCSRNames catches them in CSRs built and parsed the
// ordinary way, in the DNS SAN and in the commonName.
func TestCheckCSRNamesOnParsedCSRs(t *testing.T) {
	key := ecKey(t, "names")
	for _, p := range probeNames {
		for _, tmpl := range []*x509.CertificateRequest{
			{DNSNames: []string{p.name}},
			{Subject: pkix.Name{CommonName: p.name}, DNSNames: []string{"ok.team-a.example.com"}},
		} {
			der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
			if err != nil {
				t.Fatal(err)
			}
			csr, err := ParseCSRPEM(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}))
			if err != nil {
				t.Fatalf("%q: the CSR does not parse: %v", p.name, err)
			}
			err = CheckCSRNames(csr)
			if tmpl.Subject.CommonName != "" && p.char == "space" {
				// A commonName with white space is not read as a host name.
				if err != nil {
					t.Errorf("%q as commonName: %v", p.name, err)
				}
				continue
			}
			if err == nil || !strings.Contains(err.Error(), p.char) {
				t.Errorf("%q (CN %q): CheckCSRNames = %v, want the %s named", p.name, tmpl.Subject.CommonName, err, p.char)
			}
		}
	}
}

func checkRule(t *testing.T, fn, in string, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("%s(%q) = %v, want nil", fn, in, err)
	case want != "" && err == nil:
		t.Errorf("%s(%q) = nil, want an error containing %q", fn, in, want)
	case want != "" && !strings.Contains(err.Error(), want):
		t.Errorf("%s(%q) = %q, want it to contain %q", fn, in, err, want)
	case err != nil && len(in) > 3 && strings.Contains(err.Error(), in):
		t.Errorf("%s(%q): the error repeats the input: %q", fn, in, err)
	}
}

package pki

import (
	"crypto/x509"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/certfn/certfn/core/api"
)

// generate runs GenerateCSR and parses the result, failing the test on error.
func generate(t *testing.T, crt *api.Certificate) (*x509.CertificateRequest, CSRExtensions) {
	t.Helper()
	b, err := GenerateCSR(crt, ecKey(t, "csr"))
	if err != nil {
		t.Fatalf("GenerateCSR() error = %v", err)
	}
	csr, err := ParseCSRPEM(b)
	if err != nil {
		t.Fatalf("ParseCSRPEM(GenerateCSR()) error = %v", err)
	}
	exts, err := ParseCSRExtensions(csr)
	if err != nil {
		t.Fatalf("ParseCSRExtensions() error = %v", err)
	}
	return csr, exts
}

func TestGenerateCSRFullSpec(t *testing.T) {
	crt := certificate(func(s *api.CertificateSpec) {
		s.Subject = &api.X509Subject{
			Organizations: []string{"Acme"}, Countries: []string{"GB"}, OrganizationalUnits: []string{"Web"},
			Localities: []string{"London"}, Provinces: []string{"Greater London"}, StreetAddresses: []string{"1 Road"},
			PostalCodes: []string{"N1"}, SerialNumber: "42",
		}
		s.IPAddresses = []string{"10.0.0.1", "2001:db8::1"}
		s.URIs = []string{"spiffe://cluster.local/ns/team-a/sa/web"}
		s.EmailAddresses = []string{"ops@example.com"}
		s.OtherNames = []api.OtherName{{OID: "1.3.6.1.4.1.311.20.2.3", UTF8Value: "upn@example.com"}}
		s.Usages = []api.KeyUsage{"digital signature", "key encipherment", "server auth", "client auth"}
	})
	csr, exts := generate(t, crt)

	n := csr.Subject
	if n.CommonName != "web.example.com" || !slices.Equal(n.Organization, []string{"Acme"}) || !slices.Equal(n.Country, []string{"GB"}) ||
		!slices.Equal(n.OrganizationalUnit, []string{"Web"}) || !slices.Equal(n.Locality, []string{"London"}) ||
		!slices.Equal(n.Province, []string{"Greater London"}) || !slices.Equal(n.StreetAddress, []string{"1 Road"}) ||
		!slices.Equal(n.PostalCode, []string{"N1"}) || n.SerialNumber != "42" {
		t.Errorf("subject = %+v", n)
	}
	if !slices.Equal(csr.DNSNames, crt.Spec.DNSNames) {
		t.Errorf("DNSNames = %v", csr.DNSNames)
	}
	if len(csr.IPAddresses) != 2 || !csr.IPAddresses[0].Equal(net.ParseIP("10.0.0.1")) || !csr.IPAddresses[1].Equal(net.ParseIP("2001:db8::1")) {
		t.Errorf("IPAddresses = %v", csr.IPAddresses)
	}
	if len(csr.URIs) != 1 || csr.URIs[0].String() != crt.Spec.URIs[0] {
		t.Errorf("URIs = %v", csr.URIs)
	}
	if !slices.Equal(csr.EmailAddresses, crt.Spec.EmailAddresses) {
		t.Errorf("EmailAddresses = %v", csr.EmailAddresses)
	}
	if !slices.Equal(exts.OtherNames, crt.Spec.OtherNames) {
		t.Errorf("OtherNames = %v", exts.OtherNames)
	}
	if exts.SubjectAltName == nil || exts.SubjectAltName.Critical {
		t.Errorf("SAN extension = %+v, want present and not critical (subject is set)", exts.SubjectAltName)
	}
	if exts.KeyUsage == nil || *exts.KeyUsage != x509.KeyUsageDigitalSignature|x509.KeyUsageKeyEncipherment {
		t.Errorf("KeyUsage = %v", exts.KeyUsage)
	}
	if !exts.HasExtKeyUsage || !slices.Equal(exts.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}) {
		t.Errorf("ExtKeyUsage = %v", exts.ExtKeyUsage)
	}
	if exts.IsCA != nil || exts.NameConstraints != nil {
		t.Errorf("non-CA request carries basicConstraints %v / nameConstraints %v", exts.IsCA, exts.NameConstraints)
	}
	if csr.SignatureAlgorithm != x509.ECDSAWithSHA256 {
		t.Errorf("SignatureAlgorithm = %v", csr.SignatureAlgorithm)
	}
	if !PublicKeysEqual(csr.PublicKey, ecKey(t, "csr").Public()) {
		t.Error("CSR public key is not the signing key's")
	}
}

func TestGenerateCSRVariants(t *testing.T) {
	tests := []struct {
		name  string
		spec  func(*api.CertificateSpec)
		check func(t *testing.T, csr *x509.CertificateRequest, exts CSRExtensions)
	}{
		{
			name: "default usages encoded",
			spec: func(s *api.CertificateSpec) {},
			check: func(t *testing.T, _ *x509.CertificateRequest, e CSRExtensions) {
				if e.KeyUsage == nil || *e.KeyUsage != x509.KeyUsageDigitalSignature|x509.KeyUsageKeyEncipherment || e.HasExtKeyUsage {
					t.Errorf("usages = %v / eku %v", e.KeyUsage, e.ExtKeyUsage)
				}
			},
		},
		{
			name: "encodeUsagesInRequest false leaves usages out",
			spec: func(s *api.CertificateSpec) { s.EncodeUsagesInRequest = boolPtr(false) },
			check: func(t *testing.T, _ *x509.CertificateRequest, e CSRExtensions) {
				if e.KeyUsage != nil || e.HasExtKeyUsage {
					t.Errorf("usages encoded although disabled: %v %v", e.KeyUsage, e.ExtKeyUsage)
				}
			},
		},
		{
			name: "isCA adds cert sign, basicConstraints and nameConstraints",
			spec: func(s *api.CertificateSpec) {
				s.IsCA = true
				s.NameConstraints = &api.NameConstraints{Critical: true, Permitted: &api.NameConstraintItem{DNSDomains: []string{"example.com"}}}
			},
			check: func(t *testing.T, _ *x509.CertificateRequest, e CSRExtensions) {
				if e.KeyUsage == nil || *e.KeyUsage&x509.KeyUsageCertSign == 0 {
					t.Errorf("KeyUsage = %v, want cert sign", e.KeyUsage)
				}
				if e.IsCA == nil || !*e.IsCA {
					t.Errorf("basicConstraints IsCA = %v, want true", e.IsCA)
				}
				if e.NameConstraints == nil || !e.NameConstraints.Critical {
					t.Errorf("nameConstraints = %+v, want critical", e.NameConstraints)
				}
			},
		},
		{
			name: "nameConstraints ignored without isCA",
			spec: func(s *api.CertificateSpec) {
				s.NameConstraints = &api.NameConstraints{Permitted: &api.NameConstraintItem{DNSDomains: []string{"example.com"}}}
			},
			check: func(t *testing.T, _ *x509.CertificateRequest, e CSRExtensions) {
				if e.NameConstraints != nil {
					t.Error("nameConstraints encoded for a non-CA request")
				}
			},
		},
		{
			name: "literalSubject is encoded as written",
			spec: func(s *api.CertificateSpec) {
				s.CommonName = ""
				s.LiteralSubject = "CN=web.example.com,OU=Web+OU=Ops,O=Acme,1.2.3.4=x"
			},
			check: func(t *testing.T, csr *x509.CertificateRequest, _ CSRExtensions) {
				want, _ := ParseLiteralSubject("CN=web.example.com,OU=Web+OU=Ops,O=Acme,1.2.3.4=x")
				a, _ := canonicalSubject(mustMarshal(t, want))
				b, err := canonicalSubject(csr.RawSubject)
				if err != nil || a != b {
					t.Errorf("subject = %s, want %s (%v)", b, a, err)
				}
				if csr.Subject.CommonName != "web.example.com" || !sameStrings(csr.Subject.OrganizationalUnit, []string{"Web", "Ops"}) {
					t.Errorf("parsed subject = %+v", csr.Subject)
				}
			},
		},
		{
			name: "empty subject makes the SAN extension critical",
			spec: func(s *api.CertificateSpec) { s.CommonName = "" },
			check: func(t *testing.T, _ *x509.CertificateRequest, e CSRExtensions) {
				if e.SubjectAltName == nil || !e.SubjectAltName.Critical {
					t.Errorf("SAN = %+v, want critical", e.SubjectAltName)
				}
			},
		},
		{
			name: "commonName only has no SAN extension",
			spec: func(s *api.CertificateSpec) { s.DNSNames = nil },
			check: func(t *testing.T, csr *x509.CertificateRequest, e CSRExtensions) {
				if e.SubjectAltName != nil || csr.Subject.CommonName != "web.example.com" {
					t.Errorf("SAN = %+v, CN = %q", e.SubjectAltName, csr.Subject.CommonName)
				}
			},
		},
		{
			name: "extended usages only: no empty keyUsage extension",
			spec: func(s *api.CertificateSpec) { s.Usages = []api.KeyUsage{"client auth"} },
			check: func(t *testing.T, _ *x509.CertificateRequest, e CSRExtensions) {
				if e.KeyUsage != nil || !e.HasExtKeyUsage || !slices.Equal(e.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}) {
					t.Errorf("keyUsage %v, extKeyUsage %v", e.KeyUsage, e.ExtKeyUsage)
				}
			},
		},
		{
			name: "explicit signature algorithm",
			spec: func(s *api.CertificateSpec) { s.SignatureAlgorithm = "ECDSAWithSHA512" },
			check: func(t *testing.T, csr *x509.CertificateRequest, _ CSRExtensions) {
				if csr.SignatureAlgorithm != x509.ECDSAWithSHA512 {
					t.Errorf("SignatureAlgorithm = %v", csr.SignatureAlgorithm)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			csr, exts := generate(t, certificate(tt.spec))
			tt.check(t, csr, exts)
		})
	}
}

func TestGenerateCSRErrors(t *testing.T) {
	tests := []struct {
		name    string
		spec    func(*api.CertificateSpec)
		wantErr string
	}{
		{"no names at all", func(s *api.CertificateSpec) { s.CommonName, s.DNSNames = "", nil }, "spec: no commonName"},
		{"bad IP", func(s *api.CertificateSpec) { s.IPAddresses = []string{"10.0.0.1", "10.0.0"} }, `spec.ipAddresses[1]: "10.0.0" is not a valid IP address`},
		{"bad URI", func(s *api.CertificateSpec) { s.URIs = []string{"http://[::1"} }, `spec.uris[0]`},
		{"non-ASCII DNS name", func(s *api.CertificateSpec) { s.DNSNames = []string{"café.example"} }, "spec.dnsNames[0]"},
		{"bad otherName OID", func(s *api.CertificateSpec) { s.OtherNames = []api.OtherName{{OID: "upn", UTF8Value: "x"}} }, "spec.otherNames[0].oid"},
		{"bad literalSubject", func(s *api.CertificateSpec) { s.CommonName, s.LiteralSubject = "", "CN" }, "spec.literalSubject"},
		{"unknown usage", func(s *api.CertificateSpec) { s.Usages = []api.KeyUsage{"server auth", "teleport"} }, `spec.usages[1]: "teleport"`},
		{"signature algorithm for another key type", func(s *api.CertificateSpec) { s.SignatureAlgorithm = "SHA256WithRSA" }, "spec.signatureAlgorithm"},
		{"bad name constraint range", func(s *api.CertificateSpec) {
			s.IsCA = true
			s.NameConstraints = &api.NameConstraints{Excluded: &api.NameConstraintItem{IPRanges: []string{"10.0.0.0"}}}
		}, "spec.nameConstraints.excluded.ipRanges[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := GenerateCSR(certificate(tt.spec), ecKey(t, "csr"))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("GenerateCSR() error = %v, want containing %q", err, tt.wantErr)
			}
		})
	}
	if _, err := GenerateCSR(nil, ecKey(t, "csr")); err == nil {
		t.Error("nil certificate: want an error")
	}
	if _, err := GenerateCSR(certificate(), nil); err == nil {
		t.Error("nil key: want an error")
	}
}

func TestKeyUsages(t *testing.T) {
	tests := []struct {
		name    string
		usages  []api.KeyUsage
		isCA    bool
		wantKU  x509.KeyUsage
		wantEKU []x509.ExtKeyUsage
		wantErr string
	}{
		{"defaults", nil, false, x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment, nil, ""},
		{"CA adds cert sign", nil, true, x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment | x509.KeyUsageCertSign, nil, ""},
		{"signing is digital signature", []api.KeyUsage{"signing"}, false, x509.KeyUsageDigitalSignature, nil, ""},
		{"every bit", []api.KeyUsage{"digital signature", "content commitment", "key encipherment", "data encipherment", "key agreement", "cert sign", "crl sign", "encipher only", "decipher only"}, false,
			x509.KeyUsageDigitalSignature | x509.KeyUsageContentCommitment | x509.KeyUsageKeyEncipherment | x509.KeyUsageDataEncipherment |
				x509.KeyUsageKeyAgreement | x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageEncipherOnly | x509.KeyUsageDecipherOnly, nil, ""},
		{"extended, s/mime folds into email protection", []api.KeyUsage{"server auth", "email protection", "s/mime", "ocsp signing"}, false, 0,
			[]x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageEmailProtection, x509.ExtKeyUsageOCSPSigning}, ""},
		{"unknown", []api.KeyUsage{"nope"}, false, 0, nil, `spec.usages[0]: "nope"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ku, eku, err := KeyUsages(tt.usages, tt.isCA)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("KeyUsages() error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || ku != tt.wantKU || !slices.Equal(eku, tt.wantEKU) {
				t.Errorf("KeyUsages() = %#x %v %v; want %#x %v", ku, eku, err, tt.wantKU, tt.wantEKU)
			}
			// The encoded extension decodes back to the same bits.
			v, err := marshalKeyUsage(ku)
			if err != nil {
				t.Fatal(err)
			}
			back, err := unmarshalKeyUsage(v)
			if err != nil || back != ku {
				t.Errorf("keyUsage round trip = %#x, %v; want %#x", back, err, ku)
			}
		})
	}
}

func TestSANsRoundTrip(t *testing.T) {
	in := SANs{
		DNSNames:       []string{"a.example.com"},
		EmailAddresses: []string{"a@example.com"},
		IPAddresses:    []net.IP{net.ParseIP("192.0.2.1"), net.ParseIP("2001:db8::2")},
		OtherNames:     []api.OtherName{{OID: "1.3.6.1.4.1.311.20.2.3", UTF8Value: "üser@example.com"}},
	}
	v, err := MarshalSANs(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := UnmarshalSANs(v)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(out.DNSNames, in.DNSNames) || !slices.Equal(out.EmailAddresses, in.EmailAddresses) ||
		!slices.Equal(ipStrings(out.IPAddresses), []string{"192.0.2.1", "2001:db8::2"}) || !slices.Equal(out.OtherNames, in.OtherNames) {
		t.Errorf("round trip = %+v, want %+v", out, in)
	}
	if len(out.IPAddresses[0]) != 4 {
		t.Errorf("IPv4 encoded in %d bytes, want 4", len(out.IPAddresses[0]))
	}
	if _, err := UnmarshalSANs([]byte{0x30, 0x03, 0x82, 0x05}); err == nil {
		t.Error("truncated SAN: want an error")
	}
}

func TestSameUsages(t *testing.T) {
	tests := []struct {
		name string
		a, b []api.KeyUsage
		want bool
	}{
		{"empty is the default", nil, []api.KeyUsage{"key encipherment", "digital signature"}, true},
		{"signing is digital signature", []api.KeyUsage{"signing"}, []api.KeyUsage{"digital signature"}, true},
		{"order and duplicates do not matter", []api.KeyUsage{"server auth", "client auth", "server auth"}, []api.KeyUsage{"client auth", "server auth"}, true},
		{"different", []api.KeyUsage{"server auth"}, []api.KeyUsage{"client auth"}, false},
		{"unknown names compare by name", []api.KeyUsage{"x", "y"}, []api.KeyUsage{"y", "x"}, true},
		{"unknown against known", []api.KeyUsage{"x"}, []api.KeyUsage{"server auth"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SameUsages(tt.a, tt.b); got != tt.want {
				t.Errorf("SameUsages(%v, %v) = %v, want %v", tt.a, tt.b, got, tt.want)
			}
		})
	}
}

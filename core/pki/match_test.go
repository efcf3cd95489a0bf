package pki

import (
	"crypto"
	"crypto/x509"
	"crypto/x509/pkix"
	"net"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
)

// requestFor builds the CertificateRequest the requestmanager would create
// for crt, with a CSR signed by key.
func requestFor(t *testing.T, crt *api.Certificate, key crypto.Signer) *api.CertificateRequest {
	t.Helper()
	csr, err := GenerateCSR(crt, key)
	if err != nil {
		t.Fatalf("GenerateCSR() error = %v", err)
	}
	return &api.CertificateRequest{
		ObjectMeta: api.ObjectMeta{Name: crt.Name + "-1", Namespace: crt.Namespace},
		Spec: api.CertificateRequestSpec{
			Request:   csr,
			IssuerRef: crt.Spec.IssuerRef,
			IsCA:      crt.Spec.IsCA,
			Usages:    crt.Spec.Usages,
			Duration:  crt.Spec.Duration,
		},
	}
}

// fullSpec sets every field RequestMatchesSpec compares.
func fullSpec(s *api.CertificateSpec) {
	s.Subject = &api.X509Subject{
		Organizations: []string{"Acme"}, Countries: []string{"GB"}, OrganizationalUnits: []string{"Web"},
		Localities: []string{"London"}, Provinces: []string{"Greater London"}, StreetAddresses: []string{"1 Road"},
		PostalCodes: []string{"N1"}, SerialNumber: "42",
	}
	s.IPAddresses = []string{"10.0.0.1"}
	s.URIs = []string{"spiffe://cluster.local/web"}
	s.EmailAddresses = []string{"ops@example.com"}
	s.OtherNames = []api.OtherName{{OID: "1.3.6.1.4.1.311.20.2.3", UTF8Value: "web@example.com"}}
	s.Usages = []api.KeyUsage{"digital signature", "key encipherment", "server auth"}
	s.Duration = dur(30 * 24 * time.Hour)
	s.PrivateKey = &api.CertificatePrivateKey{Algorithm: api.ECDSAKeyAlgorithm}
}

func TestRequestMatchesSpec(t *testing.T) {
	key := ecKey(t, "match")
	tests := []struct {
		name   string
		base   func(*api.CertificateSpec) // spec the request is made from
		change func(*api.CertificateSpec, *api.CertificateRequest)
		want   []string
	}{
		{name: "identical", base: fullSpec, change: func(*api.CertificateSpec, *api.CertificateRequest) {}},
		{name: "dnsNames reordered still match", base: fullSpec, change: func(s *api.CertificateSpec, _ *api.CertificateRequest) {
			s.DNSNames = []string{"www.example.com", "web.example.com"}
		}},
		{name: "signing equals digital signature", base: fullSpec, change: func(s *api.CertificateSpec, cr *api.CertificateRequest) {
			s.Usages = []api.KeyUsage{"signing", "key encipherment", "server auth"}
		}},
		{name: "issuerRef defaults", base: fullSpec, change: func(s *api.CertificateSpec, _ *api.CertificateRequest) {
			s.IssuerRef.Kind, s.IssuerRef.Group = "", ""
		}},
		{name: "no duration on either side is the default", base: func(s *api.CertificateSpec) { fullSpec(s); s.Duration = nil },
			change: func(s *api.CertificateSpec, _ *api.CertificateRequest) { s.Duration = dur(DefaultCertificateDuration) }},
		{name: "commonName", base: fullSpec, change: func(s *api.CertificateSpec, _ *api.CertificateRequest) { s.CommonName = "other" }, want: []string{"spec.commonName"}},
		{name: "organizations", base: fullSpec, change: func(s *api.CertificateSpec, _ *api.CertificateRequest) { s.Subject.Organizations = nil }, want: []string{"spec.subject.organizations"}},
		{name: "countries", base: fullSpec, change: func(s *api.CertificateSpec, _ *api.CertificateRequest) { s.Subject.Countries = []string{"FR"} }, want: []string{"spec.subject.countries"}},
		{name: "organizationalUnits", base: fullSpec, change: func(s *api.CertificateSpec, _ *api.CertificateRequest) {
			s.Subject.OrganizationalUnits = append(s.Subject.OrganizationalUnits, "Ops")
		}, want: []string{"spec.subject.organizationalUnits"}},
		{name: "localities", base: fullSpec, change: func(s *api.CertificateSpec, _ *api.CertificateRequest) { s.Subject.Localities = []string{"Leeds"} }, want: []string{"spec.subject.localities"}},
		{name: "provinces", base: fullSpec, change: func(s *api.CertificateSpec, _ *api.CertificateRequest) { s.Subject.Provinces = nil }, want: []string{"spec.subject.provinces"}},
		{name: "streetAddresses", base: fullSpec, change: func(s *api.CertificateSpec, _ *api.CertificateRequest) {
			s.Subject.StreetAddresses = []string{"2 Road"}
		}, want: []string{"spec.subject.streetAddresses"}},
		{name: "postalCodes", base: fullSpec, change: func(s *api.CertificateSpec, _ *api.CertificateRequest) { s.Subject.PostalCodes = []string{"N2"} }, want: []string{"spec.subject.postalCodes"}},
		{name: "serialNumber", base: fullSpec, change: func(s *api.CertificateSpec, _ *api.CertificateRequest) { s.Subject.SerialNumber = "43" }, want: []string{"spec.subject.serialNumber"}},
		{name: "dnsNames", base: fullSpec, change: func(s *api.CertificateSpec, _ *api.CertificateRequest) { s.DNSNames = s.DNSNames[:1] }, want: []string{"spec.dnsNames"}},
		{name: "ipAddresses", base: fullSpec, change: func(s *api.CertificateSpec, _ *api.CertificateRequest) { s.IPAddresses = []string{"10.0.0.2"} }, want: []string{"spec.ipAddresses"}},
		{name: "uris", base: fullSpec, change: func(s *api.CertificateSpec, _ *api.CertificateRequest) { s.URIs = nil }, want: []string{"spec.uris"}},
		{name: "emailAddresses", base: fullSpec, change: func(s *api.CertificateSpec, _ *api.CertificateRequest) {
			s.EmailAddresses = []string{"dev@example.com"}
		}, want: []string{"spec.emailAddresses"}},
		{name: "otherNames", base: fullSpec, change: func(s *api.CertificateSpec, _ *api.CertificateRequest) { s.OtherNames[0].UTF8Value = "x@example.com" }, want: []string{"spec.otherNames"}},
		{name: "isCA on the request", base: fullSpec, change: func(_ *api.CertificateSpec, cr *api.CertificateRequest) { cr.Spec.IsCA = true }, want: []string{"spec.isCA"}},
		{name: "isCA on the spec also changes the encoded usages", base: fullSpec, change: func(s *api.CertificateSpec, _ *api.CertificateRequest) { s.IsCA = true }, want: []string{"spec.isCA", "spec.usages"}},
		{name: "usages", base: fullSpec, change: func(s *api.CertificateSpec, _ *api.CertificateRequest) { s.Usages = append(s.Usages, "client auth") }, want: []string{"spec.usages"}},
		{name: "usages on the request only", base: fullSpec, change: func(_ *api.CertificateSpec, cr *api.CertificateRequest) { cr.Spec.Usages = nil }, want: []string{"spec.usages"}},
		{name: "extended usages only match", base: func(s *api.CertificateSpec) { fullSpec(s); s.Usages = []api.KeyUsage{"client auth"} },
			change: func(*api.CertificateSpec, *api.CertificateRequest) {}},
		{name: "encodeUsagesInRequest", base: fullSpec, change: func(s *api.CertificateSpec, _ *api.CertificateRequest) { s.EncodeUsagesInRequest = boolPtr(false) }, want: []string{"spec.encodeUsagesInRequest"}},
		{name: "duration", base: fullSpec, change: func(s *api.CertificateSpec, _ *api.CertificateRequest) { s.Duration = dur(time.Hour) }, want: []string{"spec.duration"}},
		{name: "duration via expirationSeconds", base: fullSpec, change: func(_ *api.CertificateSpec, cr *api.CertificateRequest) {
			cr.Spec.Duration, cr.Spec.ExpirationSeconds = nil, int32Ptr(3600)
		}, want: []string{"spec.duration"}},
		{name: "issuerRef.name", base: fullSpec, change: func(s *api.CertificateSpec, _ *api.CertificateRequest) { s.IssuerRef.Name = "other" }, want: []string{"spec.issuerRef.name"}},
		{name: "issuerRef.kind", base: fullSpec, change: func(s *api.CertificateSpec, _ *api.CertificateRequest) { s.IssuerRef.Kind = api.KindClusterIssuer }, want: []string{"spec.issuerRef.kind"}},
		{name: "issuerRef.group", base: fullSpec, change: func(s *api.CertificateSpec, _ *api.CertificateRequest) { s.IssuerRef.Group = "example.io" }, want: []string{"spec.issuerRef.group"}},
		{name: "privateKey.algorithm", base: fullSpec, change: func(s *api.CertificateSpec, _ *api.CertificateRequest) { s.PrivateKey.Algorithm = api.RSAKeyAlgorithm }, want: []string{"spec.privateKey.algorithm"}},
		{name: "privateKey.size", base: fullSpec, change: func(s *api.CertificateSpec, _ *api.CertificateRequest) { s.PrivateKey.Size = 384 }, want: []string{"spec.privateKey.size"}},
		{name: "literalSubject matches", base: func(s *api.CertificateSpec) {
			fullSpec(s)
			s.Subject, s.CommonName, s.LiteralSubject = nil, "", "CN=web,O=Acme+OU=Web"
		},
			change: func(s *api.CertificateSpec, _ *api.CertificateRequest) { s.LiteralSubject = "cn=web, OU=Web+O=Acme" }},
		{name: "literalSubject", base: func(s *api.CertificateSpec) {
			fullSpec(s)
			s.Subject, s.CommonName, s.LiteralSubject = nil, "", "CN=web,O=Acme"
		},
			change: func(s *api.CertificateSpec, _ *api.CertificateRequest) { s.LiteralSubject = "O=Acme,CN=web" }, want: []string{"spec.literalSubject"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			crt := certificate(tt.base)
			cr := requestFor(t, crt, key)
			spec := certificate(tt.base).Spec
			tt.change(&spec, cr)
			got, err := RequestMatchesSpec(cr, &spec)
			if err != nil {
				t.Fatalf("RequestMatchesSpec() error = %v", err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("RequestMatchesSpec() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestRequestMatchesSpecErrors(t *testing.T) {
	spec := certificate().Spec
	bad := &api.CertificateRequest{Spec: api.CertificateRequestSpec{Request: []byte("not a csr")}}
	if _, err := RequestMatchesSpec(bad, &spec); err == nil {
		t.Error("undecodable CSR: want an error")
	}
	if _, err := RequestMatchesSpec(nil, &spec); err == nil {
		t.Error("nil request: want an error")
	}
	cr := requestFor(t, certificate(), ecKey(t, "match"))
	spec.IPAddresses = []string{"nope"}
	if _, err := RequestMatchesSpec(cr, &spec); err == nil {
		t.Error("unparseable spec IP: want an error")
	}
}

// certFor issues a self-signed certificate carrying the given names.
func certFor(t *testing.T, key crypto.Signer, cn string, dns []string, opts ...certOpt) *x509.Certificate {
	t.Helper()
	return issueCert(t, key.Public(), nil, key, append([]certOpt{func(c *x509.Certificate) {
		c.Subject = pkix.Name{CommonName: cn}
		c.DNSNames = dns
	}}, opts...)...)
}

func TestCertificateMatchesSpec(t *testing.T) {
	key := testKey(t, "cms", api.RSAKeyAlgorithm, 2048)
	ec := ecKey(t, "cms")
	upn := func(v string) certOpt {
		return func(c *x509.Certificate) {
			sans, err := MarshalSANs(SANs{DNSNames: c.DNSNames, OtherNames: []api.OtherName{{OID: "1.3.6.1.4.1.311.20.2.3", UTF8Value: v}}})
			if err != nil {
				t.Fatal(err)
			}
			c.ExtraExtensions = append(c.ExtraExtensions, pkix.Extension{Id: OIDExtensionSubjectAltName, Value: sans})
		}
	}
	spec := func(opts ...func(*api.CertificateSpec)) *api.CertificateSpec {
		return &certificate(opts...).Spec
	}
	tests := []struct {
		name string
		cert *x509.Certificate
		spec *api.CertificateSpec
		want []string
	}{
		{"same names", certFor(t, key, "web.example.com", []string{"web.example.com", "www.example.com"}), spec(), nil},
		{"commonName moved into dnsNames is fine", certFor(t, key, "", []string{"web.example.com", "www.example.com"}), spec(), nil},
		{"dnsName promoted to commonName is fine", certFor(t, key, "www.example.com", []string{"web.example.com"}), spec(), nil},
		{"different lifetime and usages are not flagged", certFor(t, key, "web.example.com", []string{"web.example.com", "www.example.com"},
			withValidity(testNow, testNow.Add(time.Hour)), func(c *x509.Certificate) { c.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth} }),
			spec(func(s *api.CertificateSpec) {
				s.Duration = dur(48 * time.Hour)
				s.Usages = []api.KeyUsage{"server auth"}
			}), nil},
		{"extra dnsName", certFor(t, key, "web.example.com", []string{"web.example.com", "www.example.com", "old.example.com"}), spec(), []string{"spec.dnsNames"}},
		{"commonName changed", certFor(t, key, "old.example.com", []string{"www.example.com"}), spec(), []string{"spec.commonName", "spec.dnsNames"}},
		{"literalSubject CN counts", certFor(t, key, "web.example.com", []string{"www.example.com"}),
			spec(func(s *api.CertificateSpec) { s.CommonName, s.LiteralSubject = "", "CN=web.example.com,O=Acme" }), nil},
		{"ipAddresses", certFor(t, key, "web.example.com", []string{"web.example.com", "www.example.com"}, func(c *x509.Certificate) { c.IPAddresses = []net.IP{net.ParseIP("10.0.0.1")} }),
			spec(), []string{"spec.ipAddresses"}},
		{"uris", certFor(t, key, "web.example.com", []string{"web.example.com", "www.example.com"}),
			spec(func(s *api.CertificateSpec) { s.URIs = []string{"spiffe://x/y"} }), []string{"spec.uris"}},
		{"uris match", certFor(t, key, "web.example.com", []string{"web.example.com", "www.example.com"}, func(c *x509.Certificate) {
			u, _ := url.Parse("spiffe://x/y")
			c.URIs = []*url.URL{u}
		}), spec(func(s *api.CertificateSpec) { s.URIs = []string{"spiffe://x/y"} }), nil},
		{"emailAddresses", certFor(t, key, "web.example.com", []string{"web.example.com", "www.example.com"}, func(c *x509.Certificate) { c.EmailAddresses = []string{"a@example.com"} }),
			spec(), []string{"spec.emailAddresses"}},
		{"otherNames match", certFor(t, key, "web.example.com", []string{"web.example.com", "www.example.com"}, upn("u@example.com")),
			spec(func(s *api.CertificateSpec) {
				s.OtherNames = []api.OtherName{{OID: "1.3.6.1.4.1.311.20.2.3", UTF8Value: "u@example.com"}}
			}), nil},
		{"otherNames", certFor(t, key, "web.example.com", []string{"web.example.com", "www.example.com"}, upn("old@example.com")),
			spec(func(s *api.CertificateSpec) {
				s.OtherNames = []api.OtherName{{OID: "1.3.6.1.4.1.311.20.2.3", UTF8Value: "u@example.com"}}
			}), []string{"spec.otherNames"}},
		{"privateKey.algorithm", certFor(t, ec, "web.example.com", []string{"web.example.com", "www.example.com"}), spec(), []string{"spec.privateKey.algorithm"}},
		{"privateKey.size", certFor(t, key, "web.example.com", []string{"web.example.com", "www.example.com"}),
			spec(func(s *api.CertificateSpec) { s.PrivateKey = &api.CertificatePrivateKey{Size: 4096} }), []string{"spec.privateKey.size"}},
		{"nil certificate", nil, spec(), []string{"certificate"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CertificateMatchesSpec(tt.cert, tt.spec); !slices.Equal(got, tt.want) {
				t.Errorf("CertificateMatchesSpec() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestRenewalTime(t *testing.T) {
	nb := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name        string
		notBefore   time.Time
		lifetime    time.Duration
		renewBefore *api.Duration
		percentage  *int32
		want        time.Time
	}{
		{"default is 2/3 of the lifetime", nb, 90 * 24 * time.Hour, nil, nil, nb.Add(60 * 24 * time.Hour)},
		{"renewBefore shorter than the lifetime", nb, 720 * time.Hour, dur(240 * time.Hour), nil, nb.Add(480 * time.Hour)},
		{"renewBefore longer than the lifetime falls back to 2/3", nb, time.Hour, dur(2 * time.Hour), nil, nb.Add(40 * time.Minute)},
		{"renewBefore equal to the lifetime falls back to 2/3", nb, 3 * time.Hour, dur(3 * time.Hour), nil, nb.Add(2 * time.Hour)},
		{"zero renewBefore falls back", nb, 3 * time.Hour, dur(0), nil, nb.Add(2 * time.Hour)},
		{"renewBeforePercentage 25", nb, 100 * time.Hour, nil, int32Ptr(25), nb.Add(75 * time.Hour)},
		{"renewBeforePercentage 0 falls back", nb, 3 * time.Hour, nil, int32Ptr(0), nb.Add(2 * time.Hour)},
		{"renewBeforePercentage 100 falls back", nb, 3 * time.Hour, nil, int32Ptr(100), nb.Add(2 * time.Hour)},
		{"renewBefore wins over percentage", nb, 100 * time.Hour, dur(10 * time.Hour), int32Ptr(50), nb.Add(90 * time.Hour)},
		{"truncated to the second", nb.Add(500 * time.Millisecond), 3 * time.Second, nil, nil, nb.Add(2 * time.Second)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := RenewalTime(tt.notBefore, tt.notBefore.Add(tt.lifetime), tt.renewBefore, tt.percentage)
			if !got.Equal(tt.want) {
				t.Errorf("RenewalTime() = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestRequestedDuration(t *testing.T) {
	tests := []struct {
		name    string
		spec    api.CertificateRequestSpec
		want    time.Duration
		wantErr bool
	}{
		{"default", api.CertificateRequestSpec{}, DefaultCertificateDuration, false},
		{"duration", api.CertificateRequestSpec{Duration: dur(time.Hour)}, time.Hour, false},
		{"expirationSeconds", api.CertificateRequestSpec{ExpirationSeconds: int32Ptr(600)}, 10 * time.Minute, false},
		{"duration wins", api.CertificateRequestSpec{Duration: dur(time.Hour), ExpirationSeconds: int32Ptr(600)}, time.Hour, false},
		{"negative duration", api.CertificateRequestSpec{Duration: dur(-time.Hour)}, 0, true},
		{"zero expirationSeconds", api.CertificateRequestSpec{ExpirationSeconds: int32Ptr(0)}, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := RequestedDuration(&tt.spec)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("RequestedDuration() = %s, %v; want %s, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

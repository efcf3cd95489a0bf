package signers

import (
	"crypto"
	"crypto/x509"
	"errors"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/pki"
)

var now = time.Date(2025, 6, 1, 8, 30, 0, 0, time.UTC)

func mustKey(t *testing.T) crypto.Signer {
	t.Helper()
	k, err := pki.GenerateKey(&api.CertificatePrivateKey{Algorithm: api.ECDSAKeyAlgorithm})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// request builds a CertificateRequest whose CSR is made from the
// Certificate spec that csrSpec adjusts; reqSpec then adjusts the request.
func request(t *testing.T, key crypto.Signer, csrSpec func(*api.CertificateSpec), reqSpec func(*api.CertificateRequestSpec)) *api.CertificateRequest {
	t.Helper()
	crt := &api.Certificate{Spec: api.CertificateSpec{CommonName: "web.example.com", DNSNames: []string{"web.example.com"}}}
	if csrSpec != nil {
		csrSpec(&crt.Spec)
	}
	csr, err := pki.GenerateCSR(crt, key)
	if err != nil {
		t.Fatalf("GenerateCSR() error = %v", err)
	}
	cr := &api.CertificateRequest{
		ObjectMeta: api.ObjectMeta{Name: "web-1", Namespace: "team-a"},
		Spec:       api.CertificateRequestSpec{Request: csr, IsCA: crt.Spec.IsCA, Usages: crt.Spec.Usages, Duration: crt.Spec.Duration},
	}
	if reqSpec != nil {
		reqSpec(&cr.Spec)
	}
	return cr
}

func TestTemplateFromRequest(t *testing.T) {
	key := mustKey(t)
	tests := []struct {
		name    string
		csr     func(*api.CertificateSpec)
		req     func(*api.CertificateRequestSpec)
		check   func(t *testing.T, c *x509.Certificate)
		wantErr string
	}{
		{
			name: "defaults",
			check: func(t *testing.T, c *x509.Certificate) {
				if !c.NotBefore.Equal(now) || !c.NotAfter.Equal(now.Add(pki.DefaultCertificateDuration)) {
					t.Errorf("validity = %s..%s", c.NotBefore, c.NotAfter)
				}
				if c.KeyUsage != x509.KeyUsageDigitalSignature|x509.KeyUsageKeyEncipherment || len(c.ExtKeyUsage) != 0 {
					t.Errorf("usages = %#x %v", c.KeyUsage, c.ExtKeyUsage)
				}
				if !c.BasicConstraintsValid || c.IsCA {
					t.Errorf("basic constraints = valid %v, CA %v", c.BasicConstraintsValid, c.IsCA)
				}
				if c.SerialNumber.Sign() <= 0 || c.SerialNumber.Cmp(new(big.Int).Lsh(big.NewInt(1), 128)) >= 0 {
					t.Errorf("serial %s outside (0, 2^128)", c.SerialNumber)
				}
				if c.Subject.CommonName != "web.example.com" || !slices.Equal(c.DNSNames, []string{"web.example.com"}) {
					t.Errorf("names = %q %v", c.Subject.CommonName, c.DNSNames)
				}
				if !pki.PublicKeysEqual(c.PublicKey, key.Public()) {
					t.Error("public key is not the CSR's")
				}
				if len(c.ExtraExtensions) != 1 || !c.ExtraExtensions[0].Id.Equal(pki.OIDExtensionSubjectAltName) || c.ExtraExtensions[0].Critical {
					t.Errorf("extra extensions = %+v, want the non-critical SAN", c.ExtraExtensions)
				}
			},
		},
		{
			name: "usages, isCA and name constraints from the request",
			csr: func(s *api.CertificateSpec) {
				s.IsCA = true
				s.Usages = []api.KeyUsage{"digital signature", "server auth"}
				s.NameConstraints = &api.NameConstraints{Permitted: &api.NameConstraintItem{DNSDomains: []string{"example.com"}}}
			},
			check: func(t *testing.T, c *x509.Certificate) {
				if !c.IsCA || c.KeyUsage != x509.KeyUsageDigitalSignature|x509.KeyUsageCertSign || !slices.Equal(c.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}) {
					t.Errorf("CA %v usages %#x %v", c.IsCA, c.KeyUsage, c.ExtKeyUsage)
				}
				if len(c.ExtraExtensions) != 2 || !c.ExtraExtensions[1].Id.Equal(pki.OIDExtensionNameConstraints) {
					t.Errorf("extra extensions = %+v, want SAN and nameConstraints", c.ExtraExtensions)
				}
			},
		},
		{
			name: "usages not encoded in the CSR come from the request",
			csr:  func(s *api.CertificateSpec) { s.EncodeUsagesInRequest = new(bool) },
			req:  func(s *api.CertificateRequestSpec) { s.Usages = []api.KeyUsage{"client auth"} },
			check: func(t *testing.T, c *x509.Certificate) {
				if c.KeyUsage != 0 || !slices.Equal(c.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}) {
					t.Errorf("usages = %#x %v", c.KeyUsage, c.ExtKeyUsage)
				}
			},
		},
		{
			name: "empty subject: SAN critical",
			csr:  func(s *api.CertificateSpec) { s.CommonName = "" },
			check: func(t *testing.T, c *x509.Certificate) {
				if len(c.ExtraExtensions) != 1 || !c.ExtraExtensions[0].Critical {
					t.Errorf("SAN = %+v, want critical", c.ExtraExtensions)
				}
			},
		},
		{
			name: "expirationSeconds",
			req:  func(s *api.CertificateRequestSpec) { s.ExpirationSeconds = new(int32(900)) },
			check: func(t *testing.T, c *x509.Certificate) {
				if c.NotAfter.Sub(c.NotBefore) != 15*time.Minute {
					t.Errorf("lifetime = %s, want 15m", c.NotAfter.Sub(c.NotBefore))
				}
			},
		},
		{name: "garbage CSR", req: func(s *api.CertificateRequestSpec) { s.Request = []byte("nope") }, wantErr: "spec.request"},
		{name: "CSR usages differ from the request", csr: func(s *api.CertificateSpec) { s.Usages = []api.KeyUsage{"server auth"} },
			req: func(s *api.CertificateRequestSpec) { s.Usages = []api.KeyUsage{"client auth"} }, wantErr: "extended key usages do not match"},
		{name: "CSR key usage differs", csr: func(s *api.CertificateSpec) { s.Usages = []api.KeyUsage{"digital signature"} },
			req: func(s *api.CertificateRequestSpec) { s.Usages = []api.KeyUsage{"key encipherment"} }, wantErr: "keyUsage"},
		{name: "CSR CA bit differs", csr: func(s *api.CertificateSpec) { s.IsCA, s.EncodeUsagesInRequest = true, new(bool) },
			req: func(s *api.CertificateRequestSpec) { s.IsCA = false }, wantErr: "basicConstraints CA=true does not match spec.isCA=false"},
		{name: "unknown usage", req: func(s *api.CertificateRequestSpec) { s.Usages = []api.KeyUsage{"x"} }, wantErr: `spec.usages[0]: "x"`},
		{name: "negative duration", req: func(s *api.CertificateRequestSpec) { s.Duration = api.NewDuration(-time.Hour) }, wantErr: "spec.duration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cr := request(t, key, tt.csr, tt.req)
			c, err := TemplateFromRequest(cr, now)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("TemplateFromRequest() error = %v, want containing %q", err, tt.wantErr)
				}
				if !errs.IsPermanent(err) {
					t.Errorf("error %v is not permanent", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("TemplateFromRequest() error = %v", err)
			}
			tt.check(t, c)
		})
	}
	if _, err := TemplateFromRequest(nil, now); !errs.IsPermanent(err) {
		t.Errorf("nil request: error = %v, want permanent", err)
	}
}

func issuerWith(annotations map[string]string) *api.Issuer {
	return &api.Issuer{
		TypeMeta:   api.TypeMeta{Kind: api.KindIssuer},
		ObjectMeta: api.ObjectMeta{Name: "ca", Namespace: "team-a", Annotations: annotations},
	}
}

func TestLifetime(t *testing.T) {
	tests := []struct {
		name         string
		requested    time.Duration
		annotations  map[string]string
		limit        time.Time
		wantHonoured time.Duration
		wantNotReady bool
	}{
		{"no maximum", 90 * 24 * time.Hour, nil, time.Time{}, 90 * 24 * time.Hour, false},
		{"maximum shorter", 90 * 24 * time.Hour, map[string]string{api.AnnotationMaxDuration: "720h"}, time.Time{}, 720 * time.Hour, false},
		{"maximum longer", time.Hour, map[string]string{api.AnnotationMaxDuration: "720h"}, time.Time{}, time.Hour, false},
		{"limit earlier", 90 * 24 * time.Hour, nil, now.Add(48 * time.Hour), 48 * time.Hour, false},
		{"limit and maximum: the earlier wins", 90 * 24 * time.Hour, map[string]string{api.AnnotationMaxDuration: "24h"}, now.Add(48 * time.Hour), 24 * time.Hour, false},
		{"bad maximum", time.Hour, map[string]string{api.AnnotationMaxDuration: "a month"}, time.Time{}, 0, true},
		{"zero maximum", time.Hour, map[string]string{api.AnnotationMaxDuration: "0s"}, time.Time{}, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl := &x509.Certificate{NotBefore: now, NotAfter: now.Add(tt.requested)}
			req, hon, err := Lifetime(tmpl, issuerWith(tt.annotations), tt.limit)
			if tt.wantNotReady {
				if !errors.Is(err, ErrIssuerNotReady) || errs.IsPermanent(err) {
					t.Fatalf("Lifetime() error = %v, want transient ErrIssuerNotReady", err)
				}
				return
			}
			if err != nil || req != tt.requested || hon != tt.wantHonoured || !tmpl.NotAfter.Equal(now.Add(tt.wantHonoured)) {
				t.Errorf("Lifetime() = %s, %s, %v (notAfter %s); want %s, %s", req, hon, err, tmpl.NotAfter, tt.requested, tt.wantHonoured)
			}
		})
	}
}

func TestIssuerLabel(t *testing.T) {
	tests := []struct {
		name   string
		issuer api.GenericIssuer
		want   string
	}{
		{"issuer", issuerWith(nil), "Issuer/team-a/ca"},
		{"issuer without TypeMeta", &api.Issuer{ObjectMeta: api.ObjectMeta{Name: "x", Namespace: "ns"}}, "Issuer/ns/x"},
		{"cluster issuer without TypeMeta", &api.ClusterIssuer{ObjectMeta: api.ObjectMeta{Name: "root"}}, "ClusterIssuer/root"},
		{"nil", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IssuerLabel(tt.issuer); got != tt.want {
				t.Errorf("IssuerLabel() = %q, want %q", got, tt.want)
			}
		})
	}
}

package validation

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
)

func ptr[T any](v T) *T { return &v }

// cert returns a valid Certificate changed by fns.
func cert(fns ...func(*api.Certificate)) *api.Certificate {
	c := &api.Certificate{
		TypeMeta:   api.TypeMeta{APIVersion: api.CertManagerV1, Kind: api.KindCertificate},
		ObjectMeta: api.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: api.CertificateSpec{
			SecretName: "web-tls",
			DNSNames:   []string{"example.com", "*.example.com"},
			IssuerRef:  api.IssuerReference{Name: "letsencrypt", Kind: api.KindClusterIssuer},
		},
	}
	for _, f := range fns {
		f(c)
	}
	return c
}

var (
	csrOnce sync.Once
	csrPEM  []byte
)

// testCSR returns a PEM CSR signed by a fresh ECDSA key.
func testCSR(t testing.TB) []byte {
	t.Helper()
	csrOnce.Do(func() {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			panic(err)
		}
		der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
			Subject: pkix.Name{CommonName: "example.com"}, DNSNames: []string{"example.com"},
		}, key)
		if err != nil {
			panic(err)
		}
		csrPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
	})
	return append([]byte(nil), csrPEM...)
}

// cr returns a valid CertificateRequest changed by fns.
func cr(t testing.TB, fns ...func(*api.CertificateRequest)) *api.CertificateRequest {
	r := &api.CertificateRequest{
		TypeMeta:   api.TypeMeta{APIVersion: api.CertManagerV1, Kind: api.KindCertificateRequest},
		ObjectMeta: api.ObjectMeta{Name: "web-1", Namespace: "default"},
		Spec: api.CertificateRequestSpec{
			Request:   testCSR(t),
			IssuerRef: api.IssuerReference{Name: "ca", Kind: api.KindIssuer, Group: api.CertManagerGroup},
			Usages:    []api.KeyUsage{api.UsageDigitalSignature, api.UsageServerAuth},
		},
	}
	for _, f := range fns {
		f(r)
	}
	return r
}

// issuer returns a valid ACME Issuer changed by fns.
func issuer(fns ...func(*api.Issuer)) *api.Issuer {
	i := &api.Issuer{
		TypeMeta:   api.TypeMeta{APIVersion: api.CertManagerV1, Kind: api.KindIssuer},
		ObjectMeta: api.ObjectMeta{Name: "letsencrypt", Namespace: "default"},
		Spec: api.IssuerSpec{ACME: &api.ACMEIssuer{
			Server:              "https://acme-v02.api.letsencrypt.org/directory",
			Email:               "ops@example.com",
			PrivateKeySecretRef: api.SecretKeySelector{LocalObjectReference: api.LocalObjectReference{Name: "acme-key"}},
			Solvers: []api.ACMEChallengeSolver{
				{HTTP01: &api.ACMEChallengeSolverHTTP01{}},
				{DNS01: &api.ACMEChallengeSolverDNS01{RFC2136: &api.ACMEIssuerDNS01ProviderRFC2136{Nameserver: "10.0.0.1:53"}}},
			},
		}},
	}
	for _, f := range fns {
		f(i)
	}
	return i
}

type row struct {
	name string
	obj  api.Object
	path string // "" means valid
	rule string // substring of the rule, optional
}

func runRows(t *testing.T, rows []row) {
	t.Helper()
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			errs := Object(tc.obj)
			if tc.path == "" {
				if len(errs) != 0 {
					t.Fatalf("want valid, got:\n%v", errs)
				}
				return
			}
			for _, e := range errs {
				if e.Path == tc.path && strings.Contains(e.Rule, tc.rule) {
					return
				}
			}
			t.Fatalf("want an error at %s containing %q, got:\n%v", tc.path, tc.rule, errs)
		})
	}
}

func TestMetadata(t *testing.T) {
	runRows(t, []row{
		{"valid", cert(), "", ""},
		{"name required", cert(func(c *api.Certificate) { c.Name = "" }), "metadata.name", "required"},
		{"generateName allowed", cert(func(c *api.Certificate) { c.Name, c.GenerateName = "", "web-" }), "", ""},
		{"name upper case", cert(func(c *api.Certificate) { c.Name = "Web" }), "metadata.name", "DNS-1123 subdomain"},
		{"name too long", cert(func(c *api.Certificate) { c.Name = strings.Repeat("a", 254) }), "metadata.name", "253"},
		{"name with dots ok", cert(func(c *api.Certificate) { c.Name = "web.example.com" }), "", ""},
		{"namespace required", cert(func(c *api.Certificate) { c.Namespace = "" }), "metadata.namespace", "required"},
		{"namespace with dot", cert(func(c *api.Certificate) { c.Namespace = "team.a" }), "metadata.namespace", "DNS-1123 label"},
		{"namespace too long", cert(func(c *api.Certificate) { c.Namespace = strings.Repeat("a", 64) }), "metadata.namespace", "63"},
		{"cluster-scoped with namespace", &api.ClusterIssuer{
			ObjectMeta: api.ObjectMeta{Name: "ca", Namespace: "x"},
			Spec:       api.IssuerSpec{SelfSigned: &api.SelfSignedIssuer{}},
		}, "metadata.namespace", "cluster-scoped"},
	})
}

func TestObjectUnknownType(t *testing.T) {
	type widget struct {
		api.TypeMeta
		api.ObjectMeta
	}
	w := &widget{TypeMeta: api.TypeMeta{Kind: "Widget"}, ObjectMeta: api.ObjectMeta{Name: "Bad_Name", Namespace: "default"}}
	errs := Object(w)
	if len(errs) != 1 || errs[0].Path != "metadata.name" {
		t.Errorf("Object(unknown kind) = %v, want only a metadata.name error", errs)
	}
	w.Name = "good"
	if errs := Object(w); len(errs) != 0 {
		t.Errorf("Object(valid unknown kind) = %v", errs)
	}
}

func TestCertificate(t *testing.T) {
	type C = api.Certificate
	runRows(t, []row{
		{"valid minimal", cert(), "", ""},
		{"valid full", cert(func(c *C) {
			c.Spec.CommonName = "example.com"
			c.Spec.IPAddresses = []string{"10.0.0.1", "2001:db8::1"}
			c.Spec.URIs = []string{"spiffe://cluster.local/ns/default/sa/web"}
			c.Spec.EmailAddresses = []string{"ops@example.com"}
			c.Spec.OtherNames = []api.OtherName{{OID: "1.3.6.1.4.1.311.20.2.3", UTF8Value: "upn@example.com"}}
			c.Spec.Duration = api.NewDuration(24 * time.Hour)
			c.Spec.RenewBefore = api.NewDuration(8 * time.Hour)
			c.Spec.PrivateKey = &api.CertificatePrivateKey{Algorithm: api.ECDSAKeyAlgorithm, Size: 384, Encoding: api.PKCS8, RotationPolicy: api.RotationPolicyNever}
			c.Spec.SignatureAlgorithm = api.SignatureECDSAWithSHA384
			c.Spec.Usages = []api.KeyUsage{api.UsageServerAuth, api.UsageClientAuth}
			c.Spec.RevisionHistoryLimit = ptr(int32(3))
			c.Spec.Keystores = &api.CertificateKeystores{
				JKS:    &api.JKSKeystore{Create: true, Password: ptr("changeit")},
				PKCS12: &api.PKCS12Keystore{Create: true, Profile: api.Modern2023PKCS12Profile, PasswordSecretRef: api.SecretKeySelector{LocalObjectReference: api.LocalObjectReference{Name: "p12"}}},
			}
			c.Spec.AdditionalOutputFormats = []api.CertificateAdditionalOutputFormat{{Type: api.CertificateOutputFormatDER}, {Type: api.CertificateOutputFormatCombinedPEM}}
		}), "", ""},
		{"valid CA with name constraints", cert(func(c *C) {
			c.Spec.IsCA = true
			c.Spec.NameConstraints = &api.NameConstraints{Critical: true, Permitted: &api.NameConstraintItem{
				DNSDomains: []string{".example.com"}, IPRanges: []string{"10.0.0.0/8"}, EmailAddresses: []string{"example.com"}, URIDomains: []string{"example.com"}}}
		}), "", ""},
		{"valid literal subject", cert(func(c *C) { c.Spec.LiteralSubject = `CN=app, O=Example\, Inc.+OU=ops,1.2.3.4=#0403616263,C=US` }), "", ""},

		{"secretName required", cert(func(c *C) { c.Spec.SecretName = "" }), "spec.secretName", "required"},
		{"secretName syntax", cert(func(c *C) { c.Spec.SecretName = "Web TLS" }), "spec.secretName", "DNS-1123"},
		{"issuerRef.name required", cert(func(c *C) { c.Spec.IssuerRef.Name = "" }), "spec.issuerRef.name", "required"},
		{"issuerRef.kind unknown", cert(func(c *C) { c.Spec.IssuerRef.Kind = "Vault" }), "spec.issuerRef.kind", "Issuer or ClusterIssuer"},
		{"issuerRef external group any kind", cert(func(c *C) { c.Spec.IssuerRef.Kind, c.Spec.IssuerRef.Group = "AWSPCAIssuer", "awspca.cert-manager.io" }), "", ""},
		{"identity required", cert(func(c *C) { c.Spec.DNSNames = nil }), "spec", "at least one of"},
		{"commonName alone is identity", cert(func(c *C) { c.Spec.DNSNames, c.Spec.CommonName = nil, "example.com" }), "", ""},
		{"literalSubject alone is identity", cert(func(c *C) { c.Spec.DNSNames, c.Spec.LiteralSubject = nil, "CN=x" }), "", ""},
		{"otherNames alone is identity", cert(func(c *C) { c.Spec.DNSNames, c.Spec.OtherNames = nil, []api.OtherName{{OID: "1.2.3", UTF8Value: "v"}} }), "", ""},

		{"dns name double dot", cert(func(c *C) { c.Spec.DNSNames = []string{"ok.com", "a..b"} }), "spec.dnsNames[1]", "empty label"},
		{"dns name inner wildcard", cert(func(c *C) { c.Spec.DNSNames = []string{"a.*.example.com"} }), "spec.dnsNames[0]", "wildcard"},
		{"dns name bare wildcard", cert(func(c *C) { c.Spec.DNSNames = []string{"*"} }), "spec.dnsNames[0]", "wildcard"},
		{"dns name space", cert(func(c *C) { c.Spec.DNSNames = []string{"exa mple.com"} }), "spec.dnsNames[0]", "not allowed"},
		{"dns name trailing dot", cert(func(c *C) { c.Spec.DNSNames = []string{"example.com."} }), "spec.dnsNames[0]", "dot"},
		{"dns label longer than 63 accepted (as cert-manager; refused at approval)", cert(func(c *C) { c.Spec.DNSNames = []string{strings.Repeat("a", 64) + ".com"} }), "", ""},
		{"dns long label with a bad character", cert(func(c *C) { c.Spec.DNSNames = []string{strings.Repeat("a", 64) + "!.com"} }), "spec.dnsNames[0]", "not allowed"},
		{"dns label hyphen", cert(func(c *C) { c.Spec.DNSNames = []string{"-a.com"} }), "spec.dnsNames[0]", "'-'"},
		{"ip invalid", cert(func(c *C) { c.Spec.IPAddresses = []string{"10.0.0.256"} }), "spec.ipAddresses[0]", "invalid IP"},
		{"uri relative accepted (as cert-manager; refused at approval)", cert(func(c *C) { c.Spec.URIs = []string{"/just/a/path"} }), "", ""},
		{"uri with user info", cert(func(c *C) { c.Spec.URIs = []string{"user@host/x"} }), "spec.uris[0]", "user info"},
		{"email with name", cert(func(c *C) { c.Spec.EmailAddresses = []string{"Ops <ops@example.com>"} }), "spec.emailAddresses[0]", "bare address"},
		{"email invalid", cert(func(c *C) { c.Spec.EmailAddresses = []string{"not-an-email"} }), "spec.emailAddresses[0]", "invalid email"},
		{"commonName too long", cert(func(c *C) { c.Spec.CommonName = strings.Repeat("a", 65) }), "spec.commonName", "64"},
		{"commonName 64 runes ok", cert(func(c *C) { c.Spec.CommonName = strings.Repeat("é", 64) }), "", ""},
		// the names the approval step denies in a CSR (pki.CheckCSRNames) are refused here first
		{"dns name underscore", cert(func(c *C) { c.Spec.DNSNames = []string{"under_score.example.com"} }), "spec.dnsNames[0]", "cannot hold ('_')"},
		{"dns name bad A-label", cert(func(c *C) { c.Spec.DNSNames = []string{"xn--zz.example.com"} }), "spec.dnsNames[0]", "IDNA A-label"},
		{"dns name A-label ok", cert(func(c *C) { c.Spec.DNSNames = []string{"xn--bcher-kva.example", "*.example.com"} }), "", ""},
		{"uri user info", cert(func(c *C) { c.Spec.URIs = []string{"https://admin@example.com/"} }), "spec.uris[0]", "user info"},
		{"uri ok", cert(func(c *C) { c.Spec.URIs = []string{"spiffe://example.com/ns/a/sa/web"} }), "", ""},
		{"email domain with '/'", cert(func(c *C) { c.Spec.EmailAddresses = []string{"x@evil.org/.example.com"} }), "spec.emailAddresses[0]", "domain contains a character a DNS name cannot hold ('/')"},
		{"commonName host name with '/'", cert(func(c *C) { c.Spec.CommonName = "evil.org/.example.com" }), "spec.commonName", "is read as a host name"},
		{"commonName control character", cert(func(c *C) { c.Spec.CommonName = "evil\x00name" }), "spec.commonName", "control character (NUL)"},
		{"commonName organisation ok", cert(func(c *C) { c.Spec.CommonName = "Example Inc. Root CA" }), "", ""},

		{"renewBefore with percentage", cert(func(c *C) {
			c.Spec.RenewBefore, c.Spec.RenewBeforePercentage = api.NewDuration(time.Hour), ptr(int32(20))
		}), "spec.renewBefore", "renewBeforePercentage"},
		{"literalSubject with subject", cert(func(c *C) {
			c.Spec.LiteralSubject, c.Spec.Subject = "CN=x", &api.X509Subject{Organizations: []string{"o"}}
		}), "spec.subject", "literalSubject"},
		{"literalSubject with commonName", cert(func(c *C) { c.Spec.LiteralSubject, c.Spec.CommonName = "CN=x", "x" }), "spec.commonName", "literalSubject"},
		{"duration below minimum", cert(func(c *C) { c.Spec.Duration = api.NewDuration(599 * time.Second) }), "spec.duration", "at least 10m0s"},
		{"duration at minimum", cert(func(c *C) { c.Spec.Duration = api.NewDuration(600 * time.Second) }), "", ""},
		{"renewBefore zero", cert(func(c *C) { c.Spec.RenewBefore = api.NewDuration(0) }), "spec.renewBefore", "at least 5m"},
		{"renewBefore negative", cert(func(c *C) { c.Spec.RenewBefore = api.NewDuration(-time.Hour) }), "spec.renewBefore", "at least 5m"},
		{"renewBefore not below duration", cert(func(c *C) {
			c.Spec.Duration, c.Spec.RenewBefore = api.NewDuration(time.Hour), api.NewDuration(time.Hour)
		}), "spec.renewBefore", "shorter than the duration"},
		{"renewBefore vs default duration", cert(func(c *C) { c.Spec.RenewBefore = api.NewDuration(91 * 24 * time.Hour) }), "spec.renewBefore", "2160h"},
		{"renewBeforePercentage 0", cert(func(c *C) { c.Spec.RenewBeforePercentage = ptr(int32(0)) }), "spec.renewBeforePercentage", "shorter than the duration"},
		{"renewBeforePercentage 100", cert(func(c *C) { c.Spec.RenewBeforePercentage = ptr(int32(100)) }), "spec.renewBeforePercentage", "renewBefore of at least 5m"},
		{"renewBeforePercentage 99", cert(func(c *C) { c.Spec.RenewBeforePercentage = ptr(int32(99)) }), "", ""},
		// A renewal point that leaves too little lifetime re-issues in a loop:
		// duration - renewBefore must be at least max(5m, duration/10).
		{"renewBefore one second before the duration", cert(func(c *C) {
			c.Spec.Duration, c.Spec.RenewBefore = api.NewDuration(10*time.Minute), api.NewDuration(10*time.Minute-time.Second)
		}), "spec.renewBefore", "leaves 1s between issuance and renewal with a duration of 10m0s; duration - renewBefore must be at least max(5m, duration/10) = 5m0s, so renewBefore may be at most 5m0s"},
		{"renewBefore leaves 5m of 10m", cert(func(c *C) {
			c.Spec.Duration, c.Spec.RenewBefore = api.NewDuration(10*time.Minute), api.NewDuration(5*time.Minute)
		}), "", ""},
		{"renewBefore leaves less than a tenth of the duration", cert(func(c *C) {
			c.Spec.Duration, c.Spec.RenewBefore = api.NewDuration(100*time.Hour), api.NewDuration(91*time.Hour)
		}), "spec.renewBefore", "at least max(5m, duration/10) = 10h0m0s, so renewBefore may be at most 90h0m0s"},
		{"renewBefore leaves a tenth of the duration", cert(func(c *C) {
			c.Spec.Duration, c.Spec.RenewBefore = api.NewDuration(100*time.Hour), api.NewDuration(90*time.Hour)
		}), "", ""},
		{"renewBefore vs default duration leaves too little", cert(func(c *C) { c.Spec.RenewBefore = api.NewDuration(2000 * time.Hour) }),
			"spec.renewBefore", "duration of 2160h0m0s; duration - renewBefore must be at least max(5m, duration/10) = 216h0m0s"},
		{"renewBeforePercentage leaving 3m of 10m", cert(func(c *C) {
			c.Spec.Duration, c.Spec.RenewBeforePercentage = api.NewDuration(10*time.Minute), ptr(int32(70))
		}), "spec.renewBeforePercentage", "it leaves 3m0s between issuance and renewal with a duration of 10m0s, at least 5m0s is required"},

		{"rsa size small", cert(func(c *C) { c.Spec.PrivateKey = &api.CertificatePrivateKey{Algorithm: api.RSAKeyAlgorithm, Size: 1024} }), "spec.privateKey.size", "2048 and 8192"},
		{"rsa size large", cert(func(c *C) { c.Spec.PrivateKey = &api.CertificatePrivateKey{Size: 16384} }), "spec.privateKey.size", "2048 and 8192"},
		{"rsa 3072 ok", cert(func(c *C) { c.Spec.PrivateKey = &api.CertificatePrivateKey{Algorithm: api.RSAKeyAlgorithm, Size: 3072} }), "", ""},
		{"ecdsa size", cert(func(c *C) {
			c.Spec.PrivateKey = &api.CertificatePrivateKey{Algorithm: api.ECDSAKeyAlgorithm, Size: 512}
		}), "spec.privateKey.size", "256, 384 or 521"},
		{"ed25519 size accepted", cert(func(c *C) {
			c.Spec.PrivateKey = &api.CertificatePrivateKey{Algorithm: api.Ed25519KeyAlgorithm, Size: 256}
		}), "", ""}, // ignored, as cert-manager (pki.GenerateKey ignores it too)
		{"ed25519 ok", cert(func(c *C) {
			c.Spec.PrivateKey = &api.CertificatePrivateKey{Algorithm: api.Ed25519KeyAlgorithm}
			c.Spec.SignatureAlgorithm = api.SignaturePureEd25519
		}), "", ""},
		{"unknown algorithm", cert(func(c *C) { c.Spec.PrivateKey = &api.CertificatePrivateKey{Algorithm: "DSA"} }), "spec.privateKey.algorithm", "unknown"},
		{"unknown encoding", cert(func(c *C) { c.Spec.PrivateKey = &api.CertificatePrivateKey{Encoding: "DER"} }), "spec.privateKey.encoding", "unknown"},
		{"unknown rotationPolicy", cert(func(c *C) { c.Spec.PrivateKey = &api.CertificatePrivateKey{RotationPolicy: "Sometimes"} }), "spec.privateKey.rotationPolicy", "unknown"},
		{"unknown signatureAlgorithm", cert(func(c *C) { c.Spec.SignatureAlgorithm = "MD5WithRSA" }), "spec.signatureAlgorithm", "unknown"},
		{"signature needs ECDSA key", cert(func(c *C) { c.Spec.SignatureAlgorithm = api.SignatureECDSAWithSHA256 }), "spec.signatureAlgorithm", "needs a ECDSA key, but the private key algorithm is RSA"},
		{"signature needs RSA key", cert(func(c *C) {
			c.Spec.PrivateKey = &api.CertificatePrivateKey{Algorithm: api.ECDSAKeyAlgorithm}
			c.Spec.SignatureAlgorithm = api.SignatureSHA512WithRSA
		}), "spec.signatureAlgorithm", "needs a RSA key"},
		{"unknown usage", cert(func(c *C) { c.Spec.Usages = []api.KeyUsage{api.UsageServerAuth, "serverAuth"} }), "spec.usages[1]", "unknown usage"},

		{"nameConstraints without isCA", cert(func(c *C) {
			c.Spec.NameConstraints = &api.NameConstraints{Permitted: &api.NameConstraintItem{DNSDomains: []string{"example.com"}}}
		}), "spec.nameConstraints", "isCA"},
		{"nameConstraints empty", cert(func(c *C) { c.Spec.IsCA, c.Spec.NameConstraints = true, &api.NameConstraints{} }), "spec.nameConstraints", "permitted or excluded"},
		{"nameConstraints bad CIDR", cert(func(c *C) {
			c.Spec.IsCA = true
			c.Spec.NameConstraints = &api.NameConstraints{Excluded: &api.NameConstraintItem{IPRanges: []string{"10.0.0.1"}}}
		}), "spec.nameConstraints.excluded.ipRanges[0]", "CIDR"},

		{"jks both passwords", cert(func(c *C) {
			c.Spec.Keystores = &api.CertificateKeystores{JKS: &api.JKSKeystore{Create: true, Password: ptr("x"),
				PasswordSecretRef: api.SecretKeySelector{LocalObjectReference: api.LocalObjectReference{Name: "s"}}}}
		}), "spec.keystores.jks", "only one of"},
		{"jks no password", cert(func(c *C) { c.Spec.Keystores = &api.CertificateKeystores{JKS: &api.JKSKeystore{Create: true}} }), "spec.keystores.jks", "one of password"},
		{"pkcs12 empty password", cert(func(c *C) {
			c.Spec.Keystores = &api.CertificateKeystores{PKCS12: &api.PKCS12Keystore{Create: true, Password: ptr("")}}
		}), "spec.keystores.pkcs12.password", "empty"},
		{"pkcs12 unknown profile", cert(func(c *C) {
			c.Spec.Keystores = &api.CertificateKeystores{PKCS12: &api.PKCS12Keystore{Create: true, Password: ptr("x"), Profile: "Modern2025"}}
		}), "spec.keystores.pkcs12.profile", "unknown"},
		{"output format unknown", cert(func(c *C) {
			c.Spec.AdditionalOutputFormats = []api.CertificateAdditionalOutputFormat{{Type: "PFX"}}
		}), "spec.additionalOutputFormats[0].type", "unknown"},
		{"output format duplicate", cert(func(c *C) {
			c.Spec.AdditionalOutputFormats = []api.CertificateAdditionalOutputFormat{{Type: "DER"}, {Type: "DER"}}
		}), "spec.additionalOutputFormats[type]", "duplicate"},
		{"otherName bad oid", cert(func(c *C) { c.Spec.OtherNames = []api.OtherName{{OID: "1.3.x", UTF8Value: "v"}} }), "spec.otherNames[0].oid", "object identifier"},
		{"otherName oid one arc", cert(func(c *C) { c.Spec.OtherNames = []api.OtherName{{OID: "1", UTF8Value: "v"}} }), "spec.otherNames[0].oid", "object identifier"},
		{"otherName oid first arc", cert(func(c *C) { c.Spec.OtherNames = []api.OtherName{{OID: "3.1", UTF8Value: "v"}} }), "spec.otherNames[0].oid", "first arc"},
		{"otherName oid required", cert(func(c *C) { c.Spec.OtherNames = []api.OtherName{{UTF8Value: "v"}} }), "spec.otherNames[0].oid", "required"},
		{"otherName value required", cert(func(c *C) { c.Spec.OtherNames = []api.OtherName{{OID: "1.2.3"}} }), "spec.otherNames[0].utf8Value", "required"},
		{"revisionHistoryLimit 0", cert(func(c *C) { c.Spec.RevisionHistoryLimit = ptr(int32(0)) }), "spec.revisionHistoryLimit", "at least 1"},
		{"literalSubject bad syntax", cert(func(c *C) { c.Spec.LiteralSubject = "CN=x,,O=y" }), "spec.literalSubject", "RFC 4514"},
	})
}

// TestLiteralSubject checks that spec.literalSubject is parsed with the
// same parser the CSR is built with (pki.ParseLiteralSubject; its own tests
// cover the grammar) and that failures land on the field.
func TestLiteralSubject(t *testing.T) {
	lit := func(s string) *api.Certificate {
		return cert(func(c *api.Certificate) { c.Spec.LiteralSubject = s })
	}
	runRows(t, []row{
		{"simple", lit("CN=example.com,O=Example,C=US"), "", ""},
		{"escapes and multi-valued RDN", lit(`CN=James \"Jim\" Smith\, III+UID=jsmith,DC=example,DC=net`), "", ""},
		{"hex value and OID type", lit(`1.3.6.1.4.1.1466.0=#04024869,DC=example`), "", ""},
		{"no equals", lit("example.com"), "spec.literalSubject", "RFC 4514"},
		{"empty RDN", lit("CN=x,,O=y"), "spec.literalSubject", "RFC 4514"},
		{"unknown type", lit("FOO=bar"), "spec.literalSubject", "unknown attribute type"},
		{"bad escape", lit(`CN=a\zz`), "spec.literalSubject", "RFC 4514"},
	})
}

func TestCertificateRequest(t *testing.T) {
	type R = api.CertificateRequest
	runRows(t, []row{
		{"valid", cr(t), "", ""},
		{"valid with durations", cr(t, func(r *R) { r.Spec.Duration, r.Spec.ExpirationSeconds = api.NewDuration(time.Hour), ptr(int32(3600)) }), "", ""},
		{"request empty", cr(t, func(r *R) { r.Spec.Request = nil }), "spec.request", "must be specified"},
		{"request not PEM", cr(t, func(r *R) { r.Spec.Request = []byte("hello") }), "spec.request", "not PEM"},
		{"request bad signature", cr(t, func(r *R) {
			b, _ := pem.Decode(r.Spec.Request)
			b.Bytes[len(b.Bytes)-5] ^= 0xff
			r.Spec.Request = pem.EncodeToMemory(b)
		}), "spec.request", ""},
		{"issuerRef.name required", cr(t, func(r *R) { r.Spec.IssuerRef.Name = "" }), "spec.issuerRef.name", "required"},
		{"duration below minimum", cr(t, func(r *R) { r.Spec.Duration = api.NewDuration(5 * time.Minute) }), "spec.duration", "at least"},
		{"expirationSeconds below minimum", cr(t, func(r *R) { r.Spec.ExpirationSeconds = ptr(int32(599)) }), "spec.expirationSeconds", "at least 600"},
		{"expirationSeconds at minimum", cr(t, func(r *R) { r.Spec.ExpirationSeconds = ptr(int32(600)) }), "", ""},
		{"duration and expirationSeconds differ", cr(t, func(r *R) { r.Spec.Duration, r.Spec.ExpirationSeconds = api.NewDuration(time.Hour), ptr(int32(7200)) }), "spec.expirationSeconds", "must equal duration"},
		{"unknown usage", cr(t, func(r *R) { r.Spec.Usages = []api.KeyUsage{"clientAuth"} }), "spec.usages[0]", "unknown usage"},
		{"metadata checked", cr(t, func(r *R) { r.Namespace = "" }), "metadata.namespace", "required"},
	})
}

func TestCertificateRequestErrorsNeverEchoTheRequest(t *testing.T) {
	secret := "-----BEGIN CERTIFICATE REQUEST-----\nc2VjcmV0LXZhbHVl\n-----END CERTIFICATE REQUEST-----\n"
	errs := Object(cr(t, func(r *api.CertificateRequest) { r.Spec.Request = []byte(secret) }))
	if !errs.Has("spec.request") || strings.Contains(errs.Error(), "c2VjcmV0") {
		t.Errorf("errors = %v", errs)
	}
}

func TestCertificateRequestUpdate(t *testing.T) {
	type R = api.CertificateRequest
	cases := []struct {
		name  string
		fn    func(*R)
		paths []string
	}{
		{"no change", func(r *R) {}, nil},
		{"metadata and status may change", func(r *R) {
			r.Labels = map[string]string{"a": "b"}
			r.Status.Certificate = []byte("x")
			r.Status.Conditions = []api.Condition{{Type: "Ready", Status: api.ConditionTrue}}
		}, nil},
		{"usages emptied", func(r *R) { r.Spec.Usages = []api.KeyUsage{} }, []string{"spec.usages"}},
		{"request", func(r *R) { r.Spec.Request = append(r.Spec.Request, '\n') }, []string{"spec.request"}},
		{"issuer name and kind", func(r *R) { r.Spec.IssuerRef.Name, r.Spec.IssuerRef.Kind = "other", "ClusterIssuer" }, []string{"spec.issuerRef.name", "spec.issuerRef.kind"}},
		{"duration set", func(r *R) { r.Spec.Duration = api.NewDuration(time.Hour) }, []string{"spec.duration"}},
		{"expirationSeconds set", func(r *R) { r.Spec.ExpirationSeconds = ptr(int32(600)) }, []string{"spec.expirationSeconds"}},
		{"isCA", func(r *R) { r.Spec.IsCA = true }, []string{"spec.isCA"}},
		{"usage element", func(r *R) { r.Spec.Usages[1] = api.UsageClientAuth }, []string{"spec.usages[1]"}},
		{"usage added", func(r *R) { r.Spec.Usages = append(r.Spec.Usages, api.UsageClientAuth) }, []string{"spec.usages"}},
		{"identity", func(r *R) {
			r.Spec.Username, r.Spec.UID = "mallory", "1"
			r.Spec.Groups = []string{"admins"}
			r.Spec.Extra = map[string][]string{"k": {"v"}}
		}, []string{"spec.username", "spec.uid", "spec.groups", "spec.extra"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := cr(t)
			updated := cr(t, tc.fn)
			errs := CertificateRequestUpdate(old, updated)
			var got []string
			for _, e := range errs {
				if e.Rule != "field is immutable" {
					t.Errorf("rule = %q", e.Rule)
				}
				got = append(got, e.Path)
			}
			if strings.Join(got, ",") != strings.Join(tc.paths, ",") {
				t.Errorf("changed paths = %v, want %v", got, tc.paths)
			}
		})
	}
	// Nil versus empty collections encode the same and are not a change.
	a := cr(t, func(r *R) { r.Spec.Usages, r.Spec.Groups = nil, nil })
	b := cr(t, func(r *R) {
		r.Spec.Usages, r.Spec.Groups, r.Spec.Extra = []api.KeyUsage{}, []string{}, map[string][]string{}
	})
	if errs := CertificateRequestUpdate(a, b); len(errs) != 0 {
		t.Errorf("nil vs empty: %v", errs)
	}
	if errs := CertificateRequestUpdate(cr(t), cr(t, func(r *R) { r.Spec.Request = nil })); errs.Error() != "spec.request: field is immutable" {
		t.Errorf("Error() = %q", errs.Error())
	}
}

func TestIssuer(t *testing.T) {
	type I = api.Issuer
	acme := func(f func(*api.ACMEIssuer)) *api.Issuer { return issuer(func(i *I) { f(i.Spec.ACME) }) }
	keyRef := func(n, k string) api.SecretKeySelector {
		return api.SecretKeySelector{LocalObjectReference: api.LocalObjectReference{Name: n}, Key: k}
	}
	runRows(t, []row{
		{"valid acme", issuer(), "", ""},
		{"valid ca", issuer(func(i *I) { i.Spec = api.IssuerSpec{CA: &api.CAIssuer{SecretName: "ca-key-pair"}} }), "", ""},
		{"valid selfSigned", issuer(func(i *I) { i.Spec = api.IssuerSpec{SelfSigned: &api.SelfSignedIssuer{}} }), "", ""},
		{"vault counts as a type", issuer(func(i *I) { i.Spec = api.IssuerSpec{Vault: []byte(`{"server":"x"}`)} }), "", ""},
		{"no type", issuer(func(i *I) { i.Spec = api.IssuerSpec{} }), "spec", "at least one issuer"},
		{"null vault is no type", issuer(func(i *I) { i.Spec = api.IssuerSpec{Vault: []byte("null")} }), "spec", "at least one issuer"},
		{"two types", issuer(func(i *I) { i.Spec.SelfSigned = &api.SelfSignedIssuer{} }), "spec.selfSigned", "more than one issuer type"},
		{"ca secretName required", issuer(func(i *I) { i.Spec = api.IssuerSpec{CA: &api.CAIssuer{}} }), "spec.ca.secretName", "required"},
		{"ca bad ocsp url", issuer(func(i *I) { i.Spec = api.IssuerSpec{CA: &api.CAIssuer{SecretName: "s", OCSPServers: []string{"ocsp"}}} }), "spec.ca.ocspServer[0]", "absolute"},
		{"server required", acme(func(a *api.ACMEIssuer) { a.Server = "" }), "spec.acme.server", "required"},
		{"server not a URL", acme(func(a *api.ACMEIssuer) { a.Server = "acme.example.com/directory" }), "spec.acme.server", "https URL"},
		{"server ftp", acme(func(a *api.ACMEIssuer) { a.Server = "ftp://acme.example.com/" }), "spec.acme.server", "https URL"},
		{"server http allowed for tests", acme(func(a *api.ACMEIssuer) { a.Server = "http://localhost:14000/dir" }), "", ""},
		{"privateKeySecretRef required", acme(func(a *api.ACMEIssuer) { a.PrivateKeySecretRef.Name = "" }), "spec.acme.privateKeySecretRef.name", "required"},
		{"caBundle with skipTLSVerify", acme(func(a *api.ACMEIssuer) { a.CABundle, a.SkipTLSVerify = testCAPEM(t), true }), "spec.acme.caBundle", "skipTLSVerify"},
		{"caBundle valid", acme(func(a *api.ACMEIssuer) { a.CABundle = testCAPEM(t) }), "", ""},
		{"caBundle garbage", acme(func(a *api.ACMEIssuer) { a.CABundle = []byte("not pem") }), "spec.acme.caBundle", "no PEM CERTIFICATE"},
		{"preferredChain too long", acme(func(a *api.ACMEIssuer) { a.PreferredChain = strings.Repeat("x", 65) }), "spec.acme.preferredChain", "64"},
		{"solver without type", acme(func(a *api.ACMEIssuer) { a.Solvers = []api.ACMEChallengeSolver{{}} }), "spec.acme.solvers[0]", "no solver type configured"},
		{"solver with both types", acme(func(a *api.ACMEIssuer) {
			a.Solvers[1].HTTP01 = &api.ACMEChallengeSolverHTTP01{}
		}), "spec.acme.solvers[1]", "more than one solver type"},
		{"http01 ingress and gateway", acme(func(a *api.ACMEIssuer) {
			a.Solvers[0].HTTP01 = &api.ACMEChallengeSolverHTTP01{Ingress: &api.ACMEChallengeSolverHTTP01Ingress{}, GatewayHTTPRoute: &api.ACMEChallengeSolverHTTP01GatewayHTTPRoute{}}
		}), "spec.acme.solvers[0].http01", "only 1 HTTP01 solver type"},
		{"selector bad dns name", acme(func(a *api.ACMEIssuer) {
			a.Solvers[0].Selector = &api.CertificateDNSNameSelector{DNSZones: []string{"bad zone"}}
		}), "spec.acme.solvers[0].selector.dnsZones[0]", "invalid DNS zone"},
		{"eab keyID required", acme(func(a *api.ACMEIssuer) {
			a.ExternalAccountBinding = &api.ACMEExternalAccountBinding{Key: keyRef("eab", "k")}
		}), "spec.acme.externalAccountBinding.keyID", "required"},
		{"eab secret required", acme(func(a *api.ACMEIssuer) {
			a.ExternalAccountBinding = &api.ACMEExternalAccountBinding{KeyID: "kid"}
		}), "spec.acme.externalAccountBinding.keySecretRef.name", "required"},
		{"eab algorithm unknown", acme(func(a *api.ACMEIssuer) {
			a.ExternalAccountBinding = &api.ACMEExternalAccountBinding{KeyID: "kid", Key: keyRef("eab", "k"), KeyAlgorithm: "HS1"}
		}), "spec.acme.externalAccountBinding.keyAlgorithm", "unknown"},
		{"dns01 without provider", acme(func(a *api.ACMEIssuer) { a.Solvers[1].DNS01 = &api.ACMEChallengeSolverDNS01{} }), "spec.acme.solvers[1].dns01", "no DNS01 provider configured"},
		{"dns01 two providers", acme(func(a *api.ACMEIssuer) {
			a.Solvers[1].DNS01.Route53 = &api.ACMEIssuerDNS01ProviderRoute53{Region: "us-east-1"}
		}), "spec.acme.solvers[1].dns01.rfc2136", "more than one provider type"},
		{"dns01 unknown cnameStrategy", acme(func(a *api.ACMEIssuer) { a.Solvers[1].DNS01.CNAMEStrategy = "Chase" }), "spec.acme.solvers[1].dns01.cnameStrategy", "must be one of"},
		{"rfc2136 nameserver required", acme(func(a *api.ACMEIssuer) { a.Solvers[1].DNS01.RFC2136.Nameserver = "" }), "spec.acme.solvers[1].dns01.rfc2136.nameserver", "required"},
		{"rfc2136 nameserver bad port", acme(func(a *api.ACMEIssuer) { a.Solvers[1].DNS01.RFC2136.Nameserver = "ns.example.com:99999" }), "spec.acme.solvers[1].dns01.rfc2136.nameserver", "port"},
		{"rfc2136 nameserver host ok", acme(func(a *api.ACMEIssuer) { a.Solvers[1].DNS01.RFC2136.Nameserver = "ns1.example.com" }), "", ""},
		{"rfc2136 nameserver v6 ok", acme(func(a *api.ACMEIssuer) { a.Solvers[1].DNS01.RFC2136.Nameserver = "[2001:db8::53]:53" }), "", ""},
		{"rfc2136 tsig secret required", acme(func(a *api.ACMEIssuer) { a.Solvers[1].DNS01.RFC2136.TSIGKeyName = "key." }), "spec.acme.solvers[1].dns01.rfc2136.tsigSecretSecretRef.name", "required"},
		{"rfc2136 tsig algorithm", acme(func(a *api.ACMEIssuer) { a.Solvers[1].DNS01.RFC2136.TSIGAlgorithm = "HMACSHA3" }), "spec.acme.solvers[1].dns01.rfc2136.tsigAlgorithm", "unsupported"},
		{"rfc2136 protocol", acme(func(a *api.ACMEIssuer) { a.Solvers[1].DNS01.RFC2136.Protocol = "QUIC" }), "spec.acme.solvers[1].dns01.rfc2136.protocol", "unknown"},
		{"route53 both access keys", acme(func(a *api.ACMEIssuer) {
			a.Solvers[1].DNS01 = &api.ACMEChallengeSolverDNS01{Route53: &api.ACMEIssuerDNS01ProviderRoute53{AccessKeyID: "AKIA", SecretAccessKeyID: ptr(keyRef("aws", "id"))}}
		}), "spec.acme.solvers[1].dns01.route53", "cannot both be specified"},
		{"cloudDNS project required", acme(func(a *api.ACMEIssuer) {
			a.Solvers[1].DNS01 = &api.ACMEChallengeSolverDNS01{CloudDNS: &api.ACMEIssuerDNS01ProviderCloudDNS{}}
		}), "spec.acme.solvers[1].dns01.cloudDNS.project", "required"},
		{"cluster issuer valid", &api.ClusterIssuer{ObjectMeta: api.ObjectMeta{Name: "ca"}, Spec: api.IssuerSpec{CA: &api.CAIssuer{SecretName: "ca"}}}, "", ""},
		{"cluster issuer spec checked", &api.ClusterIssuer{ObjectMeta: api.ObjectMeta{Name: "ca"}, Spec: api.IssuerSpec{CA: &api.CAIssuer{}}}, "spec.ca.secretName", "required"},
	})
}

var (
	caOnce sync.Once
	caPEM  []byte
)

func testCAPEM(t testing.TB) []byte {
	caOnce.Do(func() {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			panic(err)
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
			NotBefore: time.Unix(0, 0), NotAfter: time.Unix(1<<32, 0), IsCA: true, BasicConstraintsValid: true,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		if err != nil {
			panic(err)
		}
		caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	})
	return caPEM
}

func TestErrorRendering(t *testing.T) {
	errs := Object(cert(func(c *api.Certificate) { c.Spec.DNSNames = []string{"ok.com", "a..b"} }))
	want := `spec.dnsNames[1]: invalid DNS name: empty label (got "a..b")`
	if errs.Error() != want {
		t.Errorf("Error() = %q, want %q", errs.Error(), want)
	}
	if errs.Err() == nil || ErrorList(nil).Err() != nil {
		t.Error("Err() wrong")
	}
	long := Error{Path: "p", Value: strings.Repeat("é", 100), Rule: "r"}
	if s := long.Error(); !strings.HasSuffix(s, `…")`) || len(s) > 130 {
		t.Errorf("long value not truncated: %q", s)
	}
}

// FuzzValidateCertificateRequest feeds arbitrary bytes as spec.request: the
// validator never panics, and anything that is not a single, correctly
// signed PEM CSR is rejected with a spec.request error.
func FuzzValidateCertificateRequest(f *testing.F) {
	valid := testCSR(f)
	f.Add(valid)
	f.Add([]byte(""))
	f.Add([]byte("-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n"))
	f.Add(append(append([]byte{}, valid...), valid...))
	f.Add(valid[:len(valid)/2])
	f.Add(testCAPEM(f))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := cr(t, func(r *api.CertificateRequest) { r.Spec.Request = data })
		errs := CertificateRequest(r)
		_ = errs.Error()
		block, rest := pem.Decode(data)
		wellFormed := block != nil && (block.Type == "CERTIFICATE REQUEST" || block.Type == "NEW CERTIFICATE REQUEST")
		if wellFormed {
			if next, _ := pem.Decode(rest); next != nil {
				wellFormed = false
			}
		}
		if wellFormed {
			csr, err := x509.ParseCertificateRequest(block.Bytes)
			wellFormed = err == nil && csr.CheckSignature() == nil
		}
		if wellFormed == errs.Has("spec.request") {
			t.Fatalf("well-formed=%v but errors: %v", wellFormed, errs)
		}
		for _, e := range errs {
			if e.Path == "spec.request" && e.Value != "" {
				t.Fatalf("spec.request error echoes a value: %q", e.Value)
			}
		}
	})
}

// FuzzValidateDecoded decodes arbitrary manifests and validates every object
// decoded: validation must never panic on anything the decoder accepts.
func FuzzValidateDecoded(f *testing.F) {
	f.Add([]byte("apiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata: {name: web}\n" +
		"spec: {secretName: web-tls, dnsNames: [example.com], issuerRef: {name: ca}, renewBefore: 1h, duration: 10m," +
		" privateKey: {algorithm: ECDSA, size: 1}, literalSubject: 'CN=a\\,b', nameConstraints: {permitted: {}}}\n"))
	f.Add([]byte("apiVersion: cert-manager.io/v1\nkind: ClusterIssuer\nmetadata: {name: le}\n" +
		"spec: {acme: {server: 'https://x/dir', privateKeySecretRef: {name: k}, solvers: [{dns01: {rfc2136: {nameserver: '[::1]:53'}}}, {}]}}\n"))
	f.Add([]byte("apiVersion: cert-manager.io/v1\nkind: CertificateRequest\nmetadata: {name: r}\n" +
		"spec: {request: aGVsbG8=, issuerRef: {name: ca}, expirationSeconds: -1, duration: -5m}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, err := api.Decode(data)
		if err != nil {
			return
		}
		for _, o := range objs {
			_ = Object(o).Error()
			if r, ok := o.(*api.CertificateRequest); ok {
				if errs := CertificateRequestUpdate(r, r); len(errs) != 0 {
					t.Fatalf("an unchanged request reports changes: %v", errs)
				}
			}
		}
	})
}

// TestExamplesAreValid decodes and validates the manifests under examples/.
func TestExamplesAreValid(t *testing.T) {
	files, err := filepath.Glob("../../examples/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := api.Decode(data)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		for _, o := range objs {
			if errs := Object(o); len(errs) > 0 {
				t.Errorf("%s: %s: %v", f, api.KeyOf(o), errs)
			}
		}
	}
}

// TestSecretReferencesRefused: every secret reference must be a Kubernetes
// secret name (a DNS-1123 subdomain), so "..", "/" and the like never reach
// a store key; the error names the field and the rule.
func TestSecretReferencesRefused(t *testing.T) {
	type I = api.Issuer
	acme := func(f func(*api.ACMEIssuer)) *api.Issuer { return issuer(func(i *I) { f(i.Spec.ACME) }) }
	ref := func(n string) api.SecretKeySelector {
		return api.SecretKeySelector{LocalObjectReference: api.LocalObjectReference{Name: n}, Key: "k"}
	}
	var rows []row
	for _, bad := range []string{"..", "../ca", "a/b", "/etc", "Upper", "a..b", "-x", "x y", strings.Repeat("a", 254)} {
		rule := "DNS-1123 subdomain"
		if len(bad) > 253 {
			rule = "no more than 253 characters"
		}
		rows = append(rows,
			row{"ca secretName " + bad, issuer(func(i *I) { i.Spec = api.IssuerSpec{CA: &api.CAIssuer{SecretName: bad}} }), "spec.ca.secretName", rule},
			row{"cluster ca secretName " + bad, &api.ClusterIssuer{ObjectMeta: api.ObjectMeta{Name: "ca"}, Spec: api.IssuerSpec{CA: &api.CAIssuer{SecretName: bad}}}, "spec.ca.secretName", rule},
			row{"acme key " + bad, acme(func(a *api.ACMEIssuer) { a.PrivateKeySecretRef.Name = bad }), "spec.acme.privateKeySecretRef.name", rule},
			row{"eab key " + bad, acme(func(a *api.ACMEIssuer) {
				a.ExternalAccountBinding = &api.ACMEExternalAccountBinding{KeyID: "kid", Key: ref(bad)}
			}), "spec.acme.externalAccountBinding.keySecretRef.name", rule},
			row{"tsig " + bad, acme(func(a *api.ACMEIssuer) {
				a.Solvers[1].DNS01.RFC2136.TSIGKeyName, a.Solvers[1].DNS01.RFC2136.TSIGSecret = "key.", ref(bad)
			}), "spec.acme.solvers[1].dns01.rfc2136.tsigSecretSecretRef.name", rule},
			row{"route53 secret " + bad, acme(func(a *api.ACMEIssuer) {
				a.Solvers[1].DNS01 = &api.ACMEChallengeSolverDNS01{Route53: &api.ACMEIssuerDNS01ProviderRoute53{AccessKeyID: "AKIA", SecretAccessKey: ref(bad)}}
			}), "spec.acme.solvers[1].dns01.route53.secretAccessKeySecretRef.name", rule},
			row{"route53 key id " + bad, acme(func(a *api.ACMEIssuer) {
				a.Solvers[1].DNS01 = &api.ACMEChallengeSolverDNS01{Route53: &api.ACMEIssuerDNS01ProviderRoute53{SecretAccessKeyID: ptr(ref(bad)), SecretAccessKey: ref("aws")}}
			}), "spec.acme.solvers[1].dns01.route53.accessKeyIDSecretRef.name", rule},
			row{"cloudDNS " + bad, acme(func(a *api.ACMEIssuer) {
				a.Solvers[1].DNS01 = &api.ACMEChallengeSolverDNS01{CloudDNS: &api.ACMEIssuerDNS01ProviderCloudDNS{Project: "p", ServiceAccount: ptr(ref(bad))}}
			}), "spec.acme.solvers[1].dns01.cloudDNS.serviceAccountSecretRef.name", rule},
			row{"jks password " + bad, cert(func(c *api.Certificate) {
				c.Spec.Keystores = &api.CertificateKeystores{JKS: &api.JKSKeystore{Create: true, PasswordSecretRef: ref(bad)}}
			}), "spec.keystores.jks.passwordSecretRef.name", rule},
			row{"pkcs12 password " + bad, cert(func(c *api.Certificate) {
				c.Spec.Keystores = &api.CertificateKeystores{PKCS12: &api.PKCS12Keystore{Create: true, PasswordSecretRef: ref(bad)}}
			}), "spec.keystores.pkcs12.passwordSecretRef.name", rule},
		)
	}
	rows = append(rows,
		row{"good names pass", acme(func(a *api.ACMEIssuer) {
			a.PrivateKeySecretRef = ref("acme.key-1")
			a.ExternalAccountBinding = &api.ACMEExternalAccountBinding{KeyID: "kid", Key: ref("eab")}
		}), "", ""},
		row{"good keystore ref passes", cert(func(c *api.Certificate) {
			c.Spec.Keystores = &api.CertificateKeystores{PKCS12: &api.PKCS12Keystore{Create: true, PasswordSecretRef: ref("p12-pass")}}
		}), "", ""},
	)
	runRows(t, rows)
}

package validation

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/pki"
)

// csrObj returns a valid CertificateSigningRequest changed by fns.
func csrObj(t testing.TB, fns ...func(*api.CertificateSigningRequest)) *api.CertificateSigningRequest {
	c := &api.CertificateSigningRequest{
		TypeMeta:   api.TypeMeta{APIVersion: api.CertificatesV1, Kind: api.KindCertificateSigningRequest},
		ObjectMeta: api.ObjectMeta{Name: "web"},
		Spec: api.CertificateSigningRequestSpec{
			Request:    testCSR(t),
			SignerName: "issuers.cert-manager.io/default.ca",
			Usages:     []api.KeyUsage{api.UsageDigitalSignature, api.UsageServerAuth},
		},
	}
	for _, f := range fns {
		f(c)
	}
	return c
}

func i32(v int32) *int32 { return &v }

func selfSignedPEM(t testing.TB) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "x"},
		NotBefore: time.Unix(0, 0), NotAfter: time.Unix(3600, 0)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// TestCertificateSigningRequest runs the cases of upstream's
// pkg/apis/certificates/validation (TestValidateCertificateSigningRequestCreate,
// TestValidateSignerName, status.conditions and status.certificate cases)
// with docs/design/request-duration.md and docs/design/certificates-api.md: each case names the field path its error is at.
func TestCertificateSigningRequest(t *testing.T) {
	cert := selfSignedPEM(t)
	cond := func(typ string, st api.ConditionStatus) api.CSRCondition {
		return api.CSRCondition{Type: typ, Status: st}
	}
	cases := []struct {
		name string
		fn   func(*api.CertificateSigningRequest)
		path string // "" = valid
		rule string
	}{
		{"valid", nil, "", ""},
		{"valid: expirationSeconds 600 (docs/design/request-duration.md minimum)", func(c *api.CertificateSigningRequest) { c.Spec.ExpirationSeconds = i32(600) }, "", ""},
		{"valid: cluster issuer signer", func(c *api.CertificateSigningRequest) { c.Spec.SignerName = "clusterissuers.cert-manager.io/ca" }, "", ""},
		{"valid: any qualified signer (upstream accepts signers it does not know)", func(c *api.CertificateSigningRequest) { c.Spec.SignerName = "example.com/my-signer.v1" }, "", ""},
		{"valid: a certificate chain with explanatory text around it (docs/design/certificates-api.md)", func(c *api.CertificateSigningRequest) {
			c.Status.Certificate = append(append([]byte("issued by certfn\n"), cert...), cert...)
		}, "", ""},
		{"valid: Failed condition", func(c *api.CertificateSigningRequest) {
			c.Status.Conditions = []api.CSRCondition{cond("Approved", "True"), cond("Failed", "True")}
		}, "", ""},
		{"namespace set on a cluster-scoped kind", func(c *api.CertificateSigningRequest) { c.Namespace = "default" }, "metadata.namespace", "cluster-scoped"},
		{"name missing", func(c *api.CertificateSigningRequest) { c.Name = "" }, "metadata.name", "required"},
		{"request missing", func(c *api.CertificateSigningRequest) { c.Spec.Request = nil }, "spec.request", "required"},
		{"request not PEM", func(c *api.CertificateSigningRequest) { c.Spec.Request = []byte("hello") }, "spec.request", "not PEM"},
		{"request is a certificate, not a CSR", func(c *api.CertificateSigningRequest) { c.Spec.Request = cert }, "spec.request", "CERTIFICATE REQUEST"},
		{"request hides an IP address in its subjectAltName", func(c *api.CertificateSigningRequest) { c.Spec.Request = hiddenIPCSR(t) },
			"spec.request", "subjectAltName entry 2 (iPAddress): is encoded as constructed"},
		{"request with an RSA-1024 key", func(c *api.CertificateSigningRequest) { c.Spec.Request = rsa1024CSR(t) },
			"spec.request", "the public key is RSA of 1024 bits; certfn signs RSA keys of 2048 to 8192 bits"},
		{"usages missing (v1: usages must be provided)", func(c *api.CertificateSigningRequest) { c.Spec.Usages = nil }, "spec.usages", "must be provided"},
		{"unknown usage", func(c *api.CertificateSigningRequest) { c.Spec.Usages = []api.KeyUsage{"server auth", "flying"} }, "spec.usages[1]", "unsupported value"},
		{"duplicate usage", func(c *api.CertificateSigningRequest) { c.Spec.Usages = []api.KeyUsage{"server auth", "server auth"} }, "spec.usages[1]", "duplicate"},
		{"signerName missing", func(c *api.CertificateSigningRequest) { c.Spec.SignerName = "" }, "spec.signerName", "required"},
		{"signerName without path", func(c *api.CertificateSigningRequest) { c.Spec.SignerName = "example.com" }, "spec.signerName", "fully qualified domain and path"},
		{"signerName with two slashes", func(c *api.CertificateSigningRequest) { c.Spec.SignerName = "example.com/a/b" }, "spec.signerName", "fully qualified domain and path"},
		{"signerName domain of one label", func(c *api.CertificateSigningRequest) { c.Spec.SignerName = "example/signer" }, "spec.signerName", "at least two segments"},
		{"signerName domain with an invalid label", func(c *api.CertificateSigningRequest) { c.Spec.SignerName = "Example.com/signer" }, "spec.signerName", `validating label "Example"`},
		{"signerName path with an invalid label", func(c *api.CertificateSigningRequest) { c.Spec.SignerName = "example.com/Signer" }, "spec.signerName", `validating label "Signer"`},
		{"signerName path too long", func(c *api.CertificateSigningRequest) {
			c.Spec.SignerName = "example.com/" + strings.Repeat(strings.Repeat("a", 60)+".", 10)[:600]
		}, "spec.signerName", "no more than"},
		{"legacy signerName refused in v1 (docs/design/certificates-api.md)", func(c *api.CertificateSigningRequest) { c.Spec.SignerName = "kubernetes.io/legacy-unknown" }, "spec.signerName", "legacy"},
		{"expirationSeconds below 600 (docs/design/request-duration.md)", func(c *api.CertificateSigningRequest) { c.Spec.ExpirationSeconds = i32(599) }, "spec.expirationSeconds", "less than 600 seconds"},
		{"expirationSeconds negative", func(c *api.CertificateSigningRequest) { c.Spec.ExpirationSeconds = i32(-1) }, "spec.expirationSeconds", "less than 600 seconds"},
		{"request-is-ca not a boolean", func(c *api.CertificateSigningRequest) {
			c.Annotations = map[string]string{api.AnnotationCSRIsCA: "yes"}
		}, "metadata.annotations." + api.AnnotationCSRIsCA, "true"},
		{"condition without type", func(c *api.CertificateSigningRequest) { c.Status.Conditions = []api.CSRCondition{cond("", "True")} }, "status.conditions[0].type", "required"},
		{"condition with a bad status", func(c *api.CertificateSigningRequest) {
			c.Status.Conditions = []api.CSRCondition{cond("Approved", "Yes")}
		}, "status.conditions[0].status", "unsupported value"},
		{"Approved False", func(c *api.CertificateSigningRequest) {
			c.Status.Conditions = []api.CSRCondition{cond("Approved", "False")}
		}, "status.conditions[0].status", "Approved condition may only be set to True"},
		{"Denied Unknown", func(c *api.CertificateSigningRequest) {
			c.Status.Conditions = []api.CSRCondition{cond("Denied", "Unknown")}
		}, "status.conditions[0].status", "Denied condition may only be set to True"},
		{"Failed False", func(c *api.CertificateSigningRequest) {
			c.Status.Conditions = []api.CSRCondition{cond("Failed", "False")}
		}, "status.conditions[0].status", "Failed condition may only be set to True"},
		{"duplicate condition type", func(c *api.CertificateSigningRequest) {
			c.Status.Conditions = []api.CSRCondition{cond("Approved", "True"), cond("Approved", "True")}
		}, "status.conditions[1].type", "duplicate"},
		{"Approved and Denied together (docs/design/certificates-api.md: mutually exclusive)", func(c *api.CertificateSigningRequest) {
			c.Status.Conditions = []api.CSRCondition{cond("Approved", "True"), cond("Denied", "True")}
		}, "status.conditions", "mutually exclusive"},
		{"certificate that is not PEM (docs/design/certificates-api.md)", func(c *api.CertificateSigningRequest) { c.Status.Certificate = []byte("not pem") }, "status.certificate", ""},
		{"certificate with a non-CERTIFICATE block (docs/design/certificates-api.md)", func(c *api.CertificateSigningRequest) {
			c.Status.Certificate = append(append([]byte{}, cert...), testCSR(t)...)
		}, "status.certificate", "CERTIFICATE"},
		{"certificate block with headers (docs/design/certificates-api.md)", func(c *api.CertificateSigningRequest) {
			b, _ := pem.Decode(cert)
			b.Headers = map[string]string{"Proc-Type": "4,ENCRYPTED"}
			c.Status.Certificate = pem.EncodeToMemory(b)
		}, "status.certificate", "header"},
		{"certificate block that is not a certificate (docs/design/certificates-api.md)", func(c *api.CertificateSigningRequest) {
			c.Status.Certificate = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("junk")})
		}, "status.certificate", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var fns []func(*api.CertificateSigningRequest)
			if tc.fn != nil {
				fns = append(fns, tc.fn)
			}
			errs := Object(csrObj(t, fns...))
			if tc.path == "" {
				if len(errs) > 0 {
					t.Fatalf("want valid, got %v", errs)
				}
				return
			}
			if !errs.Has(tc.path) {
				t.Fatalf("want an error at %s, got %v", tc.path, errs)
			}
			if !strings.Contains(errs.Error(), tc.rule) {
				t.Fatalf("want %q in %v", tc.rule, errs)
			}
		})
	}
}

// TestCertificateSigningRequestUpdate: the spec is immutable after
// creation (docs/design/certificates-api.md), Approved/Denied/Failed are permanent, and
// status.certificate cannot change once set (upstream's update validation).
func TestCertificateSigningRequestUpdate(t *testing.T) {
	cert := selfSignedPEM(t)
	approved := func(c *api.CertificateSigningRequest) {
		c.Status.Conditions = []api.CSRCondition{{Type: "Approved", Status: "True", Reason: "r", Message: "m"}}
	}
	cases := []struct {
		name     string
		old, new func(*api.CertificateSigningRequest)
		path     string
	}{
		{"labels may change", nil, func(c *api.CertificateSigningRequest) { c.Labels = map[string]string{"a": "b"} }, ""},
		{"other annotations may change", nil, func(c *api.CertificateSigningRequest) { c.Annotations = map[string]string{"example.com/note": "x"} }, ""},
		{"request-is-ca cannot be added", nil, func(c *api.CertificateSigningRequest) {
			c.Annotations = map[string]string{api.AnnotationCSRIsCA: "true"}
		}, `metadata.annotations["experimental.cert-manager.io/request-is-ca"]`},
		{"request-duration cannot change", func(c *api.CertificateSigningRequest) {
			c.Annotations = map[string]string{api.AnnotationCSRDuration: "720h"}
		}, func(c *api.CertificateSigningRequest) {
			c.Annotations = map[string]string{api.AnnotationCSRDuration: "87600h"}
		}, `metadata.annotations["experimental.cert-manager.io/request-duration"]`},
		{"private-key-secret-name cannot be removed", func(c *api.CertificateSigningRequest) {
			c.Annotations = map[string]string{api.AnnotationCSRPrivateKeySecretName: "k"}
		}, func(c *api.CertificateSigningRequest) { c.Annotations = nil }, `metadata.annotations["experimental.cert-manager.io/private-key-secret-name"]`},
		{"cert-manager.io annotations cannot be added", nil, func(c *api.CertificateSigningRequest) {
			c.Annotations = map[string]string{"cert-manager.io/private-key-secret-name": "k"}
		}, `metadata.annotations["cert-manager.io/private-key-secret-name"]`},
		{"a condition may be added", nil, approved, ""},
		{"signerName is immutable", nil, func(c *api.CertificateSigningRequest) { c.Spec.SignerName = "clusterissuers.cert-manager.io/ca" }, "spec.signerName"},
		{"expirationSeconds is immutable", nil, func(c *api.CertificateSigningRequest) { c.Spec.ExpirationSeconds = i32(3600) }, "spec.expirationSeconds"},
		{"usages are immutable", nil, func(c *api.CertificateSigningRequest) { c.Spec.Usages = []api.KeyUsage{"client auth"} }, "spec.usages"},
		{"request is immutable", nil, func(c *api.CertificateSigningRequest) { c.Spec.Request = []byte("x") }, "spec.request"},
		{"username is immutable", nil, func(c *api.CertificateSigningRequest) { c.Spec.Username = "mallory" }, "spec.username"},
		{"Approved cannot be removed", approved, func(c *api.CertificateSigningRequest) { c.Status.Conditions = nil }, "status.conditions"},
		{"Approved cannot become Denied", approved, func(c *api.CertificateSigningRequest) {
			c.Status.Conditions = []api.CSRCondition{{Type: "Denied", Status: "True"}}
		}, "status.conditions"},
		{"certificate cannot change once set", func(c *api.CertificateSigningRequest) { c.Status.Certificate = cert },
			func(c *api.CertificateSigningRequest) { c.Status.Certificate = selfSignedPEM(t) }, "status.certificate"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o, n := csrObj(t), csrObj(t)
			if tc.old != nil {
				tc.old(o)
				tc.old(n)
			}
			tc.new(n)
			errs := CertificateSigningRequestUpdate(o, n)
			if tc.path == "" {
				if len(errs) > 0 {
					t.Fatalf("want valid, got %v", errs)
				}
				return
			}
			if !errs.Has(tc.path) {
				t.Fatalf("want an error at %s, got %v", tc.path, errs)
			}
		})
	}
}

// FuzzCSRValidation: whatever spec.request, spec.signerName and
// status.certificate hold, validation never panics, never echoes the
// request or certificate bytes, and accepts a status.certificate exactly
// when it is a docs/design/certificates-api.md chain.
func FuzzCSRValidation(f *testing.F) {
	f.Add(testCSR(f), "issuers.cert-manager.io/default.ca", []byte(nil))
	f.Add([]byte("x"), "a/b/c", []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"))
	f.Add([]byte(""), "", selfSignedPEM(f))
	f.Add(testCSR(f), strings.Repeat("a.", 200)+"/b", []byte("text\n"))
	f.Fuzz(func(t *testing.T, req []byte, signer string, cert []byte) {
		c := csrObj(t, func(c *api.CertificateSigningRequest) {
			c.Spec.Request, c.Spec.SignerName, c.Status.Certificate = req, signer, cert
		})
		errs := CertificateSigningRequest(c)
		_ = errs.Error()
		for _, e := range errs {
			if (e.Path == "spec.request" || e.Path == "status.certificate") && e.Value != "" {
				t.Fatalf("%s error echoes a value", e.Path)
			}
		}
		_, chainErr := pki.ParseChainPEM(cert)
		if len(cert) > 0 && (chainErr == nil) == errs.Has("status.certificate") {
			t.Fatalf("status.certificate: chain error %v but validation %v", chainErr, errs)
		}
	})
}

// hiddenIPCSR is a CSR whose subjectAltName holds a DNS name and an
// iPAddress encoded as constructed (OCTET STRING segments that OpenSSL
// concatenates into 127.0.0.1; crypto/x509 skips the entry).
func hiddenIPCSR(t testing.TB) []byte {
	t.Helper()
	octet := func(b ...byte) []byte { return append([]byte{0x04, byte(len(b))}, b...) }
	ip := append([]byte{0xa7, 16}, append(append(octet(127, 0), octet(0, 1)...), append(append(octet(), octet()...), append(octet(), octet()...)...)...)...)
	dns := append([]byte{0x82, 15}, "web.example.com"...)
	san := append([]byte{0x30, byte(len(dns) + len(ip))}, append(dns, ip...)...)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "web.example.com"},
		ExtraExtensions: []pkix.Extension{{Id: pki.OIDExtensionSubjectAltName, Value: san}}}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func rsa1024CSR(t testing.TB) []byte {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "web.example.com"}, DNSNames: []string{"web.example.com"}}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

package e2e

import (
	"encoding/base64"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/pki"
	"github.com/certfn/certfn/core/ports"
)

// applyAll is what `certfn apply` does: decode every document, validate
// them all, then apply them one by one (app.Service.Apply). It returns the
// first error.
func (h *harness) applyAll(manifest string) error {
	h.t.Helper()
	objs, err := api.Decode([]byte(manifest))
	if err != nil {
		return err
	}
	_, err = h.rt.App.Service.Apply(h.ctx, callerLocal, objs)
	return err
}

// stored lists every stored record of every kind, and every secret file.
func (h *harness) stored() []string {
	h.t.Helper()
	var out []string
	for _, k := range api.Kinds() {
		recs, err := h.rt.Store.List(h.ctx, ports.ListOptions{Kind: k.Kind})
		if err != nil {
			h.t.Fatalf("list %s: %v", k.Kind, err)
		}
		for _, r := range recs {
			out = append(out, r.Key.String())
		}
	}
	_ = filepath.Walk(filepath.Join(h.rt.Opts.DataDir, "secrets"), func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			out = append(out, "secret file "+p)
		}
		return nil
	})
	return out
}

const goodIssuer = `apiVersion: cert-manager.io/v1
kind: Issuer
metadata: {name: ca, namespace: default}
spec: {selfSigned: {}}
`

// cert returns a valid Certificate manifest with spec lines replaced or added.
func certManifest(specExtra string) string {
	return `apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: app, namespace: default}
spec:
  secretName: app-tls
  issuerRef: {name: ca}
` + specExtra
}

// goodCSR returns a valid PEM CSR for app.example.com.
func goodCSR(t *testing.T) []byte {
	t.Helper()
	crt := &api.Certificate{ObjectMeta: api.ObjectMeta{Name: "app", Namespace: "default"},
		Spec: api.CertificateSpec{DNSNames: []string{"app.example.com"}, PrivateKey: &api.CertificatePrivateKey{Algorithm: api.ECDSAKeyAlgorithm}}}
	key, err := pki.GenerateKey(crt.Spec.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	csrPEM, err := pki.GenerateCSR(crt, key)
	if err != nil {
		t.Fatal(err)
	}
	return csrPEM
}

// badSignatureCSR returns a PEM CSR whose signature no longer verifies
// (one byte of the signature flipped).
func badSignatureCSR(t *testing.T) []byte {
	t.Helper()
	b, _ := pem.Decode(goodCSR(t))
	der := append([]byte(nil), b.Bytes...)
	der[len(der)-3] ^= 0x01 // inside the signature BIT STRING, which ends the DER
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func requestManifest(csr []byte, extra string) string {
	return `apiVersion: cert-manager.io/v1
kind: CertificateRequest
metadata: {name: req, namespace: default}
spec:
  issuerRef: {name: ca}
  request: ` + base64.StdEncoding.EncodeToString(csr) + "\n" + extra
}

func TestBadInputIsRefusedAndNothingIsStored(t *testing.T) {
	for _, tc := range []struct {
		name     string
		manifest func(t *testing.T) string
		want     []string // substrings of the error: the field path and the rule
	}{
		{"malformed YAML", func(*testing.T) string {
			return "apiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata: {name: app\nspec: [\n"
		}, []string{"document 1"}},
		{"unknown kind", func(*testing.T) string {
			return "apiVersion: cert-manager.io/v1\nkind: Certificat\nmetadata: {name: app, namespace: default}\n"
		}, []string{"kind", `"Certificat"`}},
		{"unknown apiVersion", func(*testing.T) string {
			return strings.Replace(certManifest("  dnsNames: [app.example.com]\n"), "cert-manager.io/v1", "cert-manager.io/v2", 1)
		}, []string{"apiVersion", "cert-manager.io/v2"}},
		{"unknown field deep in the spec", func(*testing.T) string {
			return certManifest("  dnsNames: [app.example.com]\n  privateKey: {algorithm: ECDSA, sise: 256}\n")
		}, []string{"spec.privateKey.sise"}},
		{"unknown field in a keystore", func(*testing.T) string {
			return certManifest("  dnsNames: [app.example.com]\n  keystores: {pkcs12: {create: true, pasword: x}}\n")
		}, []string{"spec.keystores.pkcs12.pasword"}},
		{"wrong type", func(*testing.T) string {
			return certManifest("  dnsNames: app.example.com\n")
		}, []string{"spec.dnsNames"}},
		{"invalid DNS name", func(*testing.T) string {
			return certManifest("  dnsNames: [ok.example.com, a..b]\n")
		}, []string{"spec.dnsNames[1]", "a..b"}},
		{"invalid IP address", func(*testing.T) string {
			return certManifest("  ipAddresses: [10.0.0.1, 300.1.1.1]\n")
		}, []string{"spec.ipAddresses[1]", "300.1.1.1"}},
		{"invalid email address", func(*testing.T) string {
			return certManifest("  emailAddresses: [not-an-email]\n")
		}, []string{"spec.emailAddresses[0]"}},
		{"invalid URI", func(*testing.T) string {
			return certManifest("  uris: [\"::not a uri\"]\n")
		}, []string{"spec.uris[0]"}},
		{"duration below 600 s", func(*testing.T) string {
			return certManifest("  dnsNames: [app.example.com]\n  duration: 5m\n")
		}, []string{"spec.duration", "10m0s"}},
		{"renewBefore with renewBeforePercentage", func(*testing.T) string {
			return certManifest("  dnsNames: [app.example.com]\n  renewBefore: 24h\n  renewBeforePercentage: 20\n")
		}, []string{"spec.renewBefore"}},
		{"literalSubject with commonName", func(*testing.T) string {
			return certManifest("  literalSubject: \"CN=app,O=acme\"\n  commonName: app\n")
		}, []string{"spec.commonName"}},
		{"unsupported RSA key size", func(*testing.T) string {
			return certManifest("  dnsNames: [app.example.com]\n  privateKey: {algorithm: RSA, size: 1024}\n")
		}, []string{"spec.privateKey.size", "1024"}},
		{"unsupported ECDSA curve", func(*testing.T) string {
			return certManifest("  dnsNames: [app.example.com]\n  privateKey: {algorithm: ECDSA, size: 255}\n")
		}, []string{"spec.privateKey.size", "255"}},
		{"CSR with a bad signature", func(t *testing.T) string {
			return requestManifest(badSignatureCSR(t), "")
		}, []string{"spec.request", "signature"}},
		{"CertificateRequest expirationSeconds below 600", func(t *testing.T) string {
			return requestManifest(goodCSR(t), "  expirationSeconds: 300\n")
		}, []string{"spec.expirationSeconds", "at least 600"}},
		{"one bad document among good ones", func(*testing.T) string {
			return goodIssuer + "---\n" + certManifest("  dnsNames: [ok.example.com, -bad-.example.com]\n") +
				"---\n" + strings.Replace(certManifest("  dnsNames: [b.example.com]\n"), "name: app", "name: b", 1)
		}, []string{"Certificate/default/app", "spec.dnsNames[1]"}},
		{"one undecodable document among good ones", func(*testing.T) string {
			return goodIssuer + "---\n" + certManifest("  dnsNames: [app.example.com]\n  bogus: 1\n")
		}, []string{"document 2", "spec.bogus"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			err := h.applyAll(tc.manifest(t))
			if err == nil {
				t.Fatal("accepted")
			}
			t.Logf("refused: %v", err)
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if got := h.stored(); len(got) != 0 {
				t.Fatalf("stored after a refused apply: %v", got)
			}
			// Nothing is queued either: running the queue does nothing.
			if n := h.run(); n != 0 {
				t.Fatalf("%d messages processed after a refused apply", n)
			}
		})
	}
}

// Bad input errors are permanent: the API answers 4xx, a queue would not retry.
func TestBadInputErrorsArePermanent(t *testing.T) {
	h := newHarness(t)
	objs, err := api.Decode([]byte(certManifest("  dnsNames: [a..b]\n")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.rt.App.Service.Apply(h.ctx, callerLocal, objs); !errs.IsPermanent(err) {
		t.Fatalf("validation: %v is not permanent", err)
	}
	if _, err := h.rt.App.Service.Apply(h.ctx, callerLocal, []api.Object{objs[0]}); !errs.IsPermanent(err) || !strings.Contains(err.Error(), "spec.dnsNames[0]") {
		t.Fatalf("Apply: %v", err)
	}
}

func TestCertificateRequestSpecIsImmutable(t *testing.T) {
	h := newHarness(t)
	csr := goodCSR(t)
	if err := h.applyAll(requestManifest(csr, "  duration: 720h\n")); err != nil {
		t.Fatalf("valid request refused: %v", err)
	}
	k := api.Key{Kind: api.KindCertificateRequest, Namespace: "default", Name: "req"}
	before, err := h.rt.Store.Get(h.ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, manifest, want string
	}{
		{"duration", requestManifest(csr, "  duration: 1440h\n"), "spec.duration: field is immutable"},
		{"issuerRef", strings.Replace(requestManifest(csr, "  duration: 720h\n"), "{name: ca}", "{name: other, kind: ClusterIssuer}", 1), "spec.issuerRef.name: field is immutable"},
		// Usages with the same key usage bits as the CSR (signing is digital
		// signature): the CSR agrees, the list changed.
		{"usages", requestManifest(csr, "  duration: 720h\n  usages: [signing, key encipherment]\n"), "spec.usages: field is immutable"},
		// A CSR without "cert sign" contradicts isCA: true, which validation
		// of the object itself refuses (as cert-manager's webhook would on create).
		{"isCA", requestManifest(csr, "  duration: 720h\n  isCA: true\n"), "spec.isCA"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := h.applyAll(tc.manifest)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errs.IsPermanent(err) {
				t.Fatalf("err = %v, want a permanent %q", err, tc.want)
			}
			after, _ := h.rt.Store.Get(h.ctx, k)
			if after.Version != before.Version || string(after.Data) != string(before.Data) {
				t.Fatal("the stored request changed")
			}
		})
	}
	if got := h.stored(); len(got) != 1 || got[0] != k.String() {
		t.Fatalf("stored = %v, want only the request", got)
	}
}

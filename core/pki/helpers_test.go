package pki

import (
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"sync"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
)

// testNow is the fixed time every certificate in these tests is built around.
var testNow = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

var (
	keyCacheMu sync.Mutex
	keyCache   = map[string]crypto.Signer{}
)

// testKey returns a key of the given algorithm and size, generated once per
// test binary (RSA generation is slow) and keyed by name so that tests can
// ask for distinct keys of the same kind.
func testKey(t testing.TB, name string, alg api.PrivateKeyAlgorithm, size int) crypto.Signer {
	t.Helper()
	keyCacheMu.Lock()
	defer keyCacheMu.Unlock()
	id := fmt.Sprintf("%s/%s/%d", name, alg, size)
	if k, ok := keyCache[id]; ok {
		return k
	}
	k, err := GenerateKey(&api.CertificatePrivateKey{Algorithm: alg, Size: size})
	if err != nil {
		t.Fatalf("GenerateKey(%s %d): %v", alg, size, err)
	}
	keyCache[id] = k
	return k
}

func ecKey(t testing.TB, name string) crypto.Signer {
	return testKey(t, name, api.ECDSAKeyAlgorithm, 256)
}

// certOpt adjusts a certificate template.
type certOpt func(*x509.Certificate)

func withCA() certOpt {
	return func(c *x509.Certificate) {
		c.IsCA, c.BasicConstraintsValid = true, true
		c.KeyUsage |= x509.KeyUsageCertSign
	}
}

func withCN(cn string) certOpt { return func(c *x509.Certificate) { c.Subject.CommonName = cn } }

func withDNS(n ...string) certOpt { return func(c *x509.Certificate) { c.DNSNames = n } }

func withValidity(nb, na time.Time) certOpt {
	return func(c *x509.Certificate) { c.NotBefore, c.NotAfter = nb, na }
}

// issueCert signs a certificate for pub with parent/parentKey (nil parent:
// self-signed with parentKey) and returns it parsed.
func issueCert(t testing.TB, pub crypto.PublicKey, parent *x509.Certificate, parentKey crypto.Signer, opts ...certOpt) *x509.Certificate {
	t.Helper()
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "test"},
		NotBefore:    testNow.Add(-time.Hour),
		NotAfter:     testNow.Add(90 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
	}
	for _, o := range opts {
		o(tmpl)
	}
	if parent == nil {
		parent = tmpl
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, parentKey)
	if err != nil {
		t.Fatalf("create certificate: %v", err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("parse certificate: %v", err)
	}
	return c
}

// pkiChain is root -> intermediate -> leaf.
type pkiChain struct {
	root, inter, leaf          *x509.Certificate
	rootKey, interKey, leafKey crypto.Signer
}

func newChain(t testing.TB) pkiChain {
	t.Helper()
	var c pkiChain
	c.rootKey, c.interKey, c.leafKey = ecKey(t, "root"), ecKey(t, "inter"), ecKey(t, "leaf")
	c.root = issueCert(t, c.rootKey.Public(), nil, c.rootKey, withCA(), withCN("root"))
	c.inter = issueCert(t, c.interKey.Public(), c.root, c.rootKey, withCA(), withCN("intermediate"))
	c.leaf = issueCert(t, c.leafKey.Public(), c.inter, c.interKey, withCN("leaf.example.com"), withDNS("leaf.example.com"))
	return c
}

// certificate builds a Certificate with the given spec adjustments.
func certificate(opts ...func(*api.CertificateSpec)) *api.Certificate {
	crt := &api.Certificate{
		TypeMeta:   api.TypeMeta{APIVersion: api.CertManagerV1, Kind: api.KindCertificate},
		ObjectMeta: api.ObjectMeta{Name: "web", Namespace: "team-a"},
		Spec: api.CertificateSpec{
			SecretName: "web-tls",
			CommonName: "web.example.com",
			DNSNames:   []string{"web.example.com", "www.example.com"},
			IssuerRef:  api.IssuerReference{Name: "ca", Kind: api.KindIssuer, Group: api.CertManagerGroup},
		},
	}
	for _, o := range opts {
		o(&crt.Spec)
	}
	return crt
}

func boolPtr(b bool) *bool              { return &b }
func int32Ptr(i int32) *int32           { return &i }
func strPtr(s string) *string           { return &s }
func dur(d time.Duration) *api.Duration { return api.NewDuration(d) }

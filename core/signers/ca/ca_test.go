package ca

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/clock"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/pki"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/signers"
)

// memSecrets is a test double: an in-memory ports.SecretStore. A non-nil
// err makes every call fail with it.
type memSecrets struct {
	mu  sync.Mutex
	m   map[string]ports.Secret
	err error
}

func newSecrets(ss ...ports.Secret) *memSecrets {
	s := &memSecrets{m: map[string]ports.Secret{}}
	for _, x := range ss {
		s.m[x.Namespace+"/"+x.Name] = x
	}
	return s
}

func (s *memSecrets) Get(_ context.Context, ns, name string) (ports.Secret, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return ports.Secret{}, s.err
	}
	v, ok := s.m[ns+"/"+name]
	if !ok {
		return ports.Secret{}, fmt.Errorf("secret %s/%s: %w", ns, name, ports.ErrNotFound)
	}
	return v, nil
}

func (s *memSecrets) Create(ctx context.Context, x ports.Secret) error {
	if _, err := s.Get(ctx, x.Namespace, x.Name); err == nil {
		return ports.ErrAlreadyExists
	}
	return s.Put(ctx, x)
}

func (s *memSecrets) Put(_ context.Context, x ports.Secret) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[x.Namespace+"/"+x.Name] = x
	return nil
}

func (s *memSecrets) Delete(_ context.Context, ns, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, ns+"/"+name)
	return nil
}

// observation is one Metrics.Observe call.
type observation struct {
	name   string
	value  float64
	labels []string
}

// fakeMetrics is a test double recording observations.
type fakeMetrics struct{ obs []observation }

func (m *fakeMetrics) Inc(string, ...string) {}
func (m *fakeMetrics) Observe(name string, v float64, labels ...string) {
	m.obs = append(m.obs, observation{name, v, labels})
}

var now = time.Date(2025, 6, 1, 8, 30, 0, 0, time.UTC)

func ecKey(t testing.TB) crypto.Signer {
	t.Helper()
	k, err := pki.GenerateKey(&api.CertificatePrivateKey{Algorithm: api.ECDSAKeyAlgorithm})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

type caOpt func(*x509.Certificate)

// newCA issues a CA certificate for key, signed by parent (nil: self-signed).
func newCA(t testing.TB, cn string, key crypto.Signer, parent *x509.Certificate, parentKey crypto.Signer, opts ...caOpt) *x509.Certificate {
	t.Helper()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             now.Add(-24 * time.Hour),
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	for _, o := range opts {
		o(tmpl)
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, key.Public(), parentKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func caSecret(t testing.TB, ns string, key crypto.Signer, certs ...*x509.Certificate) ports.Secret {
	t.Helper()
	keyPEM, err := pki.EncodePKCS8PEM(key)
	if err != nil {
		t.Fatal(err)
	}
	return ports.Secret{Namespace: ns, Name: "ca-key-pair", Data: map[string][]byte{
		"tls.crt": pki.EncodeCertificatesPEM(certs...),
		"tls.key": keyPEM,
	}}
}

func caIssuer(opts ...func(*api.Issuer)) *api.Issuer {
	iss := &api.Issuer{
		TypeMeta:   api.TypeMeta{APIVersion: api.CertManagerV1, Kind: api.KindIssuer},
		ObjectMeta: api.ObjectMeta{Name: "ca", Namespace: "team-a"},
		Spec:       api.IssuerSpec{CA: &api.CAIssuer{SecretName: "ca-key-pair"}},
	}
	for _, o := range opts {
		o(iss)
	}
	return iss
}

func withMax(d string) func(*api.Issuer) {
	return func(i *api.Issuer) { i.Annotations = map[string]string{api.AnnotationMaxDuration: d} }
}

// csrRequest builds a CertificateRequest for the Certificate spec crtSpec adjusts.
func csrRequest(t testing.TB, key crypto.Signer, crtSpec func(*api.CertificateSpec), reqSpec func(*api.CertificateRequestSpec)) *api.CertificateRequest {
	t.Helper()
	crt := &api.Certificate{Spec: api.CertificateSpec{CommonName: "web.example.com", DNSNames: []string{"web.example.com"}}}
	if crtSpec != nil {
		crtSpec(&crt.Spec)
	}
	csr, err := pki.GenerateCSR(crt, key)
	if err != nil {
		t.Fatal(err)
	}
	cr := &api.CertificateRequest{
		ObjectMeta: api.ObjectMeta{Name: "web-1", Namespace: "team-a"},
		Spec: api.CertificateRequestSpec{Request: csr, IssuerRef: api.IssuerReference{Name: "ca"},
			IsCA: crt.Spec.IsCA, Usages: crt.Spec.Usages, Duration: crt.Spec.Duration},
	}
	if reqSpec != nil {
		reqSpec(&cr.Spec)
	}
	return cr
}

// fixture is a root CA and an intermediate CA, both usable as issuers.
type fixture struct {
	rootKey, interKey crypto.Signer
	root, inter       *x509.Certificate
}

func newFixture(t testing.TB) fixture {
	var f fixture
	f.rootKey, f.interKey = ecKey(t), ecKey(t)
	f.root = newCA(t, "root", f.rootKey, nil, nil)
	f.inter = newCA(t, "intermediate", f.interKey, f.root, f.rootKey)
	return f
}

func leafOf(t *testing.T, res signers.Result) []*x509.Certificate {
	t.Helper()
	certs, err := pki.ParseChainPEM(res.Certificate)
	if err != nil {
		t.Fatalf("Result.Certificate: %v", err)
	}
	return certs
}

func TestSign(t *testing.T) {
	f := newFixture(t)
	leafKey := ecKey(t)
	full := func(s *api.CertificateSpec) {
		s.IPAddresses = []string{"10.0.0.1"}
		s.URIs = []string{"spiffe://cluster.local/web"}
		s.EmailAddresses = []string{"ops@example.com"}
		s.OtherNames = []api.OtherName{{OID: "1.3.6.1.4.1.311.20.2.3", UTF8Value: "web@example.com"}}
		s.Usages = []api.KeyUsage{"digital signature", "server auth", "client auth"}
	}
	tests := []struct {
		name        string
		secret      ports.Secret
		issuer      *api.Issuer
		crt         func(*api.CertificateSpec)
		req         func(*api.CertificateRequestSpec)
		wantChain   []*x509.Certificate // after the leaf
		wantCA      *x509.Certificate
		wantHonored time.Duration
		wantReq     time.Duration
		check       func(t *testing.T, leaf *x509.Certificate)
	}{
		{
			name:   "root CA: leaf only, root in ca, every SAN and the usages",
			secret: caSecret(t, "team-a", f.rootKey, f.root),
			issuer: caIssuer(func(i *api.Issuer) {
				i.Spec.CA.CRLDistributionPoints = []string{"http://crl.example.com/ca.crl"}
				i.Spec.CA.OCSPServers = []string{"http://ocsp.example.com"}
				i.Spec.CA.IssuingCertificateURLs = []string{"http://ca.example.com/ca.crt"}
			}),
			crt: full, wantCA: f.root, wantReq: pki.DefaultCertificateDuration, wantHonored: pki.DefaultCertificateDuration,
			check: func(t *testing.T, leaf *x509.Certificate) {
				if leaf.Subject.CommonName != "web.example.com" || !slices.Equal(leaf.DNSNames, []string{"web.example.com"}) ||
					len(leaf.IPAddresses) != 1 || !leaf.IPAddresses[0].Equal(net.ParseIP("10.0.0.1")) ||
					len(leaf.URIs) != 1 || leaf.URIs[0].String() != "spiffe://cluster.local/web" || !slices.Equal(leaf.EmailAddresses, []string{"ops@example.com"}) {
					t.Errorf("names = %q %v %v %v %v", leaf.Subject.CommonName, leaf.DNSNames, leaf.IPAddresses, leaf.URIs, leaf.EmailAddresses)
				}
				if m := pki.CertificateMatchesSpec(leaf, &api.CertificateSpec{CommonName: "web.example.com", DNSNames: []string{"web.example.com"},
					IPAddresses: []string{"10.0.0.1"}, URIs: []string{"spiffe://cluster.local/web"}, EmailAddresses: []string{"ops@example.com"},
					OtherNames: []api.OtherName{{OID: "1.3.6.1.4.1.311.20.2.3", UTF8Value: "web@example.com"}},
					PrivateKey: &api.CertificatePrivateKey{Algorithm: api.ECDSAKeyAlgorithm}}); len(m) != 0 {
					t.Errorf("issued certificate does not match the names asked for: %v", m)
				}
				if leaf.KeyUsage != x509.KeyUsageDigitalSignature || !slices.Equal(leaf.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}) {
					t.Errorf("usages = %#x %v", leaf.KeyUsage, leaf.ExtKeyUsage)
				}
				if leaf.IsCA {
					t.Error("leaf is a CA")
				}
				if !slices.Equal(leaf.CRLDistributionPoints, []string{"http://crl.example.com/ca.crl"}) || !slices.Equal(leaf.OCSPServer, []string{"http://ocsp.example.com"}) ||
					!slices.Equal(leaf.IssuingCertificateURL, []string{"http://ca.example.com/ca.crt"}) {
					t.Errorf("CRL %v OCSP %v AIA %v", leaf.CRLDistributionPoints, leaf.OCSPServer, leaf.IssuingCertificateURL)
				}
				if !leaf.NotBefore.Equal(now) {
					t.Errorf("notBefore = %s, want the fake clock's %s", leaf.NotBefore, now)
				}
			},
		},
		{
			name: "intermediate with its root in the secret: leaf + intermediate, root in ca", secret: caSecret(t, "team-a", f.interKey, f.inter, f.root),
			issuer: caIssuer(), wantChain: []*x509.Certificate{f.inter}, wantCA: f.root, wantReq: pki.DefaultCertificateDuration, wantHonored: pki.DefaultCertificateDuration,
		},
		{
			name: "intermediate alone: it is the top of the chain", secret: caSecret(t, "team-a", f.interKey, f.inter),
			issuer: caIssuer(), wantChain: []*x509.Certificate{f.inter}, wantCA: f.inter, wantReq: pki.DefaultCertificateDuration, wantHonored: pki.DefaultCertificateDuration,
		},
		{
			name: "duration clamped by the issuer maximum", secret: caSecret(t, "team-a", f.rootKey, f.root), issuer: caIssuer(withMax("720h")),
			req: func(s *api.CertificateRequestSpec) { s.Duration = api.NewDuration(1000 * time.Hour) }, wantCA: f.root, wantReq: 1000 * time.Hour, wantHonored: 720 * time.Hour,
		},
		{
			name: "expirationSeconds below the maximum is honoured", secret: caSecret(t, "team-a", f.rootKey, f.root), issuer: caIssuer(withMax("720h")),
			req: func(s *api.CertificateRequestSpec) { s.ExpirationSeconds = new(int32(600)) }, wantCA: f.root, wantReq: 10 * time.Minute, wantHonored: 10 * time.Minute,
		},
		{
			name:   "duration clamped by the CA's expiry",
			secret: caSecret(t, "team-a", f.rootKey, newCA(t, "short-root", f.rootKey, nil, nil, func(c *x509.Certificate) { c.NotAfter = now.Add(10 * 24 * time.Hour) })),
			issuer: caIssuer(), wantReq: pki.DefaultCertificateDuration, wantHonored: 10 * 24 * time.Hour,
		},
		{
			name: "CA certificate with name constraints", secret: caSecret(t, "team-a", f.rootKey, f.root), issuer: caIssuer(),
			crt: func(s *api.CertificateSpec) {
				s.IsCA = true
				s.NameConstraints = &api.NameConstraints{Critical: true,
					Permitted: &api.NameConstraintItem{DNSDomains: []string{"example.com"}, IPRanges: []string{"10.0.0.0/8"}, EmailAddresses: []string{"example.com"}, URIDomains: []string{".example.com"}},
					Excluded:  &api.NameConstraintItem{DNSDomains: []string{"bad.example.com"}, IPRanges: []string{"2001:db8::/32"}}}
			},
			wantCA: f.root, wantReq: pki.DefaultCertificateDuration, wantHonored: pki.DefaultCertificateDuration,
			check: func(t *testing.T, leaf *x509.Certificate) {
				if !leaf.IsCA || leaf.KeyUsage&x509.KeyUsageCertSign == 0 {
					t.Errorf("CA %v usages %#x", leaf.IsCA, leaf.KeyUsage)
				}
				if !leaf.PermittedDNSDomainsCritical || !slices.Equal(leaf.PermittedDNSDomains, []string{"example.com"}) ||
					!slices.Equal(leaf.ExcludedDNSDomains, []string{"bad.example.com"}) || len(leaf.PermittedIPRanges) != 1 ||
					leaf.PermittedIPRanges[0].String() != "10.0.0.0/8" || len(leaf.ExcludedIPRanges) != 1 || leaf.ExcludedIPRanges[0].String() != "2001:db8::/32" ||
					!slices.Equal(leaf.PermittedEmailAddresses, []string{"example.com"}) || !slices.Equal(leaf.PermittedURIDomains, []string{".example.com"}) {
					t.Errorf("name constraints: critical %v permitted %v %v %v %v excluded %v %v", leaf.PermittedDNSDomainsCritical, leaf.PermittedDNSDomains,
						leaf.PermittedIPRanges, leaf.PermittedEmailAddresses, leaf.PermittedURIDomains, leaf.ExcludedDNSDomains, leaf.ExcludedIPRanges)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			metrics := &fakeMetrics{}
			s := New(newSecrets(tt.secret), clock.NewFake(now), metrics)
			cr := csrRequest(t, leafKey, tt.crt, tt.req)
			res, err := s.Sign(context.Background(), signers.Request{CR: cr, Issuer: tt.issuer, SecretNamespace: "team-a"})
			if err != nil {
				t.Fatalf("Sign() error = %v", err)
			}
			certs := leafOf(t, res)
			leaf := certs[0]
			if !pki.PublicKeysEqual(leaf.PublicKey, leafKey.Public()) {
				t.Error("leaf is not for the CSR's key")
			}
			caCerts, _ := pki.ParseChainPEM(tt.secret.Data["tls.crt"])
			if err := leaf.CheckSignatureFrom(caCerts[0]); err != nil {
				t.Errorf("leaf is not signed by the CA: %v", err)
			}
			if len(certs)-1 != len(tt.wantChain) {
				t.Fatalf("chain has %d certificates after the leaf, want %d", len(certs)-1, len(tt.wantChain))
			}
			for i, c := range tt.wantChain {
				if !certs[i+1].Equal(c) {
					t.Errorf("chain[%d] = %s, want %s", i+1, certs[i+1].Subject, c.Subject)
				}
			}
			wantCA := tt.wantCA
			if wantCA == nil {
				wantCA = caCerts[0]
			}
			if string(res.CA) != string(pki.EncodeCertificatesPEM(wantCA)) {
				t.Errorf("CA is not %s", wantCA.Subject)
			}
			if res.Requested != tt.wantReq || res.Honoured != tt.wantHonored {
				t.Errorf("Requested/Honoured = %s/%s, want %s/%s", res.Requested, res.Honoured, tt.wantReq, tt.wantHonored)
			}
			if got := leaf.NotAfter.Sub(leaf.NotBefore); got != tt.wantHonored {
				t.Errorf("certificate lifetime = %s, want %s", got, tt.wantHonored)
			}
			if leaf.NotAfter.After(caCerts[0].NotAfter) {
				t.Error("leaf outlives its CA")
			}
			wantObs := []observation{
				{MetricRequested, tt.wantReq.Seconds(), []string{"issuer", "Issuer/team-a/ca"}},
				{MetricHonoured, tt.wantHonored.Seconds(), []string{"issuer", "Issuer/team-a/ca"}},
			}
			if len(metrics.obs) != 2 || metrics.obs[0].name != wantObs[0].name || metrics.obs[0].value != wantObs[0].value || !slices.Equal(metrics.obs[0].labels, wantObs[0].labels) ||
				metrics.obs[1].name != wantObs[1].name || metrics.obs[1].value != wantObs[1].value || !slices.Equal(metrics.obs[1].labels, wantObs[1].labels) {
				t.Errorf("metrics = %+v, want %+v", metrics.obs, wantObs)
			}
			if tt.check != nil {
				tt.check(t, leaf)
			}
		})
	}
}

func TestSignClusterIssuerReadsTheClusterResourceNamespace(t *testing.T) {
	f := newFixture(t)
	metrics := &fakeMetrics{}
	iss := &api.ClusterIssuer{TypeMeta: api.TypeMeta{Kind: api.KindClusterIssuer}, ObjectMeta: api.ObjectMeta{Name: "root"},
		Spec: api.IssuerSpec{CA: &api.CAIssuer{SecretName: "ca-key-pair"}}}
	s := New(newSecrets(caSecret(t, "certfn", f.rootKey, f.root)), clock.NewFake(now), metrics)
	res, err := s.Sign(context.Background(), signers.Request{CR: csrRequest(t, ecKey(t), nil, nil), Issuer: iss, SecretNamespace: "certfn"})
	if err != nil {
		t.Fatalf("Sign() error = %v", err)
	}
	if len(leafOf(t, res)) != 1 || len(metrics.obs) != 2 || metrics.obs[0].labels[1] != "ClusterIssuer/root" {
		t.Errorf("result/metrics unexpected: %+v", metrics.obs)
	}
}

func TestSignErrors(t *testing.T) {
	f := newFixture(t)
	leafKey := ecKey(t)
	good := caSecret(t, "team-a", f.rootKey, f.root)
	with := func(key string, v []byte) ports.Secret {
		s := caSecret(t, "team-a", f.rootKey, f.root)
		s.Data[key] = v
		return s
	}
	notCA := newCA(t, "not-a-ca", f.rootKey, nil, nil, func(c *x509.Certificate) { c.IsCA = false; c.KeyUsage = x509.KeyUsageDigitalSignature })
	expired := newCA(t, "expired", f.rootKey, nil, nil, func(c *x509.Certificate) { c.NotAfter = now.Add(-time.Hour) })
	pathLen0 := newCA(t, "pathlen0", f.rootKey, nil, nil, func(c *x509.Certificate) { c.MaxPathLen, c.MaxPathLenZero = 0, true })
	constrained := newCA(t, "constrained", f.rootKey, nil, nil, func(c *x509.Certificate) { c.PermittedDNSDomains = []string{"example.org"} })
	constrainedRoot := newCA(t, "constrained-root", f.rootKey, nil, nil, func(c *x509.Certificate) { c.ExcludedDNSDomains = []string{"victim.corp"} })
	constrainedInter := newCA(t, "inter", f.interKey, constrainedRoot, f.rootKey)
	storeDown := newSecrets()
	storeDown.err = errors.New("secret store unavailable")
	tests := []struct {
		name      string
		store     *memSecrets
		issuer    *api.Issuer
		cr        *api.CertificateRequest
		want      string
		permanent bool
		notReady  bool
	}{
		{name: "missing CA secret", store: newSecrets(), want: "CA secret team-a/ca-key-pair not found", notReady: true},
		{name: "secret store failing is transient", store: storeDown, want: "secret store unavailable"},
		{name: "undecodable tls.crt", store: newSecrets(with("tls.crt", []byte("junk"))), want: "tls.crt", notReady: true},
		{name: "undecodable tls.key", store: newSecrets(with("tls.key", []byte("junk"))), want: "tls.key", notReady: true},
		{name: "key does not match", store: newSecrets(caSecret(t, "team-a", f.interKey, f.root)), want: "does not match", notReady: true},
		{name: "not a CA", store: newSecrets(caSecret(t, "team-a", f.rootKey, notCA)), want: "is not a CA certificate", notReady: true},
		{name: "CA expired", store: newSecrets(caSecret(t, "team-a", f.rootKey, expired)), want: "not now", notReady: true},
		{name: "no spec.ca", store: newSecrets(good), issuer: &api.Issuer{}, want: "no spec.ca", notReady: true},
		{name: "bad max-duration annotation", store: newSecrets(good), issuer: caIssuer(withMax("forever")), want: api.AnnotationMaxDuration, notReady: true},
		{name: "bad CSR is permanent", store: newSecrets(good), cr: &api.CertificateRequest{Spec: api.CertificateRequestSpec{Request: []byte("junk")}}, want: "spec.request", permanent: true},
		{name: "CSR usages disagree with the request", store: newSecrets(good),
			cr:   csrRequest(t, leafKey, func(s *api.CertificateSpec) { s.Usages = []api.KeyUsage{"server auth"} }, func(s *api.CertificateRequestSpec) { s.Usages = []api.KeyUsage{"client auth"} }),
			want: "extended key usages do not match", permanent: true},
		{name: "CA request under a path length 0 CA", store: newSecrets(caSecret(t, "team-a", f.rootKey, pathLen0)),
			cr: csrRequest(t, leafKey, func(s *api.CertificateSpec) { s.IsCA = true }, nil), want: "path length constraint is 0", permanent: true},
		{name: "name outside the CA's name constraints", store: newSecrets(caSecret(t, "team-a", f.rootKey, constrained)),
			want: "the CA cannot sign this request: x509: a root or intermediate certificate is not authorized to sign for this name", permanent: true},
		{name: "CN-only name under a name-constrained CA", store: newSecrets(caSecret(t, "team-a", f.rootKey, constrained)),
			cr:   csrRequest(t, leafKey, func(s *api.CertificateSpec) { s.CommonName, s.DNSNames = "admin.victim.corp", nil }, nil),
			want: `ca: spec.request: subject commonName "admin.victim.corp" is not among the request's DNS names or IP addresses; the CA has name constraints`, permanent: true},
		{name: "CN beside other SANs under a name-constrained CA", store: newSecrets(caSecret(t, "team-a", f.rootKey, constrained)),
			cr: csrRequest(t, leafKey, func(s *api.CertificateSpec) {
				s.CommonName, s.DNSNames = "admin.victim.corp", []string{"web.example.org"}
			}, nil),
			want: `subject commonName "admin.victim.corp" is not among`, permanent: true},
		{name: "CN-only name under a constrained intermediate's chain", store: newSecrets(caSecret(t, "team-a", f.interKey, constrainedInter, constrainedRoot)),
			cr:   csrRequest(t, leafKey, func(s *api.CertificateSpec) { s.CommonName, s.DNSNames = "admin.victim.corp", nil }, nil),
			want: `subject commonName "admin.victim.corp" is not among`, permanent: true},
		{name: "RSA-1024 key", store: newSecrets(good), cr: rsa1024Request(t), want: "spec.request: the public key is RSA of 1024 bits", permanent: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			iss := tt.issuer
			if iss == nil {
				iss = caIssuer()
			}
			cr := tt.cr
			if cr == nil {
				cr = csrRequest(t, leafKey, nil, nil)
			}
			metrics := &fakeMetrics{}
			_, err := New(tt.store, clock.NewFake(now), metrics).Sign(context.Background(), signers.Request{CR: cr, Issuer: iss, SecretNamespace: "team-a"})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Sign() error = %v, want containing %q", err, tt.want)
			}
			if errs.IsPermanent(err) != tt.permanent {
				t.Errorf("permanent = %v, want %v (%v)", errs.IsPermanent(err), tt.permanent, err)
			}
			if errors.Is(err, signers.ErrIssuerNotReady) != tt.notReady {
				t.Errorf("ErrIssuerNotReady = %v, want %v (%v)", !tt.notReady, tt.notReady, err)
			}
			if strings.Contains(err.Error(), "PRIVATE KEY") {
				t.Errorf("error %q mentions key material", err)
			}
			if len(metrics.obs) != 0 {
				t.Errorf("metrics recorded for a failed signing: %+v", metrics.obs)
			}
		})
	}
}

// BenchmarkSign measures one CA signing (ECDSA P-256 CA and leaf), secret
// read from the in-memory test double included.
func BenchmarkSign(b *testing.B) {
	f := newFixture(b)
	s := New(newSecrets(caSecret(b, "team-a", f.rootKey, f.root)), clock.NewFake(now), &fakeMetrics{})
	req := signers.Request{CR: csrRequest(b, ecKey(b), nil, nil), Issuer: caIssuer(), SecretNamespace: "team-a"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Sign(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
}

// rsa1024Request is a request whose CSR has an RSA-1024 key.
func rsa1024Request(t *testing.T) *api.CertificateRequest {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	return csrRequest(t, k, nil, nil)
}

// Under a name-constrained CA, a commonName repeated among the DNS names
// or IP addresses is signed (and checked against the constraints as a
// SAN).
func TestSignCommonNameAmongSANsUnderNameConstraints(t *testing.T) {
	f := newFixture(t)
	constrained := newCA(t, "constrained", f.rootKey, nil, nil, func(c *x509.Certificate) {
		c.PermittedDNSDomains = []string{"example.com"}
		_, n, _ := net.ParseCIDR("10.0.0.0/8")
		c.PermittedIPRanges = []*net.IPNet{n}
	})
	for _, spec := range []func(*api.CertificateSpec){
		func(s *api.CertificateSpec) {
			s.CommonName, s.DNSNames = "WEB.example.com", []string{"web.example.com"}
		},
		func(s *api.CertificateSpec) {
			s.CommonName, s.DNSNames, s.IPAddresses = "10.1.2.3", nil, []string{"10.1.2.3"}
		},
		func(s *api.CertificateSpec) { s.CommonName = "" },
	} {
		cr := csrRequest(t, ecKey(t), spec, nil)
		if _, err := New(newSecrets(caSecret(t, "team-a", f.rootKey, constrained)), clock.NewFake(now), nil).Sign(context.Background(),
			signers.Request{CR: cr, Issuer: caIssuer(), SecretNamespace: "team-a"}); err != nil {
			t.Errorf("Sign: %v", err)
		}
	}
}

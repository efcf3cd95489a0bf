package selfsigned

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	ct "github.com/certfn/certfn/core/certificates/certtest"
	"github.com/certfn/certfn/core/clock"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/pki"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/core/signers"
)

// memSecrets is a test double: an in-memory ports.SecretStore. A non-nil
// err makes Get fail with it.
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

var now = time.Date(2025, 6, 1, 8, 30, 0, 0, time.UTC)

func key(t *testing.T, alg api.PrivateKeyAlgorithm) crypto.Signer {
	t.Helper()
	k, err := pki.GenerateKey(&api.CertificatePrivateKey{Algorithm: alg})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// keySecret is the next-private-key secret the keymanager writes (PKCS#8).
func keySecret(t *testing.T, k crypto.Signer) ports.Secret {
	t.Helper()
	p, err := pki.EncodePKCS8PEM(k)
	if err != nil {
		t.Fatal(err)
	}
	return ports.Secret{Namespace: "team-a", Name: "web-next", Data: map[string][]byte{"tls.key": p}}
}

// selfSignedRequest builds a request for k, annotated with the key secret.
func selfSignedRequest(t *testing.T, k crypto.Signer, crtSpec func(*api.CertificateSpec), reqSpec func(*api.CertificateRequestSpec)) *api.CertificateRequest {
	t.Helper()
	crt := &api.Certificate{Spec: api.CertificateSpec{CommonName: "root.example.com", IsCA: true}}
	if crtSpec != nil {
		crtSpec(&crt.Spec)
	}
	csr, err := pki.GenerateCSR(crt, k)
	if err != nil {
		t.Fatal(err)
	}
	cr := &api.CertificateRequest{
		ObjectMeta: api.ObjectMeta{Name: "web-1", Namespace: "team-a", Annotations: map[string]string{api.AnnotationPrivateKeySecretName: "web-next"}},
		Spec:       api.CertificateRequestSpec{Request: csr, IsCA: crt.Spec.IsCA, Usages: crt.Spec.Usages},
	}
	if reqSpec != nil {
		reqSpec(&cr.Spec)
	}
	return cr
}

func selfSignedIssuer(annotations map[string]string) *api.Issuer {
	return &api.Issuer{
		TypeMeta:   api.TypeMeta{Kind: api.KindIssuer},
		ObjectMeta: api.ObjectMeta{Name: "selfsigned", Namespace: "team-a", Annotations: annotations},
		Spec:       api.IssuerSpec{SelfSigned: &api.SelfSignedIssuer{CRLDistributionPoints: []string{"http://crl.example.com/root.crl"}}},
	}
}

func TestSign(t *testing.T) {
	tests := []struct {
		name         string
		alg          api.PrivateKeyAlgorithm
		annotations  map[string]string
		req          func(*api.CertificateRequestSpec)
		wantRequest  time.Duration
		wantHonoured time.Duration
	}{
		{"ECDSA root, default lifetime", api.ECDSAKeyAlgorithm, nil, nil, pki.DefaultCertificateDuration, pki.DefaultCertificateDuration},
		{"RSA", api.RSAKeyAlgorithm, nil, func(s *api.CertificateRequestSpec) { s.Duration = api.NewDuration(48 * time.Hour) }, 48 * time.Hour, 48 * time.Hour},
		{"Ed25519", api.Ed25519KeyAlgorithm, nil, nil, pki.DefaultCertificateDuration, pki.DefaultCertificateDuration},
		{"clamped by the issuer maximum", api.ECDSAKeyAlgorithm, map[string]string{api.AnnotationMaxDuration: "24h"}, nil, pki.DefaultCertificateDuration, 24 * time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := key(t, tt.alg)
			s := New(newSecrets(keySecret(t, k)), clock.NewFake(now))
			res, err := s.Sign(context.Background(), signers.Request{CR: selfSignedRequest(t, k, nil, tt.req), Issuer: selfSignedIssuer(tt.annotations), SecretNamespace: "team-a"})
			if err != nil {
				t.Fatalf("Sign() error = %v", err)
			}
			certs, err := pki.ParseChainPEM(res.Certificate)
			if err != nil || len(certs) != 1 {
				t.Fatalf("Certificate = %d certs, %v; want one", len(certs), err)
			}
			c := certs[0]
			if string(res.CA) != string(res.Certificate) {
				t.Error("CA is not the certificate itself")
			}
			if !pki.IsSelfSigned(c) || !pki.PublicKeysEqual(c.PublicKey, k.Public()) {
				t.Error("certificate is not self-signed by the request's key")
			}
			if !c.IsCA || c.Subject.CommonName != "root.example.com" || c.Issuer.CommonName != "root.example.com" {
				t.Errorf("CA %v subject %q issuer %q", c.IsCA, c.Subject.CommonName, c.Issuer.CommonName)
			}
			if !slices.Equal(c.CRLDistributionPoints, []string{"http://crl.example.com/root.crl"}) {
				t.Errorf("CRL distribution points = %v", c.CRLDistributionPoints)
			}
			if !c.NotBefore.Equal(now) || c.NotAfter.Sub(c.NotBefore) != tt.wantHonoured {
				t.Errorf("validity %s..%s, want %s from %s", c.NotBefore, c.NotAfter, tt.wantHonoured, now)
			}
			if res.Requested != tt.wantRequest || res.Honoured != tt.wantHonoured {
				t.Errorf("Requested/Honoured = %s/%s, want %s/%s", res.Requested, res.Honoured, tt.wantRequest, tt.wantHonoured)
			}
		})
	}
}

func TestSignErrors(t *testing.T) {
	k := key(t, api.ECDSAKeyAlgorithm)
	other := key(t, api.ECDSAKeyAlgorithm)
	good := keySecret(t, k)
	badKey := keySecret(t, k)
	badKey.Data["tls.key"] = []byte("-----BEGIN PRIVATE KEY-----\nc2VjcmV0c2VjcmV0\n-----END PRIVATE KEY-----\n")
	noKey := keySecret(t, k)
	delete(noKey.Data, "tls.key")
	down := newSecrets()
	down.err = errors.New("secret store unavailable")
	tests := []struct {
		name      string
		store     *memSecrets
		cr        *api.CertificateRequest
		issuer    *api.Issuer
		want      string
		permanent bool
		notReady  bool
	}{
		{name: "CSR key differs from the secret's key", store: newSecrets(keySecret(t, other)), want: "does not match the private key", permanent: true},
		{name: "annotation missing", store: newSecrets(good), cr: func() *api.CertificateRequest {
			cr := selfSignedRequest(t, k, nil, nil)
			cr.Annotations = nil
			return cr
		}(), want: api.AnnotationPrivateKeySecretName, permanent: true},
		{name: "key secret not found is pending", store: newSecrets(), want: "private key secret team-a/web-next not found", notReady: true},
		{name: "secret store failing is transient", store: down, want: "secret store unavailable"},
		{name: "secret without tls.key", store: newSecrets(noKey), want: "has no tls.key", permanent: true},
		{name: "undecodable key", store: newSecrets(badKey), want: "not a valid key", permanent: true},
		{name: "bad CSR", store: newSecrets(good), cr: selfSignedRequest(t, k, nil, func(s *api.CertificateRequestSpec) { s.Request = []byte("junk") }), want: "spec.request", permanent: true},
		{name: "CSR hides an IP address in its subjectAltName", store: newSecrets(good), cr: selfSignedRequest(t, k, nil, func(s *api.CertificateRequestSpec) {
			s.Request, s.IsCA = ct.HiddenIPCSR(t, "web.team-a.example.com"), false
		}), want: "spec.request: subjectAltName entry 2 (iPAddress): is encoded as constructed", permanent: true},
		{name: "CA bit disagrees", store: newSecrets(good), cr: selfSignedRequest(t, k, nil, func(s *api.CertificateRequestSpec) { s.IsCA = false }), want: "spec.isCA", permanent: true},
		{name: "issuer is not selfSigned", store: newSecrets(good), issuer: &api.Issuer{}, want: "no spec.selfSigned", notReady: true},
		{name: "bad max-duration annotation", store: newSecrets(good), issuer: selfSignedIssuer(map[string]string{api.AnnotationMaxDuration: "-1h"}), want: api.AnnotationMaxDuration, notReady: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cr := tt.cr
			if cr == nil {
				cr = selfSignedRequest(t, k, nil, nil)
			}
			iss := tt.issuer
			if iss == nil {
				iss = selfSignedIssuer(nil)
			}
			_, err := New(tt.store, clock.NewFake(now)).Sign(context.Background(), signers.Request{CR: cr, Issuer: iss, SecretNamespace: "team-a"})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Sign() error = %v, want containing %q", err, tt.want)
			}
			if errs.IsPermanent(err) != tt.permanent {
				t.Errorf("permanent = %v, want %v (%v)", errs.IsPermanent(err), tt.permanent, err)
			}
			if errors.Is(err, signers.ErrIssuerNotReady) != tt.notReady {
				t.Errorf("ErrIssuerNotReady = %v, want %v (%v)", !tt.notReady, tt.notReady, err)
			}
			if strings.Contains(err.Error(), "c2VjcmV0") {
				t.Errorf("error %q echoes key bytes", err)
			}
		})
	}
}

package certificatesigningrequests

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/signers"
)

// fixedSigner is a test double of a signer that returns the chain it holds.
type fixedSigner struct{ chain []byte }

func (s fixedSigner) Sign(context.Context, signers.Request) (signers.Result, error) {
	return signers.Result{Certificate: s.chain}, nil
}

// readyIssuer is a test double of certificaterequests.Issuers: one Ready CA ClusterIssuer.
type readyIssuer struct{}

func (readyIssuer) Get(context.Context, string, api.IssuerReference) (api.GenericIssuer, string, bool, error) {
	iss := &api.ClusterIssuer{ObjectMeta: api.ObjectMeta{Name: "ca"}, Spec: api.IssuerSpec{CA: &api.CAIssuer{SecretName: "ca"}}}
	iss.Status.Conditions = []api.Condition{{Type: api.IssuerConditionReady, Status: api.ConditionTrue}}
	return iss, "cert-manager", true, nil
}

// keptWrites is a test double of Writer that counts writes and
// deletions and keeps the last due time written.
type keptWrites struct {
	n, deleted int
	next       time.Time
}

func (w *keptWrites) UpdateCSR(_ context.Context, _ *State, next time.Time) error {
	w.n++
	w.next = next
	return nil
}

func (w *keptWrites) DeleteCSR(context.Context, *State) error { w.deleted++; return nil }

func selfSignedPEM(t *testing.T, key *ecdsa.PrivateKey) []byte {
	t.Helper()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "x"}, NotBefore: time.Unix(0, 0), NotAfter: time.Unix(3600, 0)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// The signing step takes a certificate only for spec.request's public
// key (docs/design/certificates-api.md: status.certificate is validated): a signer answering
// with another key's certificate fails the CSR instead of handing the
// requester a certificate it cannot use (or someone else's).
func TestSigningStepChecksThePublicKey(t *testing.T) {
	requester, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{DNSNames: []string{"a.example.com"}}, requester)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		key    *ecdsa.PrivateKey
		issued bool
	}{
		{"the requester's key", requester, true},
		{"another key", other, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := csrWith("clusterissuers.cert-manager.io/ca", func(c *api.CertificateSigningRequest) {
				c.Spec.Request = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
				Approve(c, "cert-manager", "test", "", time.Unix(0, 0))
			})
			w := &keptWrites{}
			env := &Env{Writer: w, Issuers: readyIssuer{}, Signers: map[string]signers.Signer{"ca": fixedSigner{selfSignedPEM(t, tc.key)}},
				ClusterResourceNamespace: "cert-manager", WaitPoll: time.Minute}
			out, err := SigningStep(context.Background(), env, &State{CSR: c, Now: time.Unix(10, 0)})
			if err != nil || !out.Wrote || w.n != 1 {
				t.Fatalf("outcome %+v, %v, %d writes", out, err, w.n)
			}
			f := c.Status.Condition(api.CSRConditionFailed)
			if tc.issued != c.IsIssued() || tc.issued != (f == nil) {
				t.Fatalf("issued %v, failed %+v", c.IsIssued(), f)
			}
			if !tc.issued && (f.Reason != ReasonSigningError || !strings.Contains(f.Message, "another public key")) {
				t.Fatalf("failed %+v, want SigningError naming the public key", f)
			}
		})
	}
}

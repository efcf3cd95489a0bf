package acme

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/pki"
)

// A CertificateSigningRequest (certificates.k8s.io/v1) whose signer name
// names an ACME issuer is signed through an Order it owns, against Pebble,
// as cert-manager's CSR ACME signer: for a ClusterIssuer the Order lives
// in the cluster resource namespace, for a namespaced Issuer in the
// Issuer's namespace; the certificate is the one Pebble issued for the
// requester's key; the Order goes when the CSR is deleted.
func TestCSRSignedByACMEIssuer(t *testing.T) {
	for _, tc := range []struct {
		name, signer, orderNS string
		issuer                func(e *env) string
	}{
		{"ClusterIssuer", "clusterissuers.cert-manager.io/pebble", "cert-manager", func(e *env) string { return e.issuerYAML(http01Solvers) }},
		{"Issuer", "issuers.cert-manager.io/team-a.pebble", "team-a", func(e *env) string {
			return strings.Replace(strings.Replace(e.issuerYAML(http01Solvers), "kind: ClusterIssuer", "kind: Issuer", 1),
				"metadata: {name: pebble}", "metadata: {name: pebble, namespace: team-a}", 1)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envOpts{})
			e.apply(tc.issuer(e))
			e.run()
			key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			if err != nil {
				t.Fatal(err)
			}
			host := strings.ToLower(tc.name) + ".csr.example.test"
			der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: host}, DNSNames: []string{host}}, key)
			if err != nil {
				t.Fatal(err)
			}
			e.apply(fmt.Sprintf(`apiVersion: certificates.k8s.io/v1
kind: CertificateSigningRequest
metadata: {name: workload, labels: {app: workload}}
spec:
  request: %s
  signerName: %s
  expirationSeconds: 86400
  usages: [digital signature, server auth]
`, base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})), tc.signer))
			csrKey := api.Key{Kind: api.KindCertificateSigningRequest, Name: "workload"}
			get := func() *api.CertificateSigningRequest {
				o, err := e.rt.Repo.Get(e.ctx, csrKey)
				if err != nil {
					t.Fatal(err)
				}
				return o.(*api.CertificateSigningRequest)
			}
			if !e.until(400, 2*time.Second, func() bool { return get().IsFinal() }) || !get().IsIssued() {
				t.Fatalf("CSR not issued: %+v\nissuers: %s %s\norders: %s\nchallenges: %s", get().Status.Conditions,
					e.describe(api.KindClusterIssuer), e.describe(api.KindIssuer), e.describe(api.KindOrder), e.describe(api.KindChallenge))
			}
			c := get()
			chain := parseChain(t, c.Status.Certificate)
			if !pki.PublicKeysEqual(chain[0].PublicKey, key.Public()) || len(chain[0].DNSNames) != 1 || chain[0].DNSNames[0] != host {
				t.Fatalf("leaf for %v, want %s with the requester's key", chain[0].DNSNames, host)
			}
			if _, err := chain[0].Verify(x509.VerifyOptions{DNSName: host, Roots: e.peb.roots(), Intermediates: pool(chain[1:])}); err != nil {
				t.Fatalf("the CSR's certificate does not verify against Pebble's root: %v", err)
			}
			if c.Status.HonouredDuration == nil || c.Status.HonouredDuration.Duration != chain[0].NotAfter.Sub(chain[0].NotBefore) {
				t.Errorf("honoured duration %v, want the leaf's lifetime", c.Status.HonouredDuration)
			}
			// It waited on its Order (Event OrderPending), then the last
			// Event says how it ended.
			if evs, err := e.rt.Repo.EventsOf(e.ctx, csrKey); err != nil || len(evs) == 0 || evs[len(evs)-1].Reason != "CertificateIssued" {
				t.Errorf("the CSR's Events: %+v, %v; want CertificateIssued last", evs, err)
			}
			orders := e.orders()
			if len(orders) != 1 {
				t.Fatalf("want one Order, got %s", e.describe(api.KindOrder))
			}
			o := orders[0]
			if ref := o.ControllerOf(); o.Namespace != tc.orderNS || ref == nil || ref.Kind != api.KindCertificateSigningRequest ||
				ref.Name != "workload" || ref.UID != c.UID || o.Labels["app"] != "workload" || o.Status.State != api.StateValid {
				t.Fatalf("Order %s/%s owner %+v labels %v state %s, want valid in %s owned by the CSR", o.Namespace, o.Name, o.OwnerReferences, o.Labels, o.Status.State, tc.orderNS)
			}
			if err := e.rt.App.Service.Delete(e.ctx, caller, csrKey, app.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			if n := len(e.orders()); n != 0 {
				t.Fatalf("%d Orders left after the CSR was deleted, want 0", n)
			}
		})
	}
}

func pool(certs []*x509.Certificate) *x509.CertPool {
	p := x509.NewCertPool()
	for _, c := range certs {
		p.AddCert(c)
	}
	return p
}

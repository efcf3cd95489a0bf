package certificatesigningrequests

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"math/big"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificaterequests"
)

// A final CSR is kept Retain after it ended (its Denied or Failed
// condition, or status.issuedAt), then deleted, as Kubernetes'
// csrcleaner; a pending one (neither approved nor denied) is deleted a
// day after its creation, as there; an approved one that is not final is
// kept. The time comes from the CSR, not from the record's due time
// (which another writer may have set).
func TestCleanupStep(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	issued := func(notAfter time.Time) func(*api.CertificateSigningRequest) {
		return func(c *api.CertificateSigningRequest) {
			key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: t0.Add(-time.Hour), NotAfter: notAfter}
			der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
			if err != nil {
				t.Fatal(err)
			}
			c.Status.Certificate = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
			c.Status.IssuedAt = api.NewTime(t0)
		}
	}
	denied := func(c *api.CertificateSigningRequest) { c.Status.AddCondition(api.CSRConditionDenied, "r", "m", t0) }
	created := func(c *api.CertificateSigningRequest) { c.CreationTimestamp = api.NewTime(t0) }
	approved := func(c *api.CertificateSigningRequest) { Approve(c, "cert-manager", "r", "m", t0) }
	legacy := func(c *api.CertificateSigningRequest) {
		issued(t0.Add(90 * 24 * time.Hour))(c)
		c.Status.IssuedAt, c.CreationTimestamp = nil, api.NewTime(t0.Add(-time.Minute))
	}
	for _, tc := range []struct {
		name      string
		csr       *api.CertificateSigningRequest
		now       time.Time
		deleted   bool
		wantAgain time.Time
	}{
		{name: "pending, within the day: kept", csr: csrWith("clusterissuers.cert-manager.io/ca", created), now: t0.Add(PendingRetain - time.Second), wantAgain: t0.Add(PendingRetain)},
		{name: "pending, a day later: deleted", csr: csrWith("clusterissuers.cert-manager.io/ca", created), now: t0.Add(PendingRetain), deleted: true},
		{name: "another signer's, pending a day: deleted", csr: csrWith("example.com/other", created), now: t0.Add(PendingRetain + time.Hour), deleted: true},
		{name: "approved, not final, two days later: kept", csr: csrWith("clusterissuers.cert-manager.io/ca", created, approved), now: t0.Add(48 * time.Hour)},
		{name: "pending without a creation time: kept", csr: csrWith("clusterissuers.cert-manager.io/ca"), now: t0.Add(48 * time.Hour)},
		{name: "denied, within the hour: kept", csr: csrWith("clusterissuers.cert-manager.io/ca", denied), now: t0.Add(time.Minute), wantAgain: t0.Add(Retain)},
		{name: "denied, an hour later: deleted", csr: csrWith("clusterissuers.cert-manager.io/ca", denied), now: t0.Add(Retain), deleted: true},
		{name: "issued, within the hour: kept", csr: csrWith("clusterissuers.cert-manager.io/ca", issued(t0.Add(90*24*time.Hour))), now: t0.Add(59 * time.Minute), wantAgain: t0.Add(Retain)},
		{name: "issued, an hour later: deleted", csr: csrWith("clusterissuers.cert-manager.io/ca", issued(t0.Add(90*24*time.Hour))), now: t0.Add(Retain + time.Second), deleted: true},
		{name: "issued, certificate expiring sooner: kept the hour (the issuance quota counts it)", csr: csrWith("clusterissuers.cert-manager.io/ca", issued(t0.Add(10*time.Minute))),
			now: t0.Add(11 * time.Minute), wantAgain: t0.Add(Retain)},
		{name: "issued without issuedAt: counted from creation", csr: csrWith("clusterissuers.cert-manager.io/ca", legacy), now: t0, wantAgain: t0.Add(Retain - time.Minute)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &keptWrites{}
			out, err := CleanupStep(context.Background(), &Env{Writer: w}, &State{CSR: tc.csr, Now: tc.now})
			if err != nil {
				t.Fatal(err)
			}
			if (w.deleted == 1) != tc.deleted || out.Wrote != tc.deleted || w.n != 0 {
				t.Fatalf("deleted %d, wrote %v, updates %d; want deleted %v", w.deleted, out.Wrote, w.n, tc.deleted)
			}
			if !out.RequeueAt.Equal(tc.wantAgain) {
				t.Fatalf("again at %v, want %v (%s)", out.RequeueAt, tc.wantAgain, out.Why)
			}
		})
	}
}

// The steps that make a CSR final write it due at KeepUntil: the time
// CleanupStep deletes it.
func TestFinalWriteIsDueAtKeepUntil(t *testing.T) {
	w := &keptWrites{}
	c := csrWith("clusterissuers.cert-manager.io/ca", func(c *api.CertificateSigningRequest) { c.Spec.Request = []byte("not a CSR") })
	Approve(c, "cert-manager", "test", "", time.Unix(0, 0))
	now := time.Unix(1000, 0)
	if _, err := SigningStep(context.Background(), &Env{Writer: w}, &State{CSR: c, Now: now}); err != nil {
		t.Fatal(err)
	}
	if !c.Status.Has(api.CSRConditionFailed) || !w.next.Equal(now.Add(Retain)) {
		t.Fatalf("failed %v, due %v; want Failed due %v", c.Status.Has(api.CSRConditionFailed), w.next, now.Add(Retain))
	}
}

// The issuance quota counts a requester's CSRs issued within its window:
// an issued CSR must be kept at least that long.
func TestRetainCoversTheQuotaWindow(t *testing.T) {
	if Retain < certificaterequests.QuotaWindow {
		t.Fatalf("Retain %v is shorter than the issuance quota's window %v", Retain, certificaterequests.QuotaWindow)
	}
}

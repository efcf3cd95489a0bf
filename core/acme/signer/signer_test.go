package signer_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/acme"
	"github.com/certfn/certfn/core/acme/acmetest"
	"github.com/certfn/certfn/core/acme/challenges"
	"github.com/certfn/certfn/core/acme/signer"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/signers"
)

func request(t *testing.T) *api.CertificateRequest {
	t.Helper()
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "cn.example.com"},
		DNSNames: []string{"a.example.com"}, IPAddresses: []net.IP{net.ParseIP("192.0.2.1")}}, k)
	if err != nil {
		t.Fatal(err)
	}
	ctrl := true
	return &api.CertificateRequest{TypeMeta: api.TypeMeta{APIVersion: api.CertManagerV1, Kind: api.KindCertificateRequest},
		ObjectMeta: api.ObjectMeta{Name: "web-2", Namespace: "ns", UID: "cr-uid",
			Annotations:     map[string]string{api.AnnotationRevision: "2"},
			OwnerReferences: []api.OwnerReference{{APIVersion: api.CertManagerV1, Kind: api.KindCertificate, Name: "web", UID: "c", Controller: &ctrl}}},
		Spec: api.CertificateRequestSpec{Request: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			IssuerRef: acmetest.IssuerRef, Duration: api.NewDuration(48 * time.Hour)}}
}

func leafPEM(t *testing.T) []byte {
	t.Helper()
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: acmetest.T0, NotAfter: acmetest.T0.Add(24 * time.Hour)}
	der, _ := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func TestSign(t *testing.T) {
	r := acmetest.NewRig(t, nil, challenges.Config{})
	r.Create(&api.Certificate{TypeMeta: api.TypeMeta{APIVersion: api.CertManagerV1, Kind: api.KindCertificate},
		ObjectMeta: api.ObjectMeta{Name: "web", Namespace: "ns", Labels: map[string]string{"team": "blue"}},
		Spec:       api.CertificateSpec{SecretName: "web-tls", IssuerRef: acmetest.IssuerRef},
		Status:     api.CertificateStatus{RenewalInfo: &api.RenewalInfo{CertificateID: "aki.serial"}}})
	iss := r.Get(api.Key{Kind: api.KindClusterIssuer, Name: "le"}).(api.GenericIssuer)
	iss.GetSpec().ACME.Profile = "shortlived"
	s := signer.New(nil)
	cr := request(t)
	req := signers.Request{CR: cr, Issuer: iss}
	if _, err := s.Sign(r.Ctx, req); err == nil || !strings.Contains(err.Error(), "no Objects") {
		t.Fatalf("Sign without Objects: %v", err)
	}
	req.Objects = r.Objects

	// No Order: created, pending.
	_, err := s.Sign(r.Ctx, req)
	name := acme.OrderName(cr)
	if !errors.Is(err, signers.ErrPending) || err.Error() != "Waiting on Order "+name || errs.IsPermanent(err) {
		t.Fatalf("first Sign: %v", err)
	}
	key := api.Key{Kind: api.KindOrder, Namespace: "ns", Name: name}
	o := r.Get(key).(*api.Order)
	want := api.OrderSpec{CommonName: "cn.example.com", DNSNames: []string{"cn.example.com", "a.example.com"}, IPAddresses: []string{"192.0.2.1"},
		Profile: "shortlived", Replaces: "aki.serial"}
	if o.Spec.CommonName != want.CommonName || strings.Join(o.Spec.DNSNames, ",") != strings.Join(want.DNSNames, ",") ||
		strings.Join(o.Spec.IPAddresses, ",") != "192.0.2.1" || o.Spec.Profile != want.Profile || o.Spec.Replaces != want.Replaces ||
		o.Spec.Duration == nil || o.Spec.Duration.Duration != 48*time.Hour {
		t.Fatalf("order spec %+v", o.Spec)
	}
	if ref := o.ControllerOf(); ref == nil || ref.Kind != api.KindCertificateRequest || ref.UID != "cr-uid" {
		t.Fatalf("owner %+v", o.OwnerReferences)
	}
	if o.Labels["team"] != "blue" || o.Annotations[api.AnnotationRevision] != "2" || acme.SpecChanged(&o.ObjectMeta, o.Spec) {
		t.Fatalf("labels %v annotations %v", o.Labels, o.Annotations)
	}

	tests := []struct {
		name    string
		status  api.OrderStatus
		pending bool
		perm    string
	}{
		{"in progress", api.OrderStatus{State: api.StateProcessing}, true, ""},
		{"invalid", api.OrderStatus{State: api.StateInvalid, Reason: "caa: forbidden"}, false, "Order " + name + " failed (invalid): caa: forbidden"},
		{"errored", api.OrderStatus{State: api.StateErrored, Reason: "bad spec"}, false, "bad spec"},
		{"valid", api.OrderStatus{State: api.StateValid, Certificate: leafPEM(t)}, false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r.Mutate(key, func(obj api.Object) { obj.(*api.Order).Status = tc.status })
			res, err := s.Sign(r.Ctx, req)
			switch {
			case tc.pending:
				if !errors.Is(err, signers.ErrPending) {
					t.Fatalf("err %v, want pending", err)
				}
			case tc.perm != "":
				if !errs.IsPermanent(err) || !strings.Contains(err.Error(), tc.perm) {
					t.Fatalf("err %v, want permanent %q", err, tc.perm)
				}
			default:
				if err != nil || string(res.Certificate) != string(tc.status.Certificate) || res.Honoured != 24*time.Hour || res.Requested != 48*time.Hour {
					t.Fatalf("result %+v, %v", res, err)
				}
			}
		})
	}
	if n := len(r.List(api.KindOrder)); n != 1 {
		t.Fatalf("%d Orders, want 1", n)
	}
}

// Signing has begun once the request's Order exists: the issuance quota
// then lets the Order's certificate through (signers.Resumer).
func TestBegun(t *testing.T) {
	r := acmetest.NewRig(t, nil, challenges.Config{})
	iss := r.Get(api.Key{Kind: api.KindClusterIssuer, Name: "le"}).(api.GenericIssuer)
	s := signer.New(nil)
	req := signers.Request{CR: request(t), Issuer: iss}
	if _, err := s.Begun(r.Ctx, req); err == nil || !strings.Contains(err.Error(), "no Objects") {
		t.Fatalf("Begun without Objects: %v", err)
	}
	req.Objects = r.Objects
	if begun, err := s.Begun(r.Ctx, req); begun || err != nil {
		t.Fatalf("no Order yet: Begun = %v, %v", begun, err)
	}
	if _, err := s.Sign(r.Ctx, req); !errors.Is(err, signers.ErrPending) {
		t.Fatalf("Sign: %v", err)
	}
	if begun, err := s.Begun(r.Ctx, req); !begun || err != nil {
		t.Fatalf("Order created: Begun = %v, %v", begun, err)
	}
}

// A CertificateSigningRequest (core/certificatesigningrequests hands it over as a request with
// Owner set) gets an Order it owns: the owner reference names the
// cluster-scoped CSR, its labels are the CSR's (cert-manager's CSR ACME
// signer), expirationSeconds is the Order's duration; an Order of the same
// name owned by anything else is refused.
func TestSignForCertificateSigningRequest(t *testing.T) {
	r := acmetest.NewRig(t, nil, challenges.Config{})
	iss := r.Get(api.Key{Kind: api.KindClusterIssuer, Name: "le"}).(api.GenericIssuer)
	s := signer.New(nil)
	cr := request(t)
	cr.OwnerReferences, cr.Annotations, cr.Spec.Duration = nil, nil, nil
	secs := int32(3600)
	cr.Spec.ExpirationSeconds = &secs
	c := &api.CertificateSigningRequest{TypeMeta: api.TypeMeta{APIVersion: api.CertificatesV1, Kind: api.KindCertificateSigningRequest},
		ObjectMeta: api.ObjectMeta{Name: "web-2", UID: "cr-uid", Labels: map[string]string{"app": "web"}},
		Spec:       api.CertificateSigningRequestSpec{Request: cr.Spec.Request, SignerName: "clusterissuers.cert-manager.io/le"}}
	req := signers.Request{CR: cr, Issuer: iss, Objects: r.Objects, Owner: c}
	if _, err := s.Sign(r.Ctx, req); !errors.Is(err, signers.ErrPending) {
		t.Fatalf("first Sign: %v", err)
	}
	key := api.Key{Kind: api.KindOrder, Namespace: "ns", Name: acme.OrderName(cr)}
	o := r.Get(key).(*api.Order)
	if ref := o.ControllerOf(); ref == nil || ref.Kind != api.KindCertificateSigningRequest || ref.Name != "web-2" || ref.UID != "cr-uid" {
		t.Fatalf("owner %+v", o.OwnerReferences)
	}
	if owner := r.Record(key).Owner; owner != (api.Key{Kind: api.KindCertificateSigningRequest, Name: "web-2"}) {
		t.Fatalf("record owner %v, want the CSR (cluster-scoped)", owner)
	}
	if o.Labels["app"] != "web" || o.Spec.Duration == nil || o.Spec.Duration.Duration != time.Hour {
		t.Fatalf("labels %v duration %v", o.Labels, o.Spec.Duration)
	}
	// The same request seen without its CSR owner (a CertificateRequest of
	// the same name and UID) must not take the CSR's Order.
	if _, err := s.Sign(r.Ctx, signers.Request{CR: cr, Issuer: iss, Objects: r.Objects}); !errs.IsPermanent(err) || !strings.Contains(err.Error(), "owner or CSR differ") {
		t.Fatalf("Sign as a CertificateRequest: %v", err)
	}
}

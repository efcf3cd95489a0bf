package orders_test

import (
	"strings"
	"testing"

	"github.com/certfn/certfn/core/acme"
	"github.com/certfn/certfn/core/acme/acmetest"
	"github.com/certfn/certfn/core/acme/challenges"
	"github.com/certfn/certfn/core/api"
)

// An Order certfn's signer did not create for an approved request is
// failed before any ACME request: not controlled by a request, controlled
// by one that is not approved, or carrying another CSR or issuer.
func TestOrderProvenance(t *testing.T) {
	for _, tc := range []struct {
		name  string
		owner func(r *acmetest.Rig, o *api.Order) // sets the Order's owner (nil: none)
		want  string
	}{
		{"no owner", func(r *acmetest.Rig, o *api.Order) {
			o.OwnerReferences = []api.OwnerReference{{Kind: api.KindCertificate, Name: "x", Controller: ptr(true)}}
		}, "not controlled by a CertificateRequest"},
		{"missing request", func(r *acmetest.Rig, o *api.Order) {
			o.OwnerReferences = []api.OwnerReference{{Kind: api.KindCertificateRequest, Name: "gone", Controller: ptr(true)}}
		}, `CertificateRequest "gone" does not exist`},
		{"request not approved", func(r *acmetest.Rig, o *api.Order) {
			cr := request(o, "pending", nil)
			r.Create(cr)
			o.OwnerReferences = []api.OwnerReference{acme.ControllerRef(cr)}
		}, "is not approved"},
		{"another CSR", func(r *acmetest.Rig, o *api.Order) {
			cr := request(o, "other-csr", []byte("another CSR"))
			approve(cr)
			r.Create(cr)
			o.OwnerReferences = []api.OwnerReference{acme.ControllerRef(cr)}
		}, "does not carry the CSR"},
		{"missing CertificateSigningRequest", func(r *acmetest.Rig, o *api.Order) {
			o.OwnerReferences = []api.OwnerReference{{Kind: api.KindCertificateSigningRequest, Name: "gone", Controller: ptr(true)}}
		}, `CertificateSigningRequest "gone" does not exist`},
		{"CertificateSigningRequest not approved", func(r *acmetest.Rig, o *api.Order) {
			c := signingRequest(o, "pending", "clusterissuers.cert-manager.io/le", nil)
			r.Create(c)
			o.OwnerReferences = []api.OwnerReference{acme.ControllerRef(c)}
		}, "is not approved"},
		{"CertificateSigningRequest denied", func(r *acmetest.Rig, o *api.Order) {
			c := signingRequest(o, "denied", "clusterissuers.cert-manager.io/le", nil)
			approveCSR(c)
			c.Status.AddCondition(api.CSRConditionDenied, "test", "no", acmetest.T0)
			r.Create(c)
			o.OwnerReferences = []api.OwnerReference{acme.ControllerRef(c)}
		}, "is not approved"},
		{"CertificateSigningRequest with another CSR", func(r *acmetest.Rig, o *api.Order) {
			c := signingRequest(o, "other", "clusterissuers.cert-manager.io/le", []byte("another CSR"))
			approveCSR(c)
			r.Create(c)
			o.OwnerReferences = []api.OwnerReference{acme.ControllerRef(c)}
		}, "does not carry the CSR of its CertificateSigningRequest"},
		{"CertificateSigningRequest for another issuer", func(r *acmetest.Rig, o *api.Order) {
			c := signingRequest(o, "elsewhere", "clusterissuers.cert-manager.io/other", nil)
			approveCSR(c)
			r.Create(c)
			o.OwnerReferences = []api.OwnerReference{acme.ControllerRef(c)}
		}, "does not name the issuer"},
		{"CertificateSigningRequest for an Issuer of another namespace", func(r *acmetest.Rig, o *api.Order) {
			o.Spec.IssuerRef = api.IssuerReference{Name: "le", Kind: api.KindIssuer}
			acme.StampSpec(&o.ObjectMeta, o.Spec)
			c := signingRequest(o, "otherns", "issuers.cert-manager.io/other.le", nil)
			approveCSR(c)
			r.Create(c)
			o.OwnerReferences = []api.OwnerReference{acme.ControllerRef(c)}
		}, "does not name the issuer"},
		{"CertificateSigningRequest of another UID", func(r *acmetest.Rig, o *api.Order) {
			c := signingRequest(o, "replaced", "clusterissuers.cert-manager.io/le", nil)
			approveCSR(c)
			r.Create(c)
			ref := acme.ControllerRef(c)
			ref.UID = "an-older-one"
			o.OwnerReferences = []api.OwnerReference{ref}
		}, "is not the one it was created for"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := acmetest.NewRig(t, httpSolver, challenges.Config{})
			o := order(t, []string{"victim.example.com"})
			tc.owner(r, o)
			r.Create(o)
			r.MustReconcile(orderKey)
			got := getOrder(r)
			if got.Status.State != api.StateErrored || !strings.Contains(got.Status.Reason, tc.want) {
				t.Fatalf("state %q reason %q, want errored with %q", got.Status.State, got.Status.Reason, tc.want)
			}
			if calls := r.Client.Calls(); len(calls) != 0 {
				t.Fatalf("ACME requests for an Order certfn did not make: %v", calls)
			}
		})
	}
}

func request(o *api.Order, name string, csr []byte) *api.CertificateRequest {
	if csr == nil {
		csr = o.Spec.Request
	}
	return &api.CertificateRequest{TypeMeta: api.TypeMeta{APIVersion: api.CertManagerV1, Kind: api.KindCertificateRequest},
		ObjectMeta: api.ObjectMeta{Name: name, Namespace: o.Namespace, UID: name + "-uid"},
		Spec:       api.CertificateRequestSpec{Request: csr, IssuerRef: o.Spec.IssuerRef}}
}

func approve(cr *api.CertificateRequest) {
	api.SetCondition(&cr.Status.Conditions, api.Condition{Type: api.CertificateRequestConditionApproved, Status: api.ConditionTrue, Reason: "test"}, acmetest.T0)
}

func ptr[T any](v T) *T { return &v }

// An Order that an approved CertificateSigningRequest of its issuer owns
// (core/certificatesigningrequests's ACME signing, in the issuer's namespace) passes: it is
// ordered from the server, and its record names the cluster-scoped owner.
func TestOrderOwnedByCertificateSigningRequest(t *testing.T) {
	r := acmetest.NewRig(t, httpSolver, challenges.Config{})
	o := order(t, []string{"csr.example.com"})
	c := signingRequest(o, "workload", "clusterissuers.cert-manager.io/le", nil)
	approveCSR(c)
	r.Create(c)
	o.OwnerReferences = []api.OwnerReference{acme.ControllerRef(c)}
	r.Create(o)
	r.MustReconcile(orderKey)
	if got := getOrder(r); got.Status.State != api.StatePending || got.Status.URL == "" {
		t.Fatalf("state %q reason %q URL %q, want pending at the server", got.Status.State, got.Status.Reason, got.Status.URL)
	}
	if owner := r.Record(orderKey).Owner; owner != (api.Key{Kind: api.KindCertificateSigningRequest, Name: "workload"}) {
		t.Fatalf("record owner %v, want the cluster-scoped CertificateSigningRequest", owner)
	}
}

func signingRequest(o *api.Order, name, signer string, csr []byte) *api.CertificateSigningRequest {
	if csr == nil {
		csr = o.Spec.Request
	}
	return &api.CertificateSigningRequest{TypeMeta: api.TypeMeta{APIVersion: api.CertificatesV1, Kind: api.KindCertificateSigningRequest},
		ObjectMeta: api.ObjectMeta{Name: name, UID: name + "-uid"},
		Spec:       api.CertificateSigningRequestSpec{Request: csr, SignerName: signer, Username: "bob"}}
}

func approveCSR(c *api.CertificateSigningRequest) {
	c.Status.AddCondition(api.CSRConditionApproved, "test", "approved", acmetest.T0)
}

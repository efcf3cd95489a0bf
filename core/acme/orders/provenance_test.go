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

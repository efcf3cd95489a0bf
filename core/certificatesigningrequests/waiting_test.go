package certificatesigningrequests

import (
	"context"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificaterequests"
	ct "github.com/certfn/certfn/core/certificates/certtest"
	"github.com/certfn/certfn/core/signers"
	"github.com/certfn/certfn/core/step"
)

type fakeIssuers struct{ iss api.GenericIssuer }

func (f fakeIssuers) Get(context.Context, string, api.IssuerReference) (api.GenericIssuer, string, bool, error) {
	return f.iss, "cert-manager", f.iss != nil, nil
}

type fakeSigner struct{ err error }

func (f fakeSigner) Sign(context.Context, signers.Request) (signers.Result, error) {
	return signers.Result{}, f.err
}

type noWrites struct{ t *testing.T }

func (w noWrites) UpdateCSR(context.Context, *State, time.Time) error {
	w.t.Fatal("a waiting CSR was written")
	return nil
}

func (w noWrites) DeleteCSR(context.Context, *State) error {
	w.t.Fatal("a waiting CSR was deleted")
	return nil
}

type undecided struct{}

func (undecided) Decide(context.Context, *api.CertificateRequest) (certificaterequests.Decision, error) {
	return certificaterequests.Decision{Result: certificaterequests.Unmatched, Message: "no CertificateRequestPolicy matched"}, nil
}

// Each way a CSR waits is reported as step.Waiting with its reason (after
// cert-manager's CSR controllers), the step's message, and Warning for
// what needs someone to act; the CSR is not written and is polled again
// after WaitPoll.
func TestStepsReportWhyTheCSRWaits(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ready := &api.ClusterIssuer{ObjectMeta: api.ObjectMeta{Name: "ca"}, Spec: api.IssuerSpec{CA: &api.CAIssuer{SecretName: "s"}},
		Status: api.IssuerStatus{Conditions: []api.Condition{{Type: api.IssuerConditionReady, Status: api.ConditionTrue}}}}
	notReady := &api.ClusterIssuer{ObjectMeta: api.ObjectMeta{Name: "ca"}, Spec: api.IssuerSpec{CA: &api.CAIssuer{SecretName: "s"}}}
	approved := func(c *api.CertificateSigningRequest) { Approve(c, "cert-manager", "r", "m", now) }
	for _, tc := range []struct {
		name     string
		approved bool
		iss      api.GenericIssuer
		signErr  error
		step     func(context.Context, *Env, *State) (Outcome, error)
		want     step.Waiting
	}{
		{"nobody decided", false, ready, nil, ApprovalStep, step.Waiting{Reason: ReasonWaitingApproval, Message: "no CertificateRequestPolicy matched"}},
		{"the issuer is missing", true, nil, nil, SigningStep, step.Waiting{Reason: ReasonIssuerNotFound, Message: `ClusterIssuer "ca" not found`, Warning: true}},
		{"the issuer is not Ready", true, notReady, nil, SigningStep, step.Waiting{Reason: ReasonIssuerNotReady, Message: `issuer "ca" is not Ready`, Warning: true}},
		{"the signer says the issuer is not ready", true, ready, signers.NotReady("no CA key"), SigningStep,
			step.Waiting{Reason: ReasonIssuerNotReady, Message: "issuer not ready: no CA key", Warning: true}},
		{"the signer is pending", true, ready, signers.Pending("Waiting on Order o-1"), SigningStep, step.Waiting{Reason: ReasonPending, Message: "Waiting on Order o-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := csrWith("clusterissuers.cert-manager.io/ca", func(c *api.CertificateSigningRequest) { c.Spec.Request = ct.BareCSR(t, "web.example.com") })
			if tc.approved {
				approved(c)
			}
			env := &Env{Writer: noWrites{t}, Approver: undecided{}, Issuers: fakeIssuers{tc.iss},
				Signers: map[string]signers.Signer{"ca": fakeSigner{tc.signErr}}, ClusterResourceNamespace: "cert-manager", WaitPoll: 10 * time.Minute}
			out, err := tc.step(context.Background(), env, &State{CSR: c, Version: 1, Now: now})
			if err != nil {
				t.Fatal(err)
			}
			if out.Wrote || out.Waiting == nil || *out.Waiting != tc.want || !out.RequeueAt.Equal(now.Add(10*time.Minute)) {
				t.Fatalf("outcome %+v (waiting %+v), want %+v", out, out.Waiting, tc.want)
			}
		})
	}
	if pendingReason("acme") != ReasonOrderPending || pendingReason("ca") != ReasonPending {
		t.Fatal("pendingReason")
	}
}

// Steps with nothing to tell the CSR's users report no Waiting.
func TestDecidedCSRReportsNoWaiting(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	env := &Env{Writer: noWrites{t}, Approver: undecided{}, Issuers: fakeIssuers{}, WaitPoll: time.Minute}
	for _, c := range []*api.CertificateSigningRequest{
		csrWith("example.com/foreign"),
		csrWith("clusterissuers.cert-manager.io/ca", func(c *api.CertificateSigningRequest) {
			c.Status.AddCondition(api.CSRConditionDenied, "r", "m", now)
		}),
	} {
		for _, s := range []func(context.Context, *Env, *State) (Outcome, error){ApprovalStep, SigningStep} {
			out, err := s(context.Background(), env, &State{CSR: c, Now: now})
			if err != nil || out.Waiting != nil {
				t.Fatalf("%s: %+v %v", c.Spec.SignerName, out, err)
			}
		}
	}
}

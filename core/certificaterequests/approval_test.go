package certificaterequests_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificaterequests"
	ct "github.com/certfn/certfn/core/certificates/certtest"
	"github.com/certfn/certfn/core/clock"
	"github.com/certfn/certfn/core/ports"
)

// fakeApprover is a test double returning a fixed decision and counting calls.
type fakeApprover struct {
	d     certificaterequests.Decision
	err   error
	calls int
}

func (a *fakeApprover) Decide(context.Context, *api.CertificateRequest) (certificaterequests.Decision, error) {
	a.calls++
	return a.d, a.err
}

const approvalWaitPoll = 10 * time.Minute

func setup(t *testing.T, d certificaterequests.Decision, opts ...func(*api.CertificateRequest)) (*certificaterequests.Env, *certificaterequests.State, *fakeApprover, *ct.Writer, *ct.Metrics) {
	t.Helper()
	crt := ct.Cert()
	cr := ct.Request(t, crt, ct.Key(t, nil), 1, opts...)
	a := &fakeApprover{d: d}
	w := &ct.Writer{}
	m := ct.NewMetrics()
	env := &certificaterequests.Env{Clock: clock.NewFake(ct.T0), Writer: w, Approver: a, Metrics: m, WaitPoll: approvalWaitPoll}
	return env, &certificaterequests.State{CR: cr, Version: 3, Now: ct.T0}, a, w, m
}

func TestApprovalStepRecordsTheDecision(t *testing.T) {
	for _, tc := range []struct {
		name     string
		d        certificaterequests.Decision
		wantType string
		wantNext time.Time
		metric   string
	}{
		{"approve", certificaterequests.Decision{Result: certificaterequests.Approved, Reason: "policy.cert-manager.io", Message: "Approved by CertificateRequestPolicy: \"web\""},
			api.CertificateRequestConditionApproved, ct.T0.Add(certificaterequests.FollowUpGrace), "certfn_approval_total{namespace=default,status=approved}"},
		{"deny", certificaterequests.Decision{Result: certificaterequests.Denied, Reason: "policy.cert-manager.io", Message: "No policy approved this request: [web: spec.dnsNames: not allowed]"},
			api.CertificateRequestConditionDenied, ct.T0.Add(certificaterequests.FollowUpGrace), "certfn_approval_total{namespace=default,status=denied}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, st, a, w, m := setup(t, tc.d)
			out, err := certificaterequests.ApprovalStep(context.Background(), env, st)
			if err != nil || !out.Wrote {
				t.Fatalf("Step = %+v, %v", out, err)
			}
			if a.calls != 1 || strings.Join(w.Ops(), ",") != "UpdateRequest" {
				t.Fatalf("approver calls %d, writer %v", a.calls, w.Ops())
			}
			up := w.Calls[0]
			if !up.NextRunAt.Equal(tc.wantNext) {
				t.Errorf("nextRunAt = %s, want %s", up.NextRunAt, tc.wantNext)
			}
			c := api.FindCondition(up.Request.Status.Conditions, tc.wantType)
			if c == nil || c.Status != api.ConditionTrue || c.Reason != tc.d.Reason || c.Message != tc.d.Message {
				t.Fatalf("%s = %+v, want True/%s/%s", tc.wantType, c, tc.d.Reason, tc.d.Message)
			}
			other := api.CertificateRequestConditionDenied
			if tc.wantType == other {
				other = api.CertificateRequestConditionApproved
			}
			if api.FindCondition(up.Request.Status.Conditions, other) != nil {
				t.Errorf("both Approved and Denied set: %+v", up.Request.Status.Conditions)
			}
			if m.Get(tc.metric) != 1 {
				t.Errorf("metric %s = %v, want 1 (%v)", tc.metric, m.Get(tc.metric), m.Counts)
			}
			if st.Version != 4 {
				t.Errorf("state version = %d, want 4 after the write", st.Version)
			}
		})
	}
}

func TestApprovalStepUnmatchedWritesOnceWhileTheMessageIsUnchanged(t *testing.T) {
	d := certificaterequests.Decision{Result: certificaterequests.Unmatched, Message: "Waiting for approval: no policy applies"}
	env, st, a, w, m := setup(t, d)
	out, err := certificaterequests.ApprovalStep(context.Background(), env, st)
	if err != nil || !out.Wrote || len(w.Calls) != 1 {
		t.Fatalf("first: %+v %v %v", out, err, w.Ops())
	}
	if !w.Calls[0].NextRunAt.Equal(ct.T0.Add(approvalWaitPoll)) {
		t.Errorf("nextRunAt = %s, want now+WaitPoll", w.Calls[0].NextRunAt)
	}
	c := api.FindCondition(st.CR.Status.Conditions, api.CertificateRequestConditionReady)
	if c == nil || c.Status != api.ConditionFalse || c.Reason != api.CertificateRequestReasonPending || c.Message != d.Message {
		t.Fatalf("Ready = %+v, want False/Pending with the approver's message", c)
	}
	if api.FindCondition(st.CR.Status.Conditions, api.CertificateRequestConditionApproved) != nil ||
		api.FindCondition(st.CR.Status.Conditions, api.CertificateRequestConditionDenied) != nil {
		t.Fatal("an unmatched request was decided")
	}
	for i := 0; i < 3; i++ {
		st.Now = ct.T0.Add(time.Duration(i+1) * time.Minute)
		out, err = certificaterequests.ApprovalStep(context.Background(), env, st)
		if err != nil || out.Wrote || len(w.Calls) != 1 {
			t.Fatalf("repeat %d: %+v %v %v; want no write", i, out, err, w.Ops())
		}
		if !out.RequeueAt.Equal(st.Now.Add(approvalWaitPoll)) {
			t.Fatalf("RequeueAt = %s, want now+WaitPoll", out.RequeueAt)
		}
	}
	if a.calls != 4 {
		t.Errorf("approver asked %d times, want each run (4)", a.calls)
	}
	if got := m.Get("certfn_approval_total{namespace=default,status=unmatched}"); got != 1 {
		t.Errorf("unmatched counted %v times, want once", got)
	}
	// A new reason is written.
	a.d.Message = "Waiting for approval: a policy was added but does not apply"
	if out, _ := certificaterequests.ApprovalStep(context.Background(), env, st); !out.Wrote || len(w.Calls) != 2 {
		t.Fatalf("changed message not written: %v", w.Ops())
	}
}

func TestApprovalStepAlreadyDecidedIsANoOp(t *testing.T) {
	for _, tc := range []struct {
		name string
		opt  func(*api.CertificateRequest)
	}{
		{"approved", ct.Approved(ct.T0)},
		{"denied", ct.Denied("no", ct.T0)},
		{"Approved=False still counts as decided", func(cr *api.CertificateRequest) {
			api.SetCondition(&cr.Status.Conditions, api.Condition{Type: api.CertificateRequestConditionApproved, Status: api.ConditionFalse}, ct.T0)
		}},
		{"issued", ct.Issued([]byte("x"), nil, ct.T0)},
		{"invalid request", func(cr *api.CertificateRequest) {
			api.SetCondition(&cr.Status.Conditions, api.Condition{Type: api.CertificateRequestConditionInvalidRequest, Status: api.ConditionTrue}, ct.T0)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, st, a, w, m := setup(t, certificaterequests.Decision{Result: certificaterequests.Approved}, tc.opt)
			out, err := certificaterequests.ApprovalStep(context.Background(), env, st)
			if err != nil || out.Wrote || !out.RequeueAt.IsZero() || a.calls != 0 || len(w.Calls) != 0 || len(m.Counts) != 0 {
				t.Fatalf("outcome %+v err %v approver %d writer %v metrics %v; want nothing", out, err, a.calls, w.Ops(), m.Counts)
			}
		})
	}
}

func TestApprovalStepErrors(t *testing.T) {
	boom := errors.New("policy store unavailable")
	env, st, a, w, _ := setup(t, certificaterequests.Decision{})
	a.err = boom
	if _, err := certificaterequests.ApprovalStep(context.Background(), env, st); !errors.Is(err, boom) || !strings.Contains(err.Error(), "approval of CertificateRequest default/web-1") {
		t.Fatalf("approver error = %v", err)
	}
	if len(w.Calls) != 0 {
		t.Fatal("wrote after an approver error")
	}
	env, st, _, w, _ = setup(t, certificaterequests.Decision{Result: certificaterequests.Approved})
	w.Err = ports.ErrConflict
	out, err := certificaterequests.ApprovalStep(context.Background(), env, st)
	if !errors.Is(err, ports.ErrConflict) || !strings.Contains(err.Error(), "record approval decision") || out.Wrote {
		t.Fatalf("write error = %+v, %v", out, err)
	}
}

// probeNames are the names an external probe had signed under the policy
// "*.team-a.example.com", with the message each is now denied with.
var probeNames = []struct{ name, want string }{
	{"evil.com\x00.team-a.example.com", `spec.request: DNS name "evil.com\x00.team-a.example.com" (SAN 1): contains a character a DNS name cannot hold (NUL)`},
	{"evil.org/.team-a.example.com", `spec.request: DNS name "evil.org/.team-a.example.com" (SAN 1): contains a character a DNS name cannot hold ('/')`},
	{"evil.org .team-a.example.com", `spec.request: DNS name "evil.org .team-a.example.com" (SAN 1): contains a character a DNS name cannot hold (space)`},
}

// A request whose CSR carries a name a CA must not sign is denied before
// the approver is asked, whatever the approver would decide.
func TestApprovalStepDeniesNamesACAMustNotSign(t *testing.T) {
	for _, tc := range probeNames {
		t.Run(tc.name, func(t *testing.T) {
			crt := ct.Cert(ct.WithDNSNames(tc.name), func(c *api.Certificate) { c.Spec.CommonName = "" })
			env, _, a, w, m := setup(t, certificaterequests.Decision{Result: certificaterequests.Approved, Reason: "test", Message: "approved"})
			st := &certificaterequests.State{CR: ct.Request(t, crt, ct.Key(t, nil), 1), Version: 3, Now: ct.T0}
			out, err := certificaterequests.ApprovalStep(context.Background(), env, st)
			if err != nil || !out.Wrote || len(w.Calls) != 1 {
				t.Fatalf("Step = %+v, %v (writer %v)", out, err, w.Ops())
			}
			if a.calls != 0 {
				t.Fatalf("the approver was asked %d times", a.calls)
			}
			conds := w.Calls[0].Request.Status.Conditions
			d := api.FindCondition(conds, api.CertificateRequestConditionDenied)
			if d == nil || d.Status != api.ConditionTrue || d.Reason != certificaterequests.ReasonInvalidNames || d.Message != tc.want {
				t.Fatalf("Denied = %+v\nwant True/%s/%s", d, certificaterequests.ReasonInvalidNames, tc.want)
			}
			if api.FindCondition(conds, api.CertificateRequestConditionApproved) != nil {
				t.Fatal("a request with an invalid name was approved")
			}
			if got := m.Get("certfn_approval_total{namespace=default,status=denied}"); got != 1 {
				t.Errorf("denied counted %v times (%v)", got, m.Counts)
			}
		})
	}
	// A valid request still goes to the approver.
	env, st, a, _, _ := setup(t, certificaterequests.Decision{Result: certificaterequests.Approved, Reason: "test", Message: "approved"})
	if _, err := certificaterequests.ApprovalStep(context.Background(), env, st); err != nil || a.calls != 1 ||
		!api.IsTrue(st.CR.Status.Conditions, api.CertificateRequestConditionApproved) {
		t.Fatalf("valid request: err %v, approver calls %d, conditions %+v", err, a.calls, st.CR.Status.Conditions)
	}
}

// refusingApprover is a test double of the approver of a role that never
// decides (certificaterequests.Refuser).
type refusingApprover struct{ fakeApprover }

func (*refusingApprover) RefusesApproval() {}

// A role that never approves does not deny either, not even invalid
// names: the approving role decides (the signing step still refuses them).
func TestApprovalStepRefuserDecidesNothing(t *testing.T) {
	crt := ct.Cert(ct.WithDNSNames(probeNames[1].name), func(c *api.Certificate) { c.Spec.CommonName = "" })
	env, _, _, w, _ := setup(t, certificaterequests.Decision{})
	refuse := errors.New("this role never approves")
	a := &refusingApprover{fakeApprover{err: refuse}}
	env.Approver = a
	st := &certificaterequests.State{CR: ct.Request(t, crt, ct.Key(t, nil), 1), Version: 3, Now: ct.T0}
	if _, err := certificaterequests.ApprovalStep(context.Background(), env, st); !errors.Is(err, refuse) || a.calls != 1 || len(w.Calls) != 0 {
		t.Fatalf("err %v, approver calls %d, writes %v; want the refusal, no write", err, a.calls, w.Ops())
	}
}

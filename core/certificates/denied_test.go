package certificates_test

import (
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app/apptest"
	"github.com/certfn/certfn/core/certificaterequests"
)

// A denied request is recorded as such and replaced after the backoff
// (docs/design/approval-policy.md: "a denial is a permanent failure that the Certificate retries
// with backoff").
func TestDeniedRequestIsReplacedAfterTheBackoff(t *testing.T) {
	r := apptest.NewRig(t)
	r.Approver.Set(certificaterequests.Unmatched)
	r.Apply(apptest.SelfSignedYAML)
	r.Apply(apptest.CertYAML)
	r.Drain()
	reqKey := api.Key{Kind: api.KindCertificateRequest, Namespace: "default", Name: "web-1"}
	cr := r.Get(reqKey).(*api.CertificateRequest)
	if c := api.FindCondition(cr.Status.Conditions, "Ready"); c == nil || c.Reason != "Pending" {
		t.Fatalf("request not pending: %+v", cr.Status.Conditions)
	}
	if _, err := r.Service.Approve(r.Ctx, apptest.Caller, reqKey, false, "Policy", "not allowed", ""); err != nil {
		t.Fatal(err)
	}
	r.Drain()
	cr = r.Get(reqKey).(*api.CertificateRequest)
	if c := api.FindCondition(cr.Status.Conditions, "Ready"); c == nil || c.Reason != "Denied" || cr.Status.FailureTime == nil {
		t.Fatalf("denial not recorded on the request: %+v failureTime %v", cr.Status.Conditions, cr.Status.FailureTime)
	}
	c := r.Get(apptest.CertKey).(*api.Certificate)
	if c.Status.FailedIssuanceAttempts == nil || *c.Status.FailedIssuanceAttempts != 1 {
		t.Fatalf("failure not recorded on the certificate: %+v", c.Status)
	}
	oldUID := cr.UID

	r.Approver.Set(certificaterequests.Approved)
	r.Clock.Advance(time.Hour + time.Minute)
	if _, err := r.Kernel.Sweep(r.Ctx, 100); err != nil {
		t.Fatal(err)
	}
	r.Drain()
	c = r.Get(apptest.CertKey).(*api.Certificate)
	if !api.IsTrue(c.Status.Conditions, "Ready") || c.Status.Revision == nil || *c.Status.Revision != 1 {
		t.Fatalf("not issued after the backoff: %+v", c.Status)
	}
	if cr := r.Get(reqKey).(*api.CertificateRequest); cr.UID == oldUID || !cr.IsIssued() {
		t.Fatalf("the denied request was not replaced (uid %s, issued %v)", cr.UID, cr.IsIssued())
	}
}

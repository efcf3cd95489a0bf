package awse2e

import (
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
)

// Requests that wait for a CA issuer are signed as soon as the issuer
// becomes Ready, not at their next poll: the signer, which checks CA
// issuers (it alone may read the key pair), lists the waiting requests
// (the kind_ns Query iam.tf grants it for CertificateRequests only; the
// IAM guard of awstest refuses anything else) and wakes them on the worker
// queue. The clock stays before the requests' nextRunAt throughout.
func TestRequestsWaitingForACAIssuerAreWokenWhenItBecomesReady(t *testing.T) {
	d := deploy(t, nil)
	names := []string{"early-a", "early-b"}
	for _, n := range names {
		d.apply(leafYAML(n, "late-ca"))
	}
	d.run()
	for _, n := range names {
		c := d.cert("default", n)
		if api.IsTrue(c.Status.Conditions, "Ready") {
			t.Fatalf("%s Ready without an issuer", n)
		}
		cr := d.request("default", n+"-1")
		if cr.IsFinal() || !api.IsTrue(cr.Status.Conditions, api.CertificateRequestConditionApproved) {
			t.Fatalf("request %s-1: want approved and waiting, got %+v", n, cr.Status.Conditions)
		}
		rec, err := d.api.Store.Get(d.Ctx, api.Key{Kind: api.KindCertificateRequest, Namespace: "default", Name: n + "-1"})
		if err != nil {
			t.Fatal(err)
		}
		if rec.NextRunAt.IsZero() {
			t.Fatalf("waiting request %s-1 has no nextRunAt", n)
		}
		if d.Clock.Now().Add(5 * time.Minute).After(rec.NextRunAt) {
			t.Fatalf("request %s-1 polls at %s: the test needs it later than now+5m", n, rec.NextRunAt)
		}
	}

	// Five minutes later the CA key pair and the issuer are installed; no
	// sweep runs, so only the issuer's wake-up can reach the requests.
	d.Clock.Advance(5 * time.Minute)
	signedBefore := d.Metrics.Sum("certfn_requests_signed_total")
	d.installCA("late-ca")
	d.run()
	for _, n := range names {
		if c := d.requireReady("default", n); revision(c) != 1 {
			t.Errorf("%s revision %d, want 1", n, revision(c))
		}
	}
	if got := d.Metrics.Sum("certfn_requests_signed_total") - signedBefore; got != float64(len(names)) {
		t.Errorf("signed %v requests after the issuer became Ready, want %d", got, len(names))
	}
}

// request reads a CertificateRequest through the api function's engine.
func (d *deployment) request(ns, name string) *api.CertificateRequest {
	d.t.Helper()
	o, err := d.api.Repo.Get(d.Ctx, api.Key{Kind: api.KindCertificateRequest, Namespace: ns, Name: name})
	if err != nil {
		d.t.Fatalf("get request %s/%s: %v", ns, name, err)
	}
	return o.(*api.CertificateRequest)
}

package app_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/app/apptest"
	"github.com/certfn/certfn/core/certificaterequests"
	"github.com/certfn/certfn/core/certificatesigningrequests"
	"github.com/certfn/certfn/core/ports"
)

// The objects quota counts CertificateSigningRequests by requester: a
// requester at the limit cannot create another (ErrForbidden naming the
// requester and the quota, nothing applied), another requester can, and
// an update of a held CSR is not counted.
func TestCSRObjectsQuotaByRequester(t *testing.T) {
	r := apptest.NewRig(t, apptest.WithQuotas(app.Quotas{ObjectsPerNamespace: 2}))
	r.Approver.Set(certificaterequests.Unmatched)
	r.Apply(approverRBAC)
	bob := app.Caller{Username: "bob", Groups: []string{"system:authenticated"}}
	ann := app.Caller{Username: "ann", Groups: []string{"system:authenticated"}}
	var held []string
	for i := 0; i < 2; i++ {
		m := csrSpec{name: fmt.Sprintf("bob-%d", i), signer: "clusterissuers.cert-manager.io/ca"}.yaml(t)
		if _, err := applyAs(r, bob, m); err != nil {
			t.Fatalf("bob's CSR %d within the quota: %v", i, err)
		}
		held = append(held, m)
	}
	_, err := applyAs(r, bob, csrSpec{name: "bob-2", signer: "clusterissuers.cert-manager.io/ca"}.yaml(t)+"---\n"+
		csrSpec{name: "bob-3", signer: "clusterissuers.cert-manager.io/ca"}.yaml(t))
	if !errors.Is(err, app.ErrForbidden) || !strings.Contains(err.Error(), `requester "bob" holds 2 CertificateSigningRequests and this apply would create 2 more, over its quota of 2`) {
		t.Fatalf("bob over the quota: err = %v", err)
	}
	if _, err := r.Store.Get(r.Ctx, csrKey("bob-2")); !errors.Is(err, ports.ErrNotFound) {
		t.Fatalf("a refused apply stored bob-2: %v", err)
	}
	if _, err := applyAs(r, apptest.Caller, withLabel(t, held[0], "bob-0")); err != nil {
		t.Fatalf("an update at the quota: %v", err)
	}
	if _, err := applyAs(r, ann, csrSpec{name: "ann-0", signer: "clusterissuers.cert-manager.io/ca"}.yaml(t)); err != nil {
		t.Fatalf("another requester: %v", err)
	}
}

// withLabel is the CSR manifest m (metadata: {name: <name>}) with a label.
func withLabel(t *testing.T, m, name string) string {
	t.Helper()
	from := "metadata: {name: " + name + "}"
	if !strings.Contains(m, from) {
		t.Fatalf("manifest has no %q", from)
	}
	return strings.Replace(m, from, "metadata: {name: "+name+", labels: {a: b}}", 1)
}

// The issuance quota counts CertificateSigningRequests by requester: the
// third approved CSR of one requester within an hour waits
// (IssuanceQuotaReached) until the first issuance is an hour old, while
// another requester's is signed; then it is signed.
func TestCSRIssuanceQuotaByRequester(t *testing.T) {
	r := apptest.NewRig(t, apptest.WithQuotas(app.Quotas{IssuancesPerHourPerNamespace: 2}))
	readyCA(t, r, 0)
	first := r.Clock.Now()
	for i, at := range []time.Duration{0, 20 * time.Minute} {
		r.Clock.Set(first.Add(at))
		n := fmt.Sprintf("a-%d", i)
		r.Apply(csrSpec{name: n, signer: "issuers.cert-manager.io/default.ca"}.yaml(t))
		r.Drain()
		if !getCSR(r, n).IsIssued() {
			t.Fatalf("%s within the quota not issued: %+v", n, getCSR(r, n).Status.Conditions)
		}
	}
	r.Clock.Set(first.Add(30 * time.Minute))
	r.Apply(csrSpec{name: "a-2", signer: "issuers.cert-manager.io/default.ca"}.yaml(t))
	other := apptest.Caller
	other.Username = "carol"
	if _, err := applyAs(r, other, csrSpec{name: "c-0", signer: "issuers.cert-manager.io/default.ca"}.yaml(t)); err != nil {
		t.Fatal(err)
	}
	r.Drain()
	free := first.Add(time.Hour)
	if c := getCSR(r, "a-2"); c.IsIssued() || !c.Status.Has(api.CSRConditionApproved) {
		t.Fatalf("third CSR of alice within the hour: issued %v, %+v", c.IsIssued(), c.Status.Conditions)
	}
	if ev := latestEvent(t, r, csrKey("a-2")); ev.Reason != certificatesigningrequests.ReasonIssuanceQuota ||
		!strings.Contains(ev.Message, `Issuance quota of requester "alice" reached: 2 CertificateSigningRequests issued in the last hour, limit 2 per hour`) {
		t.Fatalf("Event of the held CSR: %s %q", ev.Reason, ev.Message)
	}
	if !getCSR(r, "c-0").IsIssued() {
		t.Fatalf("carol's CSR not issued: %+v", getCSR(r, "c-0").Status.Conditions)
	}
	r.Clock.Set(free.Add(-time.Second))
	if _, err := r.Kernel.Sweep(r.Ctx, 100); err != nil {
		t.Fatal(err)
	}
	r.Drain()
	if getCSR(r, "a-2").IsIssued() {
		t.Fatal("signed before the quota freed up")
	}
	r.Clock.Set(free)
	if _, err := r.Kernel.Sweep(r.Ctx, 100); err != nil {
		t.Fatal(err)
	}
	r.Drain()
	if !getCSR(r, "a-2").IsIssued() {
		t.Fatalf("not issued once the quota freed up: %+v", getCSR(r, "a-2").Status.Conditions)
	}
}

// A pending CSR (nobody approved or denied it) is deleted a day after its
// creation, with its Event, in every deployment; the store's TTL says the
// same.
func TestPendingCSRCleanedAfterADay(t *testing.T) {
	r := apptest.NewRig(t)
	r.Approver.Set(certificaterequests.Unmatched)
	r.Apply(csrSpec{name: "pending", signer: "clusterissuers.cert-manager.io/ca"}.yaml(t))
	r.Apply(csrSpec{name: "foreign", signer: "example.com/not-certfns"}.yaml(t))
	r.Drain()
	day := r.Clock.Now().Add(certificatesigningrequests.PendingRetain)
	if at := app.ExpiresAt(r.Rec(csrKey("pending")), r.Clock.Now()); !at.Equal(day) {
		t.Fatalf("TTL of a pending CSR %v, want %v", at, day)
	}
	r.Clock.Set(day.Add(-time.Second))
	if _, err := r.Kernel.Sweep(r.Ctx, 100); err != nil {
		t.Fatal(err)
	}
	r.Drain()
	getCSR(r, "pending")
	r.Clock.Set(day.Add(time.Minute))
	if _, err := r.Kernel.Sweep(r.Ctx, 100); err != nil {
		t.Fatal(err)
	}
	r.Drain()
	for _, n := range []string{"pending", "foreign"} {
		if _, err := r.Store.Get(r.Ctx, csrKey(n)); !errors.Is(err, ports.ErrNotFound) {
			t.Fatalf("%s CSR a day later: %v, want deleted", n, err)
		}
		if evs, err := r.Repo.EventsOf(r.Ctx, csrKey(n)); err != nil || len(evs) != 0 {
			t.Fatalf("the Events of %s: %+v %v, want deleted", n, evs, err)
		}
	}
}

// A decision through the API applies only to the version it names
// (Kubernetes' resourceVersion precondition): a CSR or CertificateRequest
// changed since the approver read it is refused (ErrConflict naming
// metadata.resourceVersion) and stays undecided; at its current version
// it is decided. The approval of a CSR records what it approved.
func TestApprovalResourceVersionPrecondition(t *testing.T) {
	r := apptest.NewRig(t)
	r.Approver.Set(certificaterequests.Unmatched)
	m := csrSpec{name: "web", signer: "clusterissuers.cert-manager.io/ca"}.yaml(t)
	r.Apply(m)
	r.Drain()
	seen := getCSR(r, "web").ResourceVersion
	r.Apply(withLabel(t, m, "web")) // changed after the approver read it
	_, err := r.Service.ApproveCSR(r.Ctx, apptest.Caller, "web", true, "", "", seen)
	if !errors.Is(err, app.ErrConflict) || !strings.Contains(err.Error(), "metadata.resourceVersion") {
		t.Fatalf("approve at a stale version: err = %v; want ErrConflict naming metadata.resourceVersion", err)
	}
	if c := getCSR(r, "web"); len(c.Status.Conditions) != 0 {
		t.Fatalf("decided at a stale version: %+v", c.Status.Conditions)
	}
	now := getCSR(r, "web").ResourceVersion
	c, err := r.Service.ApproveCSR(r.Ctx, apptest.Caller, "web", true, "", "", now)
	if err != nil || !c.Status.Has(api.CSRConditionApproved) || c.Status.Approved == nil || c.Status.Approved.ResourceVersion != now {
		t.Fatalf("approve at the current version: %v, %+v", err, c)
	}

	cr := apptest.MustDecode(t, apptest.CSRRequestYAML(t, "24h")).(*api.CertificateRequest)
	r.Apply(apptest.CSRRequestYAML(t, "24h"))
	r.Drain()
	key := api.KeyOf(cr)
	_, err = r.Service.Approve(r.Ctx, apptest.Caller, key, false, "", "", "1")
	if !errors.Is(err, app.ErrConflict) || !strings.Contains(err.Error(), "metadata.resourceVersion") {
		t.Fatalf("deny a CertificateRequest at a stale version: err = %v", err)
	}
	v := r.Get(key).GetObjectMeta().ResourceVersion
	if _, err := r.Service.Approve(r.Ctx, apptest.Caller, key, false, "", "", v); err != nil {
		t.Fatalf("deny at the current version %s: %v", v, err)
	}
}

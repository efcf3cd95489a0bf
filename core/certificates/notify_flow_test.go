package certificates_test

import (
	"slices"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app/apptest"
	"github.com/certfn/certfn/core/certificaterequests"
	"github.com/certfn/certfn/core/memory"
	"github.com/certfn/certfn/core/ports"
)

const certWrites = "certfn_state_writes_total{kind=Certificate}"

// issueAndRenew issues apptest.CertYAML, then renews it (the clock past
// its renewal time), and returns the Certificate writes of each phase.
func issueAndRenew(t *testing.T, r *apptest.Rig) (issued, renewed float64) {
	t.Helper()
	r.Apply(apptest.SelfSignedYAML)
	r.Apply(apptest.CertYAML)
	r.Drain()
	c := r.Get(apptest.CertKey).(*api.Certificate)
	if c.Status.Revision == nil || *c.Status.Revision != 1 || c.Status.RenewalTime == nil {
		t.Fatalf("not issued: %+v", c.Status)
	}
	issued = r.Metrics.Get(certWrites)
	r.Clock.Set(c.Status.RenewalTime.Add(time.Minute))
	if _, err := r.Kernel.Sweep(r.Ctx, 100); err != nil {
		t.Fatal(err)
	}
	r.Drain()
	if c := r.Get(apptest.CertKey).(*api.Certificate); c.Status.Revision == nil || *c.Status.Revision != 2 {
		t.Fatalf("not renewed: %+v", c.Status)
	}
	return issued, r.Metrics.Get(certWrites) - issued
}

// Notifications through the kernel: "issued" after the first issuance,
// "renewed" after the renewal, at the price of one Certificate write each
// (none without a notifier).
func TestNotificationsThroughTheKernel(t *testing.T) {
	off := apptest.NewRig(t)
	offIssued, offRenewed := issueAndRenew(t, off)

	n := memory.NewNotifier()
	on := apptest.NewNotifyingRig(t, n)
	onIssued, onRenewed := issueAndRenew(t, on)

	var types []ports.NotificationType
	for _, x := range n.Delivered() {
		types = append(types, x.Type)
	}
	if want := []ports.NotificationType{ports.NotificationIssued, ports.NotificationRenewed}; !slices.Equal(types, want) {
		t.Fatalf("published %v, want %v", types, want)
	}
	if onIssued != offIssued+1 || onRenewed != offRenewed+1 {
		t.Errorf("Certificate writes: issuance %v with notifications, %v without; renewal %v and %v: want exactly one more each",
			onIssued, offIssued, onRenewed, offRenewed)
	}
	c := on.Get(apptest.CertKey).(*api.Certificate)
	if c.Status.NotifiedRevision == nil || *c.Status.NotifiedRevision != 2 {
		t.Errorf("notifiedRevision = %v, want 2", c.Status.NotifiedRevision)
	}
	if c := off.Get(apptest.CertKey).(*api.Certificate); c.Status.NotifiedRevision != nil {
		t.Errorf("without a notifier, notifiedRevision = %v", *c.Status.NotifiedRevision)
	}
}

// A denied request is announced once as a failed issuance; the retry
// after the backoff, once issued, as the first issuance.
func TestNotificationOfADenial(t *testing.T) {
	n := memory.NewNotifier()
	r := apptest.NewNotifyingRig(t, n)
	r.Approver.Set(certificaterequests.Denied)
	r.Apply(apptest.SelfSignedYAML)
	r.Apply(apptest.CertYAML)
	r.Drain()
	r.Drain()
	got := n.Delivered()
	if len(got) != 1 || got[0].Type != ports.NotificationFailed || got[0].Reason != api.CertificateRequestConditionDenied || got[0].Request != "web-1" {
		t.Fatalf("published %v, want one Failed (Denied, web-1)", got)
	}
	r.Approver.Set(certificaterequests.Approved)
	r.Clock.Advance(time.Hour + time.Minute)
	if _, err := r.Kernel.Sweep(r.Ctx, 100); err != nil {
		t.Fatal(err)
	}
	r.Drain()
	got = n.Delivered()
	if len(got) != 2 || got[1].Type != ports.NotificationIssued || got[1].Revision != 1 || !got[1].Time.Equal(r.Clock.Now().Truncate(time.Second)) {
		t.Fatalf("published %v, want Failed then Issued", got)
	}
}

package gcpe2e

import (
	"bytes"
	"crypto/x509"
	"fmt"
	"testing"
	"time"

	"github.com/certfn/certfn/adapters/gcp/secretmanager"
)

// requirePrevious fails unless Secret Manager's "previous" alias of ns/name
// (secretmanager.Store.Previous) holds want, and the newest version holds now.
func (d *deployment) requirePrevious(ns, name string, want, now *x509.Certificate) {
	d.t.Helper()
	prev, err := d.secrets.Previous(d.ctx, ns, name)
	if err != nil {
		d.t.Fatalf("previous version of %s/%s: %v", ns, name, err)
	}
	if !bytes.Equal(leaf(d.t, prev.Data["tls.crt"]).Raw, want.Raw) {
		d.t.Errorf("the %q alias of %s/%s does not hold the first certificate", secretmanager.AliasPrevious, ns, name)
	}
	if !bytes.Equal(leaf(d.t, d.secret(ns, name).Data["tls.crt"]).Raw, now.Raw) {
		d.t.Errorf("the newest version of %s/%s does not hold the renewed certificate", ns, name)
	}
}

// renewAt moves the clock to a minute before the certificate's renewal
// time, delivers what is due then (the daily resyncs since issuance),
// sweeps and checks that nothing renewed; then it moves the clock a minute
// past it and sweeps. The renewal itself is the caller's to deliver: the
// resync a minute before leaves a Cloud Tasks task for the renewal time
// (Cloud Tasks holds 30 days), and the sweep finds the due index.
func (d *deployment) renewAt(ns, name string) time.Time {
	d.t.Helper()
	at := d.cert(ns, name).Status.RenewalTime.Time
	d.clk.AdvanceTo(at.Add(-time.Minute))
	d.drain()
	d.sweep()
	d.drain()
	if c := d.cert(ns, name); revision(c) != 1 || !ready(c) {
		d.t.Fatalf("%s/%s renewed before its renewal time: revision %d, %+v", ns, name, revision(c), c.Status.Conditions)
	}
	d.clk.AdvanceTo(at.Add(time.Minute))
	d.sweep()
	return at
}

// A CA-signed certificate renewed once the services' clock passes
// status.renewalTime (2/3 of its 90 days), every message delivered twice
// and reordered: revision 2, a new key (rotationPolicy Always), one
// request per revision, and Secret Manager's "previous" alias holding
// revision 1.
func TestRenewal(t *testing.T) {
	d := deploy(t, nil)
	d.apply(caIssuers + "---\n" + leafYAML("web", "ca"))
	d.settle()
	first := leaf(t, d.secret("default", "web-tls").Data["tls.crt"])
	c := d.requireReady("default", "web", 1)
	if want := first.NotBefore.Add(60 * 24 * time.Hour); c.Status.RenewalTime.Sub(want).Abs() > time.Minute {
		t.Fatalf("renewalTime %s, want 2/3 of 90 days = %s", c.Status.RenewalTime, want)
	}

	renewAt := d.renewAt("default", "web")
	d.settle()
	c = d.requireReady("default", "web", 2)
	second := leaf(t, d.secret("default", "web-tls").Data["tls.crt"])
	if second.NotBefore.Before(renewAt) || bytes.Equal(second.Raw, first.Raw) {
		t.Fatalf("the secret holds the first certificate (notBefore %s)", second.NotBefore)
	}
	if bytes.Equal(second.RawSubjectPublicKeyInfo, first.RawSubjectPublicKeyInfo) {
		t.Error("the key was not rotated (rotationPolicy: Always)")
	}
	if !c.Status.RenewalTime.After(d.clk.Now()) {
		t.Fatalf("renewed certificate's renewalTime %s is not ahead of the clock %s", c.Status.RenewalTime, d.clk.Now())
	}
	d.requirePrevious("default", "web-tls", first, second)
	d.requireOnePerRevision("default", "web")
	d.requireClean()
}

// An ACME certificate (Pebble, HTTP-01) renewed by the sweep once the
// services' clock passes its renewal time (the earlier of 2/3 of its
// lifetime and the ARI window's selected time, once the Order's renewal
// information is copied), every message delivered twice and reordered.
// Pebble signs in real time while the clock jumps ahead: the issuer sets
// enableDurationFeature so that the Order asks for notAfter = now +
// spec.duration by the services' clock (as tests/awse2e does).
func TestACMERenewal(t *testing.T) {
	h01Port := freePort(t)
	h01Addr := fmt.Sprintf("127.0.0.1:%d", h01Port)
	peb := startPebble(t, h01Port)
	d, acmeReqs := acmeDeployment(t, peb, h01Addr, nil, "")
	d.apply(peb.issuerYAML("pebble", "    enableDurationFeature: true\n", "    - http01: {ingress: {}}\n"))
	d.apply(acmeCertYAML("renew", "pebble", "renew.example.com"))
	d.waitReady("default", "renew", 1)
	d.settle()
	first := peb.verify(t, d.secret("default", "renew-tls").Data["tls.crt"], "renew.example.com")
	if ri := d.cert("default", "renew").Status.RenewalInfo; ri == nil || ri.SelectedTime == nil {
		t.Fatalf("the Order's renewal information was not copied to the Certificate: %+v", ri)
	}
	before := acmeReqs.Count()

	renewAt := d.renewAt("default", "renew")
	if renewAt.Before(first.NotBefore.Add(50*24*time.Hour)) || renewAt.After(first.NotAfter) {
		t.Fatalf("renewalTime %s: not within the certificate's last third (%s..%s)", renewAt, first.NotBefore, first.NotAfter)
	}
	c := d.waitReady("default", "renew", 2)
	d.settle()
	second := peb.verify(t, d.secret("default", "renew-tls").Data["tls.crt"], "renew.example.com")
	if second.SerialNumber.Cmp(first.SerialNumber) == 0 {
		t.Fatal("the secret still holds the first certificate")
	}
	if rt := c.Status.RenewalTime; rt == nil || !rt.After(d.clk.Now()) {
		t.Fatalf("renewed certificate's renewalTime %v is not after the clock %s", rt, d.clk.Now())
	}
	d.requirePrevious("default", "renew-tls", first, second)
	d.requireOnePerRevision("default", "renew")
	if n := finalizes(acmeReqs); n != 2 {
		t.Errorf("%d Orders finalized at Pebble, want 2 (one per revision)", n)
	}
	d.requireClean()
	t.Logf("ACME renewal (every message twice): %d ACME requests", acmeReqs.Count()-before)
}

package gcpe2e

import (
	"fmt"
	"testing"
	"time"

	smpb "cloud.google.com/go/secretmanager/apiv1/secretmanagerpb"

	"github.com/certfn/certfn/adapters/gcp/secretmanager"
)

// The requests each piece of work costs on Google Cloud, counted through
// the Cloud Run handlers (each message delivered once, as Pub/Sub
// normally does): an issuance from a CA issuer and from ACME (Pebble,
// HTTP-01; the account registered beforehand), a renewal, a daily resync
// of a Ready certificate and an idle scheduler run; and what 1,000
// issuances and 1,000 certificates kept for a month cost at the list
// prices of usage_test.go (pricesAsOf). Run:
//
//	go test ./tests/gcpe2e -run TestFigures -v
//
// Targets (as on AWS, for an ACME issuance; a CA issuance must
// stay well within them): ≤ 15 Cloud Run requests of the worker, signer,
// api and http01, ≤ 40 Firestore document writes.
func TestFigures(t *testing.T) {
	const n = 5
	d := deploy(t, nil)
	d.twice = false
	d.apply(caIssuers + "---\n" + leafYAML("warm-up", "ca"))
	d.settle()
	d.requireReady("default", "warm-up", 1)

	// Issuance: one certificate at a time, api call to Ready.
	before := d.usage()
	names := []string{"warm-up"}
	for i := range n {
		name := fmt.Sprintf("app-%d", i)
		names = append(names, name)
		d.apply(leafYAML(name, "ca"))
		d.settle()
		d.requireReady("default", name, 1)
	}
	issueU := d.usage().sub(before)
	issue := perUnit(issueU, n)
	t.Logf("issuance (CA), per certificate: %s\n    detail for %d: %s", issue, n, issueU)
	checkTargets(t, "CA issuance", issue)

	// Renewal: every certificate is due at its renewal time; one sweep.
	// The daily resyncs since issuance are delivered first.
	renewAt := d.cert("default", "app-0").Status.RenewalTime.Time
	d.clk.AdvanceTo(renewAt.Add(-time.Hour))
	d.drain()
	d.sweep()
	d.drain()
	d.clk.AdvanceTo(renewAt.Add(time.Minute))
	before = d.usage()
	d.drain()
	d.sweep()
	d.settle()
	renewU := d.usage().sub(before)
	for _, name := range names {
		d.requireReady("default", name, 2)
	}
	renew := perUnit(renewU, len(names))
	t.Logf("renewal (CA), per certificate: %s\n    detail for %d: %s", renew, len(names), renewU)

	// Resync: a Ready certificate is looked at again every day (its
	// Cloud Tasks task; the sweep finds what a lost task left). The first
	// day after the renewal is passed, the second one counted.
	d.clk.Advance(24*time.Hour + time.Minute)
	d.drain()
	d.sweep()
	d.drain()
	d.clk.Advance(24 * time.Hour)
	before = d.usage()
	d.drain()
	d.sweep()
	d.drain()
	resyncU := d.usage().sub(before)
	certs := len(names) + 1 // and the root CA's
	resync := perUnit(resyncU, certs)
	t.Logf("daily resync, per certificate: %s\n    detail for %d: %s", resync, certs, resyncU)
	if resyncU.requests["worker"] < certs {
		t.Errorf("the daily resync pushed %d messages to the worker for %d certificates", resyncU.requests["worker"], certs)
	}
	for _, name := range names {
		d.requireReady("default", name, 2)
	}

	// An idle scheduler run (every minute, whatever the number of certificates).
	d.clk.Advance(time.Minute)
	d.drain()
	before = d.usage()
	if res := d.sweep(); res.Due != 0 {
		t.Fatalf("idle sweep found %d due", res.Due)
	}
	idle := perUnit(d.usage().sub(before), 1)
	t.Logf("idle scheduler run: %s", idle)

	// Secret Manager versions billed per certificate: the current one and
	// the "previous" alias (KeepVersions 2); older ones destroyed.
	versions := 0
	for _, name := range names {
		id, err := d.secrets.SecretID(secretmanager.ClassTLS, "default", name+"-tls")
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range d.sm.Versions(id) {
			if v.State != smpb.SecretVersion_DESTROYED {
				versions++
			}
		}
	}
	perCertVersions := float64(versions) / float64(len(names))

	// ACME (HTTP-01, Pebble), one certificate at a time.
	acme := acmeFigures(t)

	perMonthRenewals := 30.0 / 60 // 90-day certificates renewed at 2/3 of their life
	perCertMonth := perCertVersions*smPerVersionMonth + 30*resync.cost() + perMonthRenewals*renew.cost()
	fixedMonth := 30*24*60*idle.cost() + schedulerPerJobMonth
	t.Log(pricesLine())
	t.Logf("cost per 1,000 issuances: CA $%.4f, ACME HTTP-01 $%.4f", 1000*issue.cost(), 1000*acme.cost())
	t.Logf("cost per 1,000 certificates kept for a month: $%.2f (Secret Manager: %.1f active versions per certificate, $%.2f; daily resyncs $%.4f; renewals $%.4f) + the scheduler's fixed $%.2f per deployment and month (a sweep a minute: $%.4f; the Cloud Scheduler job $%.2f)",
		1000*perCertMonth, perCertVersions, 1000*perCertVersions*smPerVersionMonth, 1000*30*resync.cost(), 1000*perMonthRenewals*renew.cost(),
		fixedMonth, 30*24*60*idle.cost(), schedulerPerJobMonth)
	d.requireClean()
}

// acmeFigures counts ACME issuances (HTTP-01 on Pebble, account
// registered by a first certificate) and returns them per certificate.
func acmeFigures(t *testing.T) figures {
	t.Helper()
	const n = 3
	h01Port := freePort(t)
	h01Addr := fmt.Sprintf("127.0.0.1:%d", h01Port)
	peb := startPebble(t, h01Port)
	d, _ := acmeDeployment(t, peb, h01Addr, nil, "")
	d.twice = false
	d.apply(peb.issuerYAML("pebble", "", "    - http01: {ingress: {}}\n"))
	d.apply(acmeCertYAML("first", "pebble", "first.example.com"))
	d.waitReady("default", "first", 1)
	d.settle()
	before := d.usage()
	for i := range n {
		name := fmt.Sprintf("site-%d", i)
		d.apply(acmeCertYAML(name, "pebble", name+".example.com"))
		d.waitReady("default", name, 1)
		d.settle()
		peb.verify(t, d.secret("default", name+"-tls").Data["tls.crt"], name+".example.com")
	}
	u := d.usage().sub(before)
	f := perUnit(u, n)
	t.Logf("issuance (ACME HTTP-01, Pebble), per certificate: %s\n    detail for %d: %s", f, n, u)
	checkTargets(t, "ACME issuance", f)
	if u.requests["signer"] != 0 {
		t.Errorf("the signer was pushed %d messages for ACME requests", u.requests["signer"])
	}
	d.requireClean()
	return f
}

// checkTargets fails f above targets.
func checkTargets(t *testing.T, what string, f figures) {
	t.Helper()
	if r := f.totalRequests() - f.requests["scheduler"]; r > 15 || f.fsWrites > 40 {
		t.Errorf("per %s: %.1f Cloud Run requests (target ≤ 15), %.1f Firestore writes (target ≤ 40)", what, r, f.fsWrites)
	}
}

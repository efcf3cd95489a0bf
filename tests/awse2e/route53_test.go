package awse2e

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	acmeadapter "github.com/certfn/certfn/adapters/acme"
	"github.com/certfn/certfn/adapters/dns/route53/route53test"
	"github.com/certfn/certfn/core/acme/dns01"
	"github.com/certfn/certfn/internal/awsmode"
	"github.com/certfn/certfn/internal/awsmode/awstest"
)

// DNS-01 through the route53 provider on AWS: ACME ClusterIssuers with a
// dns01.route53 solver — one naming hostedZoneID, one finding the zone by
// the longest suffix of the record's name — issue wildcard certificates
// from Pebble with the worker solving the challenges. Route 53 is the
// HAND-WRITTEN TEST DOUBLE of adapters/dns/route53/route53test (no Route 53
// emulator exists), reached as deployed: the worker's own route53 client,
// from the default configuration chain with AWS_ENDPOINT_URL_ROUTE_53, and
// CERTFN_ROUTE53_ZONE_IDS naming the one zone it may change. The double
// stands in for Route 53's name servers by copying every TXT set it
// writes or deletes to Pebble's challtestsrv, and reports each change
// PENDING once, then INSYNC. The worker's propagation check finds the zone
// through a delegation double and asks challtestsrv.
//
// Asserted: Ready, the wildcard SAN, a chain to Pebble's root; changes
// only in the allowed zone (the longer-suffix zone it may not change is
// skipped), the presented change read PENDING before INSYNC; no TXT
// record left behind in the double or challtestsrv; per-issuance counts
// within issue 5's targets (≤ 15 invocations, ≤ 40 DynamoDB writes).
func TestACMEDNS01Route53OnAWS(t *testing.T) {
	peb := startPebble(t, freePort(t)) // no HTTP-01 here
	r53 := route53test.New(t)
	r53.SyncAfter = 1
	r53.OnTXT = func(u route53test.TXTUpdate) {
		peb.dns.DeleteDNSTXTRecord(u.Name)
		for _, v := range u.Texts {
			peb.dns.AddDNSTXTRecord(u.Name, v)
		}
	}
	zoneID := r53.AddZone("example.com", false)
	// A public zone named by a longer suffix of the discovery case's names
	// that the deployment may not change: discovery must skip it.
	otherID := r53.AddZone("disc.example.com", false)
	nsAddr, nsQueries := startDelegationDNS(t, "example.com")

	e := awstest.New(t)
	e.EngineClock = &awstest.WallClock{}
	e.UseRoute53(r53.URL, zoneID)
	acmeReqs := &acmeadapter.CountingTransport{}
	d := &deployment{Env: e, t: t, api: e.Runtime(awsmode.RoleAPI), signer: e.Runtime(awsmode.RoleSigner), sched: e.Runtime(awsmode.RoleScheduler),
		worker: e.Runtime(awsmode.RoleWorker, func(o *awsmode.Options) {
			o.ACME.DNS01Resolver = dns01.Resolver{Nameservers: []string{nsAddr}, AuthoritativePort: peb.dnsPort, Timeout: time.Second}
			o.ACME.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { acmeReqs.Next = rt; return acmeReqs }
		})}
	if got := d.worker.Settings.Route53ZoneIDs; !slices.Equal(got, []string{zoneID}) {
		t.Fatalf("worker's Route53ZoneIDs = %q, want [%s]", got, zoneID)
	}
	d.apply(pebbleIssuerYAML("r53-zone", peb, "", fmt.Sprintf("    - dns01:\n        route53: {region: us-east-1, hostedZoneID: %s}\n", zoneID)))
	d.apply(pebbleIssuerYAML("r53-find", peb, "", "    - dns01:\n        route53: {region: us-east-1}\n"))

	certYAML := func(name, issuer string, dnsNames ...string) string {
		return fmt.Sprintf(`apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: %s, namespace: default}
spec:
  secretName: %[1]s-tls
  dnsNames: [%s]
  privateKey: {algorithm: ECDSA, size: 256}
  issuerRef: {name: %s, kind: ClusterIssuer}
`, name, strings.Join(dnsNames, ", "), issuer)
	}
	quote := func(names ...string) []string {
		var out []string
		for _, n := range names {
			out = append(out, `"`+n+`"`)
		}
		return out
	}
	// issue applies a Certificate for dnsNames (the first a wildcard),
	// waits until it is Ready and every TXT record is gone, and checks the
	// secret.
	issue := func(name, issuer string, dnsNames ...string) {
		t.Helper()
		d.apply(certYAML(name, issuer, quote(dnsNames...)...))
		d.waitReady("default", name, 120*time.Second)
		d.deliverUntil("the TXT records of "+name+" removed", 60*time.Second, func() bool { return len(txtLeft(r53, peb, dnsNames)) == 0 })
		sec := d.secret("default", name+"-tls", "")
		l := verifyPebble(t, peb, sec.Data["tls.crt"], "host"+strings.TrimPrefix(dnsNames[0], "*"))
		for _, n := range dnsNames {
			if !slices.Contains(l.DNSNames, n) {
				t.Fatalf("%s: SANs %q lack %s", name, l.DNSNames, n)
			}
		}
	}

	// hostedZoneID given. A first certificate registers the account.
	issue("hz-warm", "r53-zone", "*.warm.example.com")
	const n = 2
	d.ResetUsage()
	acmeBefore, r53Before := acmeReqs.Count(), len(r53.Calls())
	for i := range n {
		issue(fmt.Sprintf("hz-%d", i), "r53-zone", fmt.Sprintf("*.hz-%d.example.com", i))
	}
	u := d.Usage()
	r53Calls := map[string]int{}
	for _, c := range r53.Calls()[r53Before:] {
		r53Calls[c.Op]++
	}
	issuance := perUnit(u, n /* api calls */, n)
	t.Logf("issuance (ACME DNS-01 over Route53, Pebble), per certificate: %s; %.1f ACME requests; Route53 calls %v for %d\n    detail for %d: %s",
		issuance, float64(acmeReqs.Count()-acmeBefore)/n, r53Calls, n, n, u)
	if issuance.invocations > 15 || issuance.dynamoWrites > 40 {
		t.Errorf("per ACME DNS-01 issuance: %.1f invocations (target ≤ 15), %.1f DynamoDB writes (target ≤ 40)", issuance.invocations, issuance.dynamoWrites)
	}
	if u.Invocations[awsmode.RoleSigner] != 0 {
		t.Errorf("the signer was invoked %d times for ACME requests", u.Invocations[awsmode.RoleSigner])
	}
	if r53Calls["ListHostedZonesByName"] != 0 {
		t.Errorf("zones were listed although hostedZoneID is given: %v", r53Calls)
	}

	// No hostedZoneID: the zone is found by the longest allowed suffix. The
	// wildcard and the apex share one TXT name (two values at once).
	listed := r53.Count("ListHostedZonesByName")
	issue("find", "r53-find", "*.find.disc.example.com", "find.disc.example.com")
	if r53.Count("ListHostedZonesByName") == listed {
		t.Error("the discovery issuer did not list hosted zones")
	}

	// Every change was in the allowed zone; each name was written and
	// deleted; the presented changes were read PENDING, then INSYNC.
	changes := r53.Changes()
	byName := map[string][]string{}
	for _, c := range changes {
		if c.ZoneID != zoneID {
			t.Errorf("change %s %s %s in zone %s; only %s is allowed (other zone %s)", c.ID, c.Action, c.Name, c.ZoneID, zoneID, otherID)
		}
		if c.Type != "TXT" || !strings.HasPrefix(c.Name, "_acme-challenge.") {
			t.Errorf("change %s of %s %s: not a challenge record", c.ID, c.Type, c.Name)
		}
		byName[c.Name] = append(byName[c.Name], c.Action)
	}
	for _, name := range []string{"warm", "hz-0", "hz-1", "find.disc"} {
		acts := byName["_acme-challenge."+name+".example.com."]
		if len(acts) < 2 || acts[0] != "UPSERT" || acts[len(acts)-1] != "DELETE" {
			t.Errorf("changes of _acme-challenge.%s.example.com.: %q, want UPSERT first and DELETE last", name, acts)
		}
	}
	answers := r53.StatusAnswers()
	checked := 0
	for _, c := range changes {
		a := answers[c.ID]
		if c.Action != "UPSERT" || len(a) == 0 {
			continue
		}
		checked++
		if a[0] != "PENDING" || a[len(a)-1] != "INSYNC" {
			t.Errorf("GetChange answers for %s: %q, want PENDING first and INSYNC last", c.ID, a)
		}
	}
	if checked < 4 {
		t.Errorf("only %d presented changes were checked with GetChange, want at least 4 (one per certificate)", checked)
	}
	for _, id := range r53.ZoneIDs() {
		for _, s := range r53.RecordSets(id) {
			if s.Type == "TXT" {
				t.Errorf("TXT %s left in zone %s: %q", s.Name, id, s.Values)
			}
		}
	}
	// The worker's propagation check looked the zone's name servers up
	// through the delegation (NS; its SOA lookups may be answered from
	// certmagic's process-wide cache), then asked challtestsrv.
	if q := nsQueries(); q["NS"] == 0 {
		t.Errorf("the delegation DNS saw %v: the propagation check did not look the zone's servers up", q)
	}
	if n := d.VisibleMessages(d.WorkerDLQURL) + d.VisibleMessages(d.SignerDLQURL); n != 0 {
		t.Errorf("%d messages in the dead-letter queues", n)
	}
	d.scanForKeys()
}

// txtLeft lists the challenge TXT records of dnsNames still held by the
// Route53 double or served by challtestsrv.
func txtLeft(r53 *route53test.Double, peb *pebbleServer, dnsNames []string) []string {
	var left []string
	for _, n := range dnsNames {
		rec := dns01.RecordName(strings.TrimPrefix(n, "*."))
		if v := peb.dns.GetDNSTXTRecords(rec); len(v) > 0 {
			left = append(left, fmt.Sprintf("challtestsrv %s %q", rec, v))
		}
		for _, id := range r53.ZoneIDs() {
			for _, s := range r53.RecordSets(id) {
				if s.Type == "TXT" && s.Name == rec {
					left = append(left, fmt.Sprintf("route53 %s %s %q", id, rec, s.Values))
				}
			}
		}
	}
	return left
}

package awse2e

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	r53api "github.com/aws/aws-sdk-go-v2/service/route53"
	r53types "github.com/aws/aws-sdk-go-v2/service/route53/types"

	acmeadapter "github.com/certfn/certfn/adapters/acme"
	"github.com/certfn/certfn/adapters/aws/awscfg"
	"github.com/certfn/certfn/adapters/dns/route53/route53test"
	"github.com/certfn/certfn/core/acme/dns01"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/internal/awsmode"
	"github.com/certfn/certfn/internal/awsmode/awstest"
	"github.com/certfn/certfn/tests/emulators"
)

// route53Service is the AWS_ENDPOINT_URL_ suffix of Route 53.
const route53Service = emulators.Service("ROUTE_53")

// DNS-01 through the route53 provider on AWS: ACME ClusterIssuers with a
// dns01.route53 solver — one naming hostedZoneID, one finding the zone by
// the longest suffix of the record's name — issue wildcard certificates
// from Pebble with the worker solving the challenges. Route 53 is the
// HAND-WRITTEN TEST DOUBLE of adapters/dns/route53/route53test, or the
// endpoint AWS_ENDPOINT_URL[_ROUTE_53] names (LocalStack, moto), reached as
// deployed: the worker's own route53 client,
// from the default configuration chain with AWS_ENDPOINT_URL_ROUTE_53, and
// CERTFN_ROUTE53_ZONE_IDS naming the one zone it may change. The double
// stands in for Route 53's name servers by copying every TXT set it
// writes or deletes to Pebble's challtestsrv, and reports each change
// PENDING once, then INSYNC; on an endpoint, a poller copies the zones'
// TXT sets to challtestsrv instead, and the assertions on the double's
// call log, changes and GetChange answers are not made. The worker's
// propagation check finds the zone through a delegation double and asks
// challtestsrv.
//
// Asserted: Ready, the wildcard SAN, a chain to Pebble's root; changes
// only in the allowed zone (the longer-suffix zone it may not change is
// skipped), the presented change read PENDING before INSYNC; no TXT
// record left behind in the double or challtestsrv; per-issuance counts
// within targets (≤ 15 invocations, ≤ 40 DynamoDB writes).
func TestACMEDNS01Route53OnAWS(t *testing.T) {
	peb := startPebble(t, freePort(t)) // no HTTP-01 here
	// zones: example.com, and a public zone named by a longer suffix of the
	// discovery case's names that the deployment may not change (discovery
	// must skip it).
	var (
		r53             *route53test.Double // nil on an endpoint
		r53URL          string
		zoneID, otherID string
		txtSets         func() map[string][]string // zone:name -> values
	)
	if ep, ok := emulators.External(route53Service); ok {
		r53URL = ep
		ext := newExternalRoute53(t, ep)
		zoneID, otherID = ext.zone(t, "example.com"), ext.zone(t, "disc.example.com")
		txtSets = func() map[string][]string { return ext.txtSets(t, zoneID, otherID) }
		ext.mirror(t, peb, txtSets)
	} else {
		r53 = route53test.New(t)
		r53.SyncAfter = 1
		r53.OnTXT = func(u route53test.TXTUpdate) {
			peb.dns.DeleteDNSTXTRecord(u.Name)
			for _, v := range u.Texts {
				peb.dns.AddDNSTXTRecord(u.Name, v)
			}
		}
		r53URL = r53.URL
		zoneID, otherID = r53.AddZone("example.com", false), r53.AddZone("disc.example.com", false)
		txtSets = func() map[string][]string {
			out := map[string][]string{}
			for _, id := range r53.ZoneIDs() {
				for _, s := range r53.RecordSets(id) {
					if s.Type == "TXT" {
						out[id+":"+s.Name] = s.Values
					}
				}
			}
			return out
		}
	}
	nsAddr, nsQueries := startDelegationDNS(t, "example.com")

	e := awstest.New(t)
	e.EngineClock = &awstest.WallClock{}
	e.UseRoute53(r53URL, zoneID)
	acmeReqs := &acmeadapter.CountingTransport{}
	d := &deployment{Env: e, t: t, api: e.Runtime(app.API.Name), signer: e.Runtime(app.Signer.Name), sched: e.Runtime(app.Scheduler.Name),
		worker: e.Runtime(app.Worker.Name, func(o *awsmode.Options) {
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
		d.deliverUntil("the TXT records of "+name+" removed", 60*time.Second, func() bool { return len(txtLeft(txtSets(), peb, dnsNames)) == 0 })
		sec := d.secret("default", name+"-tls")
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
	acmeBefore, r53Before := acmeReqs.Count(), 0
	if r53 != nil {
		r53Before = len(r53.Calls())
	}
	for i := range n {
		issue(fmt.Sprintf("hz-%d", i), "r53-zone", fmt.Sprintf("*.hz-%d.example.com", i))
	}
	u := d.Usage()
	r53Calls := map[string]int{} // on the double
	if r53 != nil {
		for _, c := range r53.Calls()[r53Before:] {
			r53Calls[c.Op]++
		}
	}
	issuance := perUnit(u, n /* api calls */, n, secretsManagerPrices)
	t.Logf("issuance (ACME DNS-01 over Route53, Pebble), per certificate: %s; %.1f ACME requests; Route53 calls %v for %d\n    detail for %d: %s",
		issuance, float64(acmeReqs.Count()-acmeBefore)/n, r53Calls, n, n, u)
	if issuance.invocations > 15 || issuance.dynamoWrites > 40 {
		t.Errorf("per ACME DNS-01 issuance: %.1f invocations (target ≤ 15), %.1f DynamoDB writes (target ≤ 40)", issuance.invocations, issuance.dynamoWrites)
	}
	if u.Invocations[app.Signer.Name] != 0 {
		t.Errorf("the signer was invoked %d times for ACME requests", u.Invocations[app.Signer.Name])
	}
	if r53Calls["ListHostedZonesByName"] != 0 {
		t.Errorf("zones were listed although hostedZoneID is given: %v", r53Calls)
	}

	// No hostedZoneID: the zone is found by the longest allowed suffix. The
	// wildcard and the apex share one TXT name (two values at once).
	if r53 == nil {
		issue("find", "r53-find", "*.find.disc.example.com", "find.disc.example.com")
		t.Log("Route 53 at " + r53URL + ": the call log, the changes and the GetChange answers are checked on the double only")
		checkNoTXTLeft(t, txtSets())
		checkDelegationAndDLQ(t, d, nsQueries)
		d.scanForKeys()
		return
	}
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
	checkNoTXTLeft(t, txtSets())
	checkDelegationAndDLQ(t, d, nsQueries)
	d.scanForKeys()
}

// checkNoTXTLeft fails t for every TXT set left in the zones.
func checkNoTXTLeft(t *testing.T, sets map[string][]string) {
	t.Helper()
	for name, v := range sets {
		t.Errorf("TXT %s left: %q", name, v)
	}
}

// checkDelegationAndDLQ: the worker's propagation check looked the zone's
// name servers up through the delegation (NS; its SOA lookups may be
// answered from certmagic's process-wide cache), then asked
// challtestsrv; no message went to a dead-letter queue.
func checkDelegationAndDLQ(t *testing.T, d *deployment, nsQueries func() map[string]int) {
	t.Helper()
	if q := nsQueries(); q["NS"] == 0 {
		t.Errorf("the delegation DNS saw %v: the propagation check did not look the zone's servers up", q)
	}
	if n := d.VisibleMessages(d.WorkerDLQURL) + d.VisibleMessages(d.SignerDLQURL); n != 0 {
		t.Errorf("%d messages in the dead-letter queues", n)
	}
}

// txtLeft lists the challenge TXT records of dnsNames still held in the
// zones (sets: zone:name -> values) or served by challtestsrv.
func txtLeft(sets map[string][]string, peb *pebbleServer, dnsNames []string) []string {
	var left []string
	for _, n := range dnsNames {
		rec := dns01.RecordName(strings.TrimPrefix(n, "*."))
		if v := peb.dns.GetDNSTXTRecords(rec); len(v) > 0 {
			left = append(left, fmt.Sprintf("challtestsrv %s %q", rec, v))
		}
		for key, v := range sets {
			if _, name, _ := strings.Cut(key, ":"); name == rec {
				left = append(left, fmt.Sprintf("route53 %s %q", key, v))
			}
		}
	}
	return left
}

// externalRoute53 is a Route 53 endpoint (LocalStack, moto) the test sets
// zones up in.
type externalRoute53 struct {
	c *r53api.Client
}

func newExternalRoute53(t *testing.T, ep string) *externalRoute53 {
	return &externalRoute53{c: r53api.NewFromConfig(awscfg.ForEndpoint(ep, awstest.FastRetry))}
}

var zoneSeq sync.Mutex

// zone creates a public hosted zone named name and returns its ID
// (without /hostedzone/); it is deleted when t ends.
func (x *externalRoute53) zone(t *testing.T, name string) string {
	t.Helper()
	zoneSeq.Lock()
	ref := fmt.Sprintf("certfn-awse2e-%d", time.Now().UnixNano())
	zoneSeq.Unlock()
	out, err := x.c.CreateHostedZone(t.Context(), &r53api.CreateHostedZoneInput{Name: aws.String(name), CallerReference: aws.String(ref)})
	if err != nil {
		t.Fatalf("CreateHostedZone %s: %v", name, err)
	}
	id := strings.TrimPrefix(aws.ToString(out.HostedZone.Id), "/hostedzone/")
	t.Cleanup(func() {
		_, _ = x.c.DeleteHostedZone(context.Background(), &r53api.DeleteHostedZoneInput{Id: aws.String(id)})
	})
	return id
}

// txtSets reads the TXT sets of the zones (zone:name -> decoded values).
func (x *externalRoute53) txtSets(t *testing.T, zoneIDs ...string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, id := range zoneIDs {
		in := &r53api.ListResourceRecordSetsInput{HostedZoneId: aws.String(id)}
		for {
			page, err := x.c.ListResourceRecordSets(context.Background(), in)
			if err != nil {
				t.Errorf("ListResourceRecordSets %s: %v", id, err)
				return out
			}
			for _, rs := range page.ResourceRecordSets {
				if rs.Type != r53types.RRTypeTxt {
					continue
				}
				var vals []string
				for _, r := range rs.ResourceRecords {
					v := aws.ToString(r.Value)
					if u, err := strconv.Unquote(v); err == nil {
						v = u
					}
					vals = append(vals, v)
				}
				out[id+":"+strings.ToLower(strings.TrimSuffix(aws.ToString(rs.Name), ".")+".")] = vals
			}
			if !page.IsTruncated {
				break
			}
			in.StartRecordName, in.StartRecordType = page.NextRecordName, page.NextRecordType
		}
	}
	return out
}

// mirror copies the zones' TXT sets (read by sets) to challtestsrv every
// 50 ms until t ends, standing in for Route 53's name servers.
func (x *externalRoute53) mirror(t *testing.T, peb *pebbleServer, sets func() map[string][]string) {
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		served := map[string]string{} // name -> values as served
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			now := map[string][]string{}
			for key, v := range sets() {
				_, name, _ := strings.Cut(key, ":")
				now[name] = append(now[name], v...)
			}
			for name, v := range now {
				if joined := strings.Join(v, "\x00"); served[name] != joined {
					peb.dns.DeleteDNSTXTRecord(name)
					for _, s := range v {
						peb.dns.AddDNSTXTRecord(name, s)
					}
					served[name] = joined
				}
			}
			for name := range served {
				if _, ok := now[name]; !ok {
					peb.dns.DeleteDNSTXTRecord(name)
					delete(served, name)
				}
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
}

package gcpe2e

import (
	"context"
	"crypto/x509"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/auth"
	"google.golang.org/api/option"

	acmeadapter "github.com/certfn/certfn/adapters/acme"
	"github.com/certfn/certfn/adapters/dns/clouddns"
	"github.com/certfn/certfn/adapters/dns/clouddns/clouddnstest"
	"github.com/certfn/certfn/core/acme/dns01"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/internal/gcpmode"
)

// A private CA chain through the Cloud Run services, every message
// delivered twice and reordered: the api stores the manifests; the worker
// issues the self-signed root (its key pair an issued CA's, which the
// worker may write here) and hands the CA-signed request to the signer,
// which signs it and wakes the Certificate; Ready with one request per
// certificate, the leaf chains to the root, no key material in Firestore,
// nothing left due and no dead letter.
func TestCAIssuance(t *testing.T) {
	d := deploy(t, nil)
	d.apply(caIssuers + "---\n" + leafYAML("web", "ca"))
	d.settle()
	root := d.requireReady("cert-manager", "root", 1)
	d.requireReady("default", "web", 1)
	d.requireOnePerRevision("cert-manager", "root")
	d.requireOnePerRevision("default", "web")

	sec := d.secret("default", "web-tls")
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(d.secret("cert-manager", "root-ca").Data["tls.crt"]) {
		t.Fatal("root-ca holds no certificate")
	}
	l := leaf(t, sec.Data["tls.crt"])
	if _, err := l.Verify(x509.VerifyOptions{Roots: roots, DNSName: "web.example.com", CurrentTime: d.clk.Now()}); err != nil {
		t.Fatalf("web's certificate does not chain to root: %v", err)
	}
	if len(sec.Data["tls.key"]) == 0 || string(sec.Data["ca.crt"]) == "" {
		t.Fatal("web-tls lacks tls.key or ca.crt")
	}
	if d.signer.requests() == 0 {
		t.Fatal("the signer was never pushed to: the CA-signed request was not handed off")
	}
	if root.Status.NotAfter == nil || root.Status.NotAfter.Sub(d.clk.Now()) < 9*365*24*time.Hour {
		t.Fatalf("root notAfter %v", root.Status.NotAfter)
	}
	d.requireClean()
	u := d.usage()
	t.Logf("Cloud Run requests (every message twice): %v; topics %+v", u.requests, u.topics)
}

// tokenCreds are client options authenticating with a static bearer token
// (the worker's own identity at the Cloud DNS double).
func tokenCreds(tok string) option.ClientOption {
	return option.WithAuthCredentials(auth.NewCredentials(&auth.CredentialsOptions{TokenProvider: staticToken(tok)}))
}

type staticToken string

func (s staticToken) Token(context.Context) (*auth.Token, error) {
	return &auth.Token{Value: string(s), Type: "Bearer", Expiry: time.Now().Add(time.Hour)}, nil
}

// acmeDeployment is a deployment whose worker reaches peb (HTTP-01 on
// h01Addr, served by the http01 service) and Cloud DNS on cd (nil: none),
// counting its ACME requests.
func acmeDeployment(t *testing.T, peb *pebbleServer, h01Addr string, cd *clouddnstest.Double, nsAddr string) (*deployment, *acmeadapter.CountingTransport) {
	t.Helper()
	acmeReqs := &acmeadapter.CountingTransport{}
	d := deploy(t, options{app.Worker.Name: func(o *gcpmode.Options) {
		o.ACME.HTTP01SelfCheckAddr = h01Addr
		o.ACME.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { acmeReqs.Next = rt; return acmeReqs }
		if cd != nil {
			o.CloudDNS = clouddns.Options{Endpoint: cd.Endpoint(), TokenURL: cd.TokenURL, Ambient: []option.ClientOption{tokenCreds("worker-token")}}
			o.ACME.DNS01Resolver = dns01.Resolver{Nameservers: []string{nsAddr}, AuthoritativePort: peb.dnsPort, Timeout: time.Second}
		}
	}})
	d.counter.acme, d.counter.dns = acmeReqs, cd
	if h01Addr != "" {
		d.serveHTTP01(h01Addr)
	}
	return d, acmeReqs
}

// finalizes counts the Orders the worker finalized at the ACME server:
// one certificate each.
func finalizes(c *acmeadapter.CountingTransport) int {
	n := 0
	for _, l := range c.Log() {
		if strings.HasPrefix(l, "POST ") && strings.Contains(l, "finalize") {
			n++
		}
	}
	return n
}

// acmeCertYAML is a Certificate default/<name> for dnsNames from issuer.
func acmeCertYAML(name, issuer string, dnsNames ...string) string {
	q := make([]string, len(dnsNames))
	for i, n := range dnsNames {
		q[i] = `"` + n + `"`
	}
	return fmt.Sprintf(`apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: %s, namespace: default}
spec:
  secretName: %[1]s-tls
  dnsNames: [%s]
  duration: 2160h
  privateKey: {algorithm: ECDSA, size: 256}
  issuerRef: {name: %s, kind: ClusterIssuer}
`, name, strings.Join(q, ", "), issuer)
}

// An ACME certificate from Pebble, HTTP-01: the worker orders and answers
// the challenge, the http01 service answers Pebble's validation on its
// loopback port from Firestore, every message delivered twice and
// reordered; the signer is never involved. Then the worker's clock
// passes the renewal time and a sweep renews it (see TestRenewal for the
// secret's previous version).
func TestACMEHTTP01Issuance(t *testing.T) {
	h01Port := freePort(t)
	h01Addr := fmt.Sprintf("127.0.0.1:%d", h01Port)
	peb := startPebble(t, h01Port)
	d, acmeReqs := acmeDeployment(t, peb, h01Addr, nil, "")
	d.apply(peb.issuerYAML("pebble", "", "    - http01: {ingress: {}}\n"))
	d.apply(acmeCertYAML("site", "pebble", "site.example.com"))
	d.waitReady("default", "site", 1)
	d.settle()
	peb.verify(t, d.secret("default", "site-tls").Data["tls.crt"], "site.example.com")
	d.requireOnePerRevision("default", "site")
	if n := finalizes(acmeReqs); n != 1 {
		t.Errorf("%d Orders finalized at Pebble, want 1", n)
	}
	if d.http01.requests() == 0 {
		t.Fatal("Pebble never reached the http01 service")
	}
	if d.signer.requests() != 0 {
		t.Errorf("the signer was pushed %d messages for an ACME certificate", d.signer.requests())
	}
	var orders []string
	recs, _ := d.inspect.List(d.ctx, listOf(api.KindOrder, "default"))
	for _, r := range recs {
		orders = append(orders, r.Key.Name)
	}
	if len(orders) != 1 {
		t.Errorf("orders %q, want one", orders)
	}
	d.requireClean()
	u := d.usage()
	t.Logf("ACME HTTP-01 (every message twice): %d ACME requests, Cloud Run requests %v", acmeReqs.Count(), u.requests)
}

// DNS-01 through the cloudDNS solver on the Cloud DNS double: a wildcard
// and its apex (one TXT name, two values at once) from Pebble, every
// message delivered twice and reordered. The double copies the TXT sets
// it holds to challtestsrv (which Pebble's VA asks), reports each change
// pending once, then done; the worker's propagation check finds the zone's
// servers through a delegation double and asks challtestsrv. Asserted:
// Ready, both names in the certificate, which chains to Pebble's root;
// changes only in the allowed zone by the worker's identity; every TXT
// set deleted afterwards, from the double and challtestsrv.
func TestACMEDNS01CloudDNSWildcard(t *testing.T) {
	peb := startPebble(t, freePort(t))
	cd := clouddnstest.New(t)
	cd.SyncAfter = 1
	cd.OnTXT = func(u clouddnstest.TXTUpdate) {
		peb.dns.DeleteDNSTXTRecord(u.Name)
		for _, v := range u.Texts {
			peb.dns.AddDNSTXTRecord(u.Name, v)
		}
	}
	const identity = "certfn-worker@" + project + ".iam.gserviceaccount.com"
	cd.AddToken("worker-token", identity)
	cd.AddZone(project, "example-com", "example.com", false)
	cd.AddZone(project, "other-example-com", "other.example.com", false) // not in CERTFN_CLOUDDNS_ZONES
	nsAddr, nsQueries := startDelegationDNS(t, "example.com")
	d, acmeReqs := acmeDeployment(t, peb, "", cd, nsAddr)

	d.apply(peb.issuerYAML("clouddns", "", fmt.Sprintf("    - dns01:\n        cloudDNS: {project: %s, hostedZoneName: example-com}\n", project)))
	names := []string{"*.wild.example.com", "wild.example.com"}
	d.apply(acmeCertYAML("wild", "clouddns", names...))
	d.waitReady("default", "wild", 1)
	d.settle()
	l := peb.verify(t, d.secret("default", "wild-tls").Data["tls.crt"], "host.wild.example.com")
	for _, n := range names {
		if !slices.Contains(l.DNSNames, n) {
			t.Fatalf("SANs %q lack %s", l.DNSNames, n)
		}
	}
	d.requireOnePerRevision("default", "wild")
	if n := finalizes(acmeReqs); n != 1 {
		t.Errorf("%d Orders finalized at Pebble, want 1", n)
	}

	const rec = "_acme-challenge.wild.example.com."
	changes := cd.Changes()
	if len(changes) == 0 {
		t.Fatal("no Cloud DNS change")
	}
	// One value per name (the worker presents them one after the other),
	// each deleted after its validation.
	live := map[string]bool{}
	written := 0
	for _, c := range changes {
		if c.Zone != "example-com" || c.Project != project {
			t.Errorf("change %s in %s/%s; only %s/example-com is allowed", c.ID, c.Project, c.Zone, project)
		}
		for _, s := range c.Deletions {
			for _, v := range s.Rrdatas {
				delete(live, v)
			}
		}
		for _, s := range append(slices.Clone(c.Additions), c.Deletions...) {
			if s.Type != "TXT" || s.Name != rec {
				t.Errorf("change %s touches %s %s: not the challenge record", c.ID, s.Type, s.Name)
			}
		}
		for _, s := range c.Additions {
			for _, v := range s.Rrdatas {
				if !live[v] {
					written++
				}
				live[v] = true
			}
		}
	}
	if written != len(names) || len(live) != 0 {
		t.Errorf("changes %+v: want %d challenge values written and each deleted", changes, len(names))
	}
	for _, c := range cd.Calls() {
		if c.Op != "token" && c.Identity != identity {
			t.Errorf("Cloud DNS call %s by %q, want the worker's identity", c.Op, c.Identity)
		}
	}
	for _, s := range cd.RecordSets(project, "example-com") {
		if s.Type == "TXT" {
			t.Errorf("TXT %s left in the zone: %q", s.Name, s.Rrdatas)
		}
	}
	if v := peb.dns.GetDNSTXTRecords(rec); len(v) > 0 {
		t.Errorf("challtestsrv still serves %s %q", rec, v)
	}
	if q := nsQueries(); q["NS"] == 0 {
		t.Errorf("the delegation DNS saw %v: the propagation check did not look the zone's servers up", q)
	}
	d.requireClean()
	ops := map[string]int{}
	for _, c := range cd.Calls() {
		ops[c.Op]++
	}
	t.Logf("ACME DNS-01 wildcard (every message twice): %d ACME requests, Cloud DNS calls %v, Cloud Run requests %v", acmeReqs.Count(), ops, d.usage().requests)
}

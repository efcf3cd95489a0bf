package acme

import (
	"fmt"
	"io"
	"log"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/letsencrypt/challtestsrv"

	"github.com/certfn/certfn/adapters/dns/cloudflare"
	"github.com/certfn/certfn/adapters/dns/cloudflare/cloudflaretest"
	"github.com/certfn/certfn/adapters/dns/digitalocean"
	"github.com/certfn/certfn/adapters/dns/digitalocean/digitaloceantest"
	"github.com/certfn/certfn/core/acme/dns01"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/internal/localmode"
	"github.com/certfn/certfn/tests/pebbletest"
)

// apiDNS is a DNS-01 setup for a provider whose records live behind an
// HTTP API (on its labelled test double): the double's TXT records are
// mirrored into Pebble's challtestsrv (env.peb.dns), and certfn's
// propagation check finds the zone's servers through a delegation double
// (SOA and NS for example.com, glue 127.0.0.1) and asks them on port.
//
// port is served by a challtestsrv started here, before the runtime (the
// resolver's port is fixed when the runtime opens, Pebble starts after
// it), and Pebble's VA asks it too. challtestsrv registers its handler on
// miekg/dns's process-wide mux, so this server answers from the last
// challtestsrv started, Pebble's: that is why the records go to
// env.peb.dns, which then answers on every challtestsrv port.
type apiDNS struct {
	addr    string
	port    int
	nsAddr  string
	nsCount func() map[string]int
	e       *env // set once the env runs
}

// newAPIDNS starts the challtestsrv and the delegation double for zone.
func newAPIDNS(t *testing.T, zone string) *apiDNS {
	t.Helper()
	port := freePort(t)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	srv, err := challtestsrv.New(challtestsrv.Config{DNSAddrs: []string{addr}, Log: log.New(io.Discard, "", 0)})
	if err != nil {
		t.Fatal(err)
	}
	srv.Run()
	t.Cleanup(srv.Shutdown)
	waitTCP(t, addr)
	nsAddr, counts := pebbletest.StartDelegationDNS(t, zone)
	return &apiDNS{addr: addr, port: port, nsAddr: nsAddr, nsCount: counts}
}

// mirror replaces the TXT values Pebble's challtestsrv serves for name.
// It is called from the double's OnTXT, during the env's run.
func (a *apiDNS) mirror(name string, texts []string) {
	dns := a.e.peb.dns
	dns.DeleteDNSTXTRecord(name)
	for _, v := range texts {
		dns.AddDNSTXTRecord(name, v)
	}
}

// served returns the TXT values served for name.
func (a *apiDNS) served(name string) []string { return a.e.peb.dns.GetDNSTXTRecords(name) }

// envOpts points Pebble's VA at the challtestsrv and certfn's DNS-01
// checks at the delegation double, and registers providers.
func (a *apiDNS) envOpts(providers map[string]dns01.ProviderFactory) envOpts {
	return envOpts{pebble: pebbleOpts{dnsServer: a.addr}, local: func(o *localmode.Options) {
		o.ACME.DNS01Providers = providers
		o.ACME.DNS01Resolver = dns01.Resolver{Nameservers: []string{a.nsAddr}, AuthoritativePort: a.port, Timeout: time.Second}
	}}
}

// issueWithIssuer applies a namespaced Issuer "pebble" in default with
// the solver lines (indented by 4), its secret, and a Certificate for
// *.wild.example.com and wild.example.com (one TXT name, two values at
// once), issues it and verifies the chain.
func issueWithIssuer(t *testing.T, e *env, solver string, secret ports.Secret) {
	t.Helper()
	if err := e.rt.Secrets.Put(e.ctx, secret); err != nil {
		t.Fatal(err)
	}
	issuer := strings.Replace(e.issuerYAML("    solvers:\n"+solver), "kind: ClusterIssuer\nmetadata: {name: pebble}", "kind: Issuer\nmetadata: {name: pebble, namespace: default}", 1)
	e.apply(issuer)
	cert := strings.Replace(certYAML("wild", []string{`"*.wild.example.com"`, "wild.example.com"}, ""), "kind: ClusterIssuer", "kind: Issuer", 1)
	e.apply(cert)
	c := e.issue("wild")
	if c.Spec.IssuerRef.Kind != api.KindIssuer {
		t.Fatalf("issuerRef %+v, want the Issuer", c.Spec.IssuerRef)
	}
	leaf := e.verify("wild-tls", "host.wild.example.com", "wild.example.com")
	t.Logf("issued %v by %s", leaf.DNSNames, leaf.Issuer)
}

const challengeName = "_acme-challenge.wild.example.com."

// A certificate from Pebble through cert-manager's cloudflare solver (an
// API token in the Issuer's namespace) on the Cloudflare TEST DOUBLE:
// both challenge values are created as records of the zone by the token,
// served (mirrored) to Pebble, and deleted afterwards.
func TestDNS01Cloudflare(t *testing.T) {
	dnsSrv := newAPIDNS(t, "example.com")
	cf := cloudflaretest.New(t)
	cf.PageSize = 1 // both values of the name: two pages
	cf.OnTXT = func(u cloudflaretest.TXTUpdate) { dnsSrv.mirror(u.Name, u.Texts) }
	cf.AddZone("example.com")
	cf.AddZone("example.org")
	cf.AddToken("cf-api-token", "issuer")
	e := newEnv(t, dnsSrv.envOpts(map[string]dns01.ProviderFactory{
		dns01.KeyCloudflare: cloudflare.NewFactory(cloudflare.Options{BaseURL: cf.URL}).Build,
	}))
	dnsSrv.e = e
	issueWithIssuer(t, e, `    - dns01:
        cloudflare:
          apiTokenSecretRef: {name: cloudflare-api-token, key: api-token}
`, ports.Secret{Namespace: "default", Name: "cloudflare-api-token", Data: map[string][]byte{"api-token": []byte("cf-api-token")}})

	if n := cf.Count("dns_records.create"); n != 2 {
		t.Errorf("%d records created, want 2 (the wildcard's and the apex's value)", n)
	}
	if n := cf.Count("dns_records.delete"); n != 2 {
		t.Errorf("%d records deleted, want 2", n)
	}
	for _, c := range cf.Calls() {
		if c.Credential != "token:issuer" {
			t.Errorf("%s made as %q, want the Issuer's token", c.Op, c.Credential)
		}
		if c.Op != "zones.list" && c.Zone != "example.com" {
			t.Errorf("%s on zone %q, want example.com", c.Op, c.Zone)
		}
	}
	if recs := cf.Records("example.com"); len(recs) != 0 {
		t.Errorf("records left in the zone: %+v", recs)
	}
	if v := dnsSrv.served(challengeName); len(v) > 0 {
		t.Errorf("challtestsrv still serves %s %q", challengeName, v)
	}
	if q := dnsSrv.nsCount(); q["NS"] == 0 {
		t.Errorf("the delegation DNS saw %v: the propagation check did not look the zone's servers up", q)
	}
}

// The same through cert-manager's digitalocean solver (tokenSecretRef) on
// the DigitalOcean TEST DOUBLE.
func TestDNS01DigitalOcean(t *testing.T) {
	dnsSrv := newAPIDNS(t, "example.com")
	do := digitaloceantest.New(t)
	do.PageSize = 1
	do.OnTXT = func(u digitaloceantest.TXTUpdate) { dnsSrv.mirror(u.Name, u.Texts) }
	do.AddDomain("example.org")
	do.AddDomain("example.com")
	do.AddToken("dop_v1_issuer", "issuer")
	e := newEnv(t, dnsSrv.envOpts(map[string]dns01.ProviderFactory{
		dns01.KeyDigitalOcean: digitalocean.NewFactory(digitalocean.Options{BaseURL: do.URL}).Build,
	}))
	dnsSrv.e = e
	issueWithIssuer(t, e, `    - dns01:
        digitalocean:
          tokenSecretRef: {name: digitalocean-token, key: access-token}
`, ports.Secret{Namespace: "default", Name: "digitalocean-token", Data: map[string][]byte{"access-token": []byte("dop_v1_issuer\n")}})

	if n := do.Count("records.create"); n != 2 {
		t.Errorf("%d records created, want 2 (the wildcard's and the apex's value)", n)
	}
	if n := do.Count("records.delete"); n != 2 {
		t.Errorf("%d records deleted, want 2", n)
	}
	for _, c := range do.Calls() {
		if c.Token != "issuer" {
			t.Errorf("%s made with token %q, want the Issuer's", c.Op, c.Token)
		}
		if c.Op != "domains.list" && c.Domain != "example.com" {
			t.Errorf("%s on domain %q, want example.com", c.Op, c.Domain)
		}
	}
	if recs := do.Records("example.com"); len(recs) != 0 {
		t.Errorf("records left in the domain: %s", fmt.Sprint(recs))
	}
	if v := dnsSrv.served(challengeName); len(v) > 0 {
		t.Errorf("challtestsrv still serves %s %q", challengeName, v)
	}
	if q := dnsSrv.nsCount(); q["NS"] == 0 {
		t.Errorf("the delegation DNS saw %v: the propagation check did not look the zone's servers up", q)
	}
}

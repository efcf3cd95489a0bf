package acme

import (
	"context"
	"encoding/json"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/letsencrypt/challtestsrv"
	"github.com/miekg/dns"

	"github.com/certfn/certfn/adapters/dns/acmedns"
	"github.com/certfn/certfn/adapters/dns/acmedns/acmednstest"
	"github.com/certfn/certfn/core/acme/dns01"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/internal/localmode"
)

// zoneView is a TEST DOUBLE of the public DNS for the DNS-01 providers'
// end-to-end tests (not a DNS server of any provider): it answers, on a
// loopback UDP port, SOA and NS (glue 127.0.0.1) at the apex of each zone
// it is given, so that the Solver finds a record's zone and its
// authoritative server (itself, on Resolver.AuthoritativePort), and
// answers TXT and CNAME queries below them from the records in Pebble's
// challtestsrv, the server Pebble's VA asks. So the Solver's propagation
// check and Pebble's validation see the same records, which the
// provider's double mirrors into challtestsrv.
type zoneView struct {
	addr string
	port int

	mu   sync.Mutex
	srv  *challtestsrv.ChallSrv
	apex map[string]bool
}

// startZoneView starts a zoneView for zones until the test ends; its
// records source is set with use once Pebble runs.
func startZoneView(t *testing.T, zones ...string) *zoneView {
	t.Helper()
	z := &zoneView{apex: map[string]bool{}}
	for _, n := range zones {
		z.apex[dns.CanonicalName(n)] = true
	}
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(z.serve)}
	started := make(chan struct{})
	srv.NotifyStartedFunc = func() { close(started) }
	go func() { _ = srv.ActivateAndServe() }()
	<-started
	t.Cleanup(func() { _ = srv.Shutdown() })
	z.addr = pc.LocalAddr().String()
	z.port = pc.LocalAddr().(*net.UDPAddr).Port
	return z
}

// use sets the challtestsrv whose records are served.
func (z *zoneView) use(srv *challtestsrv.ChallSrv) {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.srv = srv
}

// resolver is the DNS-01 Resolver that asks z.
func (z *zoneView) resolver() dns01.Resolver {
	return dns01.Resolver{Nameservers: []string{z.addr}, AuthoritativePort: z.port, Timeout: time.Second}
}

func (z *zoneView) serve(w dns.ResponseWriter, r *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(r)
	m.Authoritative = true
	if len(r.Question) != 1 {
		_ = w.WriteMsg(m)
		return
	}
	q := r.Question[0]
	name := dns.CanonicalName(q.Name)
	zone := ""
	for n := name; ; {
		if z.apex[n] {
			zone = n
			break
		}
		i, end := dns.NextLabel(n, 0)
		if end {
			break
		}
		n = n[i:]
	}
	hdr := func(n string, t uint16) dns.RR_Header {
		return dns.RR_Header{Name: n, Rrtype: t, Class: dns.ClassINET, Ttl: 1}
	}
	z.mu.Lock()
	srv := z.srv
	z.mu.Unlock()
	switch {
	case zone == "":
		m.Rcode = dns.RcodeNameError
	case name == zone && q.Qtype == dns.TypeSOA:
		m.Answer = append(m.Answer, &dns.SOA{Hdr: hdr(zone, dns.TypeSOA), Ns: "ns1." + zone, Mbox: "hostmaster." + zone, Serial: 1, Refresh: 60, Retry: 60, Expire: 600, Minttl: 1})
	case name == zone && q.Qtype == dns.TypeNS:
		m.Answer = append(m.Answer, &dns.NS{Hdr: hdr(zone, dns.TypeNS), Ns: "ns1." + zone})
		m.Extra = append(m.Extra, &dns.A{Hdr: hdr("ns1."+zone, dns.TypeA), A: net.IPv4(127, 0, 0, 1)})
	case srv != nil && srv.GetDNSCNAMERecord(name) != "" && (q.Qtype == dns.TypeCNAME || q.Qtype == dns.TypeTXT):
		m.Answer = append(m.Answer, &dns.CNAME{Hdr: hdr(name, dns.TypeCNAME), Target: srv.GetDNSCNAMERecord(name)})
	case srv != nil && q.Qtype == dns.TypeTXT && len(srv.GetDNSTXTRecords(name)) > 0:
		for _, v := range srv.GetDNSTXTRecords(name) {
			var parts []string
			for len(v) > 255 {
				parts, v = append(parts, v[:255]), v[255:]
			}
			m.Answer = append(m.Answer, &dns.TXT{Hdr: hdr(name, dns.TypeTXT), Txt: append(parts, v)})
		}
	default:
		m.Ns = append(m.Ns, &dns.SOA{Hdr: hdr(zone, dns.TypeSOA), Ns: "ns1." + zone, Mbox: "hostmaster." + zone, Serial: 1, Refresh: 60, Retry: 60, Expire: 600, Minttl: 1})
	}
	_ = w.WriteMsg(m)
}

// TestDNS01AcmeDNS: a wildcard and its base name through cert-manager's
// acmeDNS solver on the acme-dns double, as a user sets it up: the domain
// registered at acme-dns, _acme-challenge.<domain> CNAMEd to the
// registration's fulldomain (in challtestsrv, which Pebble's VA asks and
// which follows the CNAME), the registration JSON in the ClusterIssuer's
// secret (certfn's Solver checks propagation at the end of the CNAME, the
// fulldomain, whose zone the test's public DNS delegates to challtestsrv's
// records). The double mirrors the two values
// it keeps into challtestsrv at the fulldomain. Asserted: Ready, both
// names in the certificate, which chains to Pebble's root; exactly two
// updates (one value per name) with the registration's credentials, both
// values served at once; nothing deleted (acme-dns cannot).
//
// It runs with cnameStrategy Follow and with the default (None), as most
// cert-manager acme-dns Issuers are written: the propagation check follows
// the CNAME either way, as cert-manager's does.
func TestDNS01AcmeDNS(t *testing.T) {
	for _, strategy := range []string{"Follow", ""} {
		name := strategy
		if name == "" {
			name = "None (default)"
		}
		t.Run(name, func(t *testing.T) { testDNS01AcmeDNS(t, strategy) })
	}
}

func testDNS01AcmeDNS(t *testing.T, strategy string) {
	view := startZoneView(t, "example.test", acmednstest.DefaultDomain)
	e := newEnv(t, envOpts{local: func(o *localmode.Options) {
		o.ACME.DNS01Providers = map[string]dns01.ProviderFactory{dns01.KeyAcmeDNS: acmedns.NewFactory(acmedns.Options{}).Build}
		o.ACME.DNS01AllowInternalNames = true
		o.ACME.DNS01Resolver = view.resolver()
	}})
	view.use(e.peb.dns)
	d := acmednstest.New(t)
	var served [][]string
	d.OnTXT = func(u acmednstest.TXTUpdate) {
		e.peb.dns.DeleteDNSTXTRecord(u.FullDomain + ".")
		for _, v := range u.Texts {
			e.peb.dns.AddDNSTXTRecord(u.FullDomain+".", v)
		}
		served = append(served, u.Texts)
	}
	acct := d.Register(t)
	e.peb.dns.AddDNSCNAMERecord("_acme-challenge.adns.example.test.", acct.FullDomain+".")
	regs, err := json.Marshal(map[string]acmednstest.Account{"adns.example.test": acct})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.rt.Secrets.Put(context.Background(), ports.Secret{Namespace: "cert-manager", Name: "acme-dns", Data: map[string][]byte{"acmedns.json": regs}}); err != nil {
		t.Fatal(err)
	}
	cname := ""
	if strategy != "" {
		cname = "        cnameStrategy: " + strategy + "\n"
	}
	e.apply(e.issuerYAML(`    solvers:
    - dns01:
` + cname + `        acmeDNS:
          host: ` + d.URL + `
          accountSecretRef: {name: acme-dns, key: acmedns.json}
`))
	e.apply(certYAML("adns", []string{`"*.adns.example.test"`, "adns.example.test"}, ""))
	e.issue("adns")
	leaf := e.verify("adns-tls", "x.adns.example.test", "adns.example.test")
	for _, n := range []string{"*.adns.example.test", "adns.example.test"} {
		if !slices.Contains(leaf.DNSNames, n) {
			t.Fatalf("SANs %q lack %s", leaf.DNSNames, n)
		}
	}
	var updates []acmednstest.Call
	for _, c := range d.Calls() {
		if c.Op == "update" {
			updates = append(updates, c)
		}
	}
	if len(updates) != 2 {
		t.Fatalf("acme-dns updates %+v, want 2 (one value per name)", updates)
	}
	for _, c := range updates {
		if c.Status != 200 || c.User != acct.Username || c.SubDomain != acct.SubDomain {
			t.Errorf("update %+v, want 200 by %s for %s", c, acct.Username, acct.SubDomain)
		}
	}
	if last := served[len(served)-1]; len(last) != 2 || updates[0].TXT == updates[1].TXT {
		t.Errorf("acme-dns served %q after the second update, want both challenge values", last)
	}
	if got := d.TXT(acct.FullDomain); len(got) != 2 || !strings.Contains(strings.Join(got, " "), updates[1].TXT) {
		t.Errorf("acme-dns holds %q after issuance; it has no delete, so both values stay", got)
	}
}

package dns01

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libdns/libdns"
	"github.com/miekg/dns"
)

// TEST DOUBLES: in-process DNS servers (miekg/dns) serving a small zone
// from memory, and an in-memory libdns provider writing to them. The real
// servers (BIND 9, challtestsrv) are exercised in tests/dns.

// zoneData is what one fake server serves.
type zoneData struct {
	mu    sync.Mutex
	zones map[string]bool     // zone apexes
	txt   map[string][]string // fqdn -> values
	cname map[string]string   // fqdn -> target
}

func newZoneData(zones ...string) *zoneData {
	d := &zoneData{zones: map[string]bool{}, txt: map[string][]string{}, cname: map[string]string{}}
	for _, z := range zones {
		d.zones[dns.CanonicalName(z)] = true
	}
	return d
}

// setCNAME points name at target, under the lock the server reads with.
func (d *zoneData) setCNAME(name, target string) {
	d.mu.Lock()
	d.cname[name] = target
	d.mu.Unlock()
}

// zoneOf returns the apex holding name, or "".
func (d *zoneData) zoneOf(name string) string {
	for z := range d.zones {
		if dns.IsSubDomain(z, name) {
			return z
		}
	}
	return ""
}

// server behaviours.
const (
	serveNormal   = "normal"
	serveSERVFAIL = "servfail"
	serveSilent   = "silent" // never answers: a timeout
)

// fakeNS is one fake authoritative server (also used as the resolver).
type fakeNS struct {
	name string // "ns1.example.test."
	ip   string
	data *zoneData
	mode string
	glue bool // include glue for the NS answer

	mu      sync.Mutex
	queries []string // "TYPE name"
	all     []*fakeNS
}

func (f *fakeNS) setMode(m string) {
	f.mu.Lock()
	f.mode = m
	f.mu.Unlock()
}

// Queries returns the queries seen so far.
func (f *fakeNS) Queries() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.queries)
}

func (f *fakeNS) ServeDNS(w dns.ResponseWriter, r *dns.Msg) {
	q := r.Question[0]
	name := dns.CanonicalName(q.Name)
	f.mu.Lock()
	f.queries = append(f.queries, dns.TypeToString[q.Qtype]+" "+name)
	mode := f.mode
	f.mu.Unlock()
	m := new(dns.Msg)
	m.SetReply(r)
	m.Authoritative = true
	switch mode {
	case serveSilent:
		return
	case serveSERVFAIL:
		m.Rcode = dns.RcodeServerFailure
		_ = w.WriteMsg(m)
		return
	}
	d := f.data
	d.mu.Lock()
	defer d.mu.Unlock()
	hdr := func(t uint16) dns.RR_Header {
		return dns.RR_Header{Name: q.Name, Rrtype: t, Class: dns.ClassINET, Ttl: 60}
	}
	zone := d.zoneOf(name)
	for _, ns := range f.all {
		if name == ns.name && (q.Qtype == dns.TypeA) {
			m.Answer = append(m.Answer, &dns.A{Hdr: hdr(dns.TypeA), A: net.ParseIP(ns.ip)})
		}
	}
	switch {
	case len(m.Answer) > 0:
	case zone == "":
		m.Rcode = dns.RcodeNameError
	case d.cname[name] != "" && (q.Qtype == dns.TypeCNAME || q.Qtype == dns.TypeTXT):
		m.Answer = append(m.Answer, &dns.CNAME{Hdr: hdr(dns.TypeCNAME), Target: d.cname[name]})
	case q.Qtype == dns.TypeSOA && name == zone:
		m.Answer = append(m.Answer, &dns.SOA{Hdr: hdr(dns.TypeSOA), Ns: f.all[0].name, Mbox: "hostmaster." + zone,
			Serial: 1, Refresh: 1, Retry: 1, Expire: 60, Minttl: 60})
	case q.Qtype == dns.TypeNS && name == zone:
		for _, ns := range f.all {
			m.Answer = append(m.Answer, &dns.NS{Hdr: hdr(dns.TypeNS), Ns: ns.name})
			if f.glue {
				m.Extra = append(m.Extra, &dns.A{Hdr: dns.RR_Header{Name: ns.name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60}, A: net.ParseIP(ns.ip)})
			}
		}
	case q.Qtype == dns.TypeTXT && len(d.txt[name]) > 0:
		for _, v := range d.txt[name] {
			m.Answer = append(m.Answer, &dns.TXT{Hdr: hdr(dns.TypeTXT), Txt: []string{v}})
		}
	case len(d.txt[name]) == 0 && d.cname[name] == "" && name != zone:
		m.Rcode = dns.RcodeNameError
	}
	_ = w.WriteMsg(m)
}

// fakeDNS is two authoritative servers for example.test. and
// delegate.test., ns1 on 127.0.0.1 and ns2 on 127.0.0.2, same port.
// ns1 is also the resolver.
type fakeDNS struct {
	ns1, ns2 *fakeNS
	port     int
}

// startFakeDNS starts both servers (UDP) and stops them when t ends.
// Each server has its own zoneData, so "propagation" can lag on ns2.
func startFakeDNS(t *testing.T) *fakeDNS {
	t.Helper()
	zones := []string{"example.test.", "delegate.test."}
	f := &fakeDNS{
		ns1: &fakeNS{name: "ns1.example.test.", ip: "127.0.0.1", data: newZoneData(zones...), mode: serveNormal, glue: true},
		ns2: &fakeNS{name: "ns2.example.test.", ip: "127.0.0.2", data: newZoneData(zones...), mode: serveNormal, glue: true},
	}
	f.ns1.all = []*fakeNS{f.ns1, f.ns2}
	f.ns2.all = f.ns1.all
	for attempt := 0; ; attempt++ {
		pc1, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := pc1.LocalAddr().(*net.UDPAddr).Port
		pc2, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.2:%d", port))
		if err != nil {
			pc1.Close()
			if attempt > 20 {
				t.Fatal(err)
			}
			continue
		}
		f.port = port
		for _, s := range []struct {
			pc net.PacketConn
			ns *fakeNS
		}{{pc1, f.ns1}, {pc2, f.ns2}} {
			started := make(chan struct{})
			srv := &dns.Server{PacketConn: s.pc, Handler: s.ns, NotifyStartedFunc: func() { close(started) }}
			go func() { _ = srv.ActivateAndServe() }()
			<-started
			t.Cleanup(func() { _ = srv.Shutdown() })
		}
		return f
	}
}

// resolver returns a Resolver that asks ns1 and queries authoritative
// servers on the fake port with a short timeout.
func (f *fakeDNS) resolver() Resolver {
	return Resolver{
		Nameservers:       []string{fmt.Sprintf("127.0.0.1:%d", f.port)},
		AuthoritativePort: f.port,
		Timeout:           300 * time.Millisecond,
	}
}

// memProvider is an in-memory libdns provider writing to the zoneData of
// the given servers (all of them: "propagated at once").
type memProvider struct {
	targets []*zoneData

	mu      sync.Mutex
	appends int
	deletes int
	// appendErr, when set, is returned by AppendRecords.
	appendErr error
}

func (p *memProvider) AppendRecords(_ context.Context, zone string, recs []libdns.Record) ([]libdns.Record, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.appendErr != nil {
		return nil, p.appendErr
	}
	p.appends++
	for _, r := range recs {
		rr := r.RR()
		name := dns.CanonicalName(libdns.AbsoluteName(rr.Name, zone))
		for _, d := range p.targets {
			d.mu.Lock()
			if d.zoneOf(name) != dns.CanonicalName(zone) {
				d.mu.Unlock()
				return nil, fmt.Errorf("%s not in zone %s", name, zone)
			}
			d.txt[name] = append(d.txt[name], rr.Data)
			d.mu.Unlock()
		}
	}
	return recs, nil
}

func (p *memProvider) DeleteRecords(_ context.Context, zone string, recs []libdns.Record) ([]libdns.Record, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.deletes++
	for _, r := range recs {
		rr := r.RR()
		name := dns.CanonicalName(libdns.AbsoluteName(rr.Name, zone))
		for _, d := range p.targets {
			d.mu.Lock()
			d.txt[name] = slices.DeleteFunc(d.txt[name], func(v string) bool { return v == rr.Data })
			d.mu.Unlock()
		}
	}
	return recs, nil
}

// memGetter is a memProvider that also implements libdns.RecordGetter.
type memGetter struct{ *memProvider }

func (p memGetter) GetRecords(_ context.Context, zone string) ([]libdns.Record, error) {
	var out []libdns.Record
	d := p.targets[0]
	d.mu.Lock()
	defer d.mu.Unlock()
	for name, vs := range d.txt {
		if !dns.IsSubDomain(dns.CanonicalName(zone), name) {
			continue
		}
		for _, v := range vs {
			out = append(out, libdns.TXT{Name: libdns.RelativeName(name, zone), Text: v})
		}
	}
	return out, nil
}

// txtAt returns the values d serves for fqdn.
func txtAt(d *zoneData, fqdn string) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.txt[dns.CanonicalName(fqdn)])
}

func hasQuery(qs []string, prefix string) bool {
	return slices.ContainsFunc(qs, func(q string) bool { return strings.HasPrefix(q, prefix) })
}

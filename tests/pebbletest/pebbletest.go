// Package pebbletest runs, inside a test process, what the end-to-end
// suites (tests/awse2e, tests/gcpe2e) need around an ACME issuance:
// Let's Encrypt's test CA Pebble with its challtestsrv DNS server, and a
// double of the public DNS that delegates the test zones.
package pebbletest

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"maps"
	"net"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/letsencrypt/challtestsrv"
	"github.com/letsencrypt/pebble/v2/ca"
	"github.com/letsencrypt/pebble/v2/db"
	"github.com/letsencrypt/pebble/v2/va"
	"github.com/letsencrypt/pebble/v2/wfe"
	"github.com/miekg/dns"
)

// Server is Pebble in this process, set up as tests/cmd/pebble does:
// challtestsrv answers 127.0.0.1 for every name and the VA validates
// HTTP-01 on 127.0.0.1:<http01 port> and DNS-01 by asking challtestsrv.
type Server struct {
	// DirURL is the ACME directory URL.
	DirURL string
	// TLSPEM is the PEM certificate of the ACME server's TLS endpoint.
	TLSPEM []byte
	// Roots are the roots Pebble issues under.
	Roots *x509.CertPool
	// DNS is the challtestsrv Pebble's VA asks (DNS-01 records are set
	// there), listening on 127.0.0.1:DNSPort.
	DNS     *challtestsrv.ChallSrv
	DNSPort int
}

// FreePort returns a TCP port free on 127.0.0.1 at the time of the call.
func FreePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Start runs Pebble and its challtestsrv until the test ends. Setting
// PEBBLE_LOG shows Pebble's log on stderr.
func Start(t *testing.T, http01Port int) *Server {
	t.Helper()
	t.Setenv("PEBBLE_VA_NOSLEEP", "1")
	t.Setenv("PEBBLE_WFE_NONCEREJECT", "0")
	t.Setenv("PEBBLE_AUTHZREUSE", "0")
	logger := log.New(io.Discard, "", 0)
	if os.Getenv("PEBBLE_LOG") != "" {
		logger = log.New(os.Stderr, "pebble ", log.LstdFlags)
	}
	dnsPort := FreePort(t)
	dnsAddr := fmt.Sprintf("127.0.0.1:%d", dnsPort)
	srv, err := challtestsrv.New(challtestsrv.Config{DNSAddrs: []string{dnsAddr}, Log: log.New(io.Discard, "", 0)})
	if err != nil {
		t.Fatal(err)
	}
	srv.SetDefaultDNSIPv4("127.0.0.1")
	srv.SetDefaultDNSIPv6("")
	srv.Run()
	t.Cleanup(srv.Shutdown)
	for i := 0; ; i++ {
		c, err := net.Dial("tcp", dnsAddr)
		if err == nil {
			c.Close()
			break
		}
		if i > 200 {
			t.Fatalf("challtestsrv not listening on %s", dnsAddr)
		}
		time.Sleep(10 * time.Millisecond)
	}
	store := db.NewMemoryStore()
	cai := ca.New(logger, store, "", "ecdsa", 0, 1, map[string]ca.Profile{"default": {Description: "default"}})
	vai := va.New(logger, http01Port, 0, false, dnsAddr, store)
	w := wfe.New(logger, store, vai, cai, []string{"pebble.letsencrypt.org"}, false, false, 0, 0)
	ts := httptest.NewTLSServer(w.Handler())
	t.Cleanup(ts.Close)
	roots := x509.NewCertPool()
	for i := 0; i < cai.GetNumberOfRootCerts(); i++ {
		roots.AddCert(cai.GetRootCert(i).Cert)
	}
	return &Server{DirURL: ts.URL + wfe.DirectoryPath,
		TLSPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw}), Roots: roots,
		DNS: srv, DNSPort: dnsPort}
}

// StartDelegationDNS is a TEST DOUBLE of the public DNS above the test
// zones (no resolver here knows them): for each zone apex it answers SOA,
// and NS with glue 127.0.0.1, so that the worker's propagation check asks
// 127.0.0.1 on dns01.Resolver.AuthoritativePort, which the tests point at
// challtestsrv, the server Pebble's VA asks too (fed by the Route 53 or
// Cloud DNS double); below an apex it answers NODATA with the zone's SOA,
// elsewhere NXDOMAIN. It returns its UDP address and the number of queries
// it answered per type.
func StartDelegationDNS(t *testing.T, zones ...string) (string, func() map[string]int) {
	t.Helper()
	var mu sync.Mutex
	queries := map[string]int{}
	apex := map[string]bool{}
	for _, z := range zones {
		apex[dns.CanonicalName(z)] = true
	}
	zoneOf := func(name string) string {
		for n := dns.CanonicalName(name); ; {
			if apex[n] {
				return n
			}
			i, end := dns.NextLabel(n, 0)
			if end {
				return ""
			}
			n = n[i:]
		}
	}
	soa := func(z string) *dns.SOA {
		return &dns.SOA{Hdr: dns.RR_Header{Name: z, Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: 60},
			Ns: "ns1." + z, Mbox: "hostmaster." + z, Serial: 1, Refresh: 60, Retry: 60, Expire: 600, Minttl: 60}
	}
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		m.Authoritative = true
		if len(r.Question) == 1 {
			q := r.Question[0]
			mu.Lock()
			queries[dns.TypeToString[q.Qtype]]++
			mu.Unlock()
			name := dns.CanonicalName(q.Name)
			switch z := zoneOf(name); {
			case z == "":
				m.Rcode = dns.RcodeNameError
			case name == z && q.Qtype == dns.TypeSOA:
				m.Answer = append(m.Answer, soa(z))
			case name == z && q.Qtype == dns.TypeNS:
				m.Answer = append(m.Answer, &dns.NS{Hdr: dns.RR_Header{Name: z, Rrtype: dns.TypeNS, Class: dns.ClassINET, Ttl: 60}, Ns: "ns1." + z})
				m.Extra = append(m.Extra, &dns.A{Hdr: dns.RR_Header{Name: "ns1." + z, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60}, A: net.IPv4(127, 0, 0, 1)})
			default:
				m.Ns = append(m.Ns, soa(z))
			}
		}
		_ = w.WriteMsg(m)
	})}
	started := make(chan struct{})
	srv.NotifyStartedFunc = func() { close(started) }
	go func() { _ = srv.ActivateAndServe() }()
	<-started
	t.Cleanup(func() { _ = srv.Shutdown() })
	return pc.LocalAddr().String(), func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(queries)
	}
}

// ClusterIssuerYAML is an ACME ClusterIssuer name on s, trusting its TLS
// certificate (caBundle), its account key in the secret <name>-account,
// with the given solvers (YAML list items, indented for
// spec.acme.solvers) and extra spec.acme lines.
func (s *Server) ClusterIssuerYAML(name, extra, solvers string) string {
	return fmt.Sprintf(`apiVersion: cert-manager.io/v1
kind: ClusterIssuer
metadata: {name: %s}
spec:
  acme:
    server: %s
    email: test@example.com
    caBundle: %s
    privateKeySecretRef: {name: %s-account}
%s    solvers:
%s`, name, s.DirURL, base64.StdEncoding.EncodeToString(s.TLSPEM), name, extra, solvers)
}

package gcpe2e

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
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

// pebbleServer is Let's Encrypt's test CA in this process (as
// tests/awse2e runs it): challtestsrv answers 127.0.0.1 for every name and
// the VA validates HTTP-01 on 127.0.0.1:<http01 port> and DNS-01 by asking
// challtestsrv.
type pebbleServer struct {
	dirURL  string
	tlsPEM  []byte
	roots   *x509.CertPool
	dns     *challtestsrv.ChallSrv
	dnsPort int
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func startPebble(t *testing.T, http01Port int) *pebbleServer {
	t.Helper()
	t.Setenv("PEBBLE_VA_NOSLEEP", "1")
	t.Setenv("PEBBLE_WFE_NONCEREJECT", "0")
	t.Setenv("PEBBLE_AUTHZREUSE", "0")
	logger := log.New(io.Discard, "", 0)
	if os.Getenv("PEBBLE_LOG") != "" {
		logger = log.New(os.Stderr, "pebble ", log.LstdFlags)
	}
	dnsPort := freePort(t)
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
	return &pebbleServer{dirURL: ts.URL + wfe.DirectoryPath,
		tlsPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw}), roots: roots,
		dns: srv, dnsPort: dnsPort}
}

// issuerYAML is an ACME ClusterIssuer on peb with the given solvers (YAML
// list items, indented for spec.acme.solvers) and extra spec.acme fields.
func (peb *pebbleServer) issuerYAML(name, extra, solvers string) string {
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
%s`, name, peb.dirURL, base64.StdEncoding.EncodeToString(peb.tlsPEM), name, extra, solvers)
}

// verify checks that tls.crt's leaf verifies against Pebble's root for
// dnsName (with the chain's intermediates), and returns the leaf.
func (peb *pebbleServer) verify(t *testing.T, tlsCrt []byte, dnsName string) *x509.Certificate {
	t.Helper()
	l := leaf(t, tlsCrt)
	inter := x509.NewCertPool()
	chain := strings.SplitAfter(string(tlsCrt), "-----END CERTIFICATE-----\n")
	for _, c := range chain[1:] {
		inter.AppendCertsFromPEM([]byte(c))
	}
	if _, err := l.Verify(x509.VerifyOptions{Roots: peb.roots, Intermediates: inter, DNSName: dnsName}); err != nil {
		t.Fatalf("the certificate for %s does not verify against Pebble's root: %v", dnsName, err)
	}
	return l
}

// serveHTTP01 plays the http01 Cloud Run service behind its public URL:
// every request on addr goes to the service's handler (counted as its
// Cloud Run requests).
func (d *deployment) serveHTTP01(addr string) {
	d.t.Helper()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := d.serve(d.http01, r)
		maps.Copy(w.Header(), rec.Header())
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	}), ReadHeaderTimeout: 5 * time.Second}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		d.t.Fatal(err)
	}
	go func() { _ = srv.Serve(l) }()
	d.t.Cleanup(func() { _ = srv.Close() })
}

// startDelegationDNS is a TEST DOUBLE of the public DNS above the managed
// zones (no resolver here knows them), as in tests/awse2e: for each zone
// apex it answers SOA, and NS with glue 127.0.0.1, so that the worker's
// propagation check asks 127.0.0.1 on dns01.Resolver.AuthoritativePort,
// which the test points at challtestsrv (Cloud DNS's name servers, fed by
// the Cloud DNS double); below an apex NODATA, elsewhere NXDOMAIN. It
// returns its UDP address and the queries it answered per type.
func startDelegationDNS(t *testing.T, zones ...string) (string, func() map[string]int) {
	t.Helper()
	var mu sync.Mutex
	queries := map[string]int{}
	zoneOf := func(name string) string {
		for n := dns.CanonicalName(name); ; {
			if slices.Contains(zones, strings.TrimSuffix(n, ".")) {
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

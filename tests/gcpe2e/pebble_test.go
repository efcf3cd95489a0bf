package gcpe2e

import (
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"maps"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/letsencrypt/challtestsrv"

	"github.com/certfn/certfn/tests/pebbletest"
)

// pebbleServer is Let's Encrypt's test CA in this process, started by
// pebbletest.Start (as tests/awse2e runs it): challtestsrv answers
// 127.0.0.1 for every name and the VA validates HTTP-01 on
// 127.0.0.1:<http01 port> and DNS-01 by asking challtestsrv.
type pebbleServer struct {
	dirURL  string
	tlsPEM  []byte
	roots   *x509.CertPool
	dns     *challtestsrv.ChallSrv
	dnsPort int
}

// freePort and startDelegationDNS are pebbletest's.
var (
	freePort           = pebbletest.FreePort
	startDelegationDNS = pebbletest.StartDelegationDNS
)

func startPebble(t *testing.T, http01Port int) *pebbleServer {
	t.Helper()
	s := pebbletest.Start(t, http01Port)
	return &pebbleServer{dirURL: s.DirURL, tlsPEM: s.TLSPEM, roots: s.Roots, dns: s.DNS, dnsPort: s.DNSPort}
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

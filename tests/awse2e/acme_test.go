package awse2e

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/letsencrypt/challtestsrv"

	acmeadapter "github.com/certfn/certfn/adapters/acme"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/internal/awsmode"
	"github.com/certfn/certfn/internal/awsmode/awstest"
	"github.com/certfn/certfn/tests/pebbletest"
)

// pebbleServer is Let's Encrypt's test CA in this process, started by
// pebbletest.Start as tests/cmd/pebble sets it up: challtestsrv answers
// 127.0.0.1 for every name and the VA validates HTTP-01 on
// 127.0.0.1:<http01 port>.
type pebbleServer struct {
	dirURL string
	tlsPEM []byte
	roots  *x509.CertPool
	// dns is the challtestsrv Pebble's VA asks (DNS-01 records are set
	// there), listening on 127.0.0.1:dnsPort.
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

// http01IssuerYAML is ClusterIssuer pebble (account key secret
// pebble-account) solving HTTP-01.
func (peb *pebbleServer) http01IssuerYAML() string {
	return fmt.Sprintf(`apiVersion: cert-manager.io/v1
kind: ClusterIssuer
metadata: {name: pebble}
spec:
  acme:
    server: %s
    email: test@example.com
    caBundle: %s
    privateKeySecretRef: {name: pebble-account}
    solvers:
    - http01: {ingress: {}}
`, peb.dirURL, base64.StdEncoding.EncodeToString(peb.tlsPEM))
}

// serveHTTP01 plays the http01 function's Function URL: every request on
// addr becomes a Function URL event for rt.HandleHTTP, and its answer the
// HTTP response. It returns the number of invocations so far.
func serveHTTP01(t *testing.T, addr string, rt *awsmode.Runtime) func() int {
	t.Helper()
	var n int
	var mu = make(chan struct{}, 1)
	mu <- struct{}{}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-mu
		n++
		mu <- struct{}{}
		if os.Getenv("CERTFN_TRACE") != "" {
			fmt.Fprintf(os.Stderr, "TRACE %s http01 %s %s %s\n", time.Now().Format("05.000"), r.Method, r.URL.Path, r.UserAgent())
		}
		invokeHTTP01(rt, w, r)
	})}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return func() int { <-mu; defer func() { mu <- struct{}{} }(); return n }
}

// invokeHTTP01 answers r as the http01 function rt behind its Function
// URL (502 when the invocation fails) and returns the status code.
func invokeHTTP01(rt *awsmode.Runtime, w http.ResponseWriter, r *http.Request) int {
	ev := events.LambdaFunctionURLRequest{Version: "2.0", RawPath: r.URL.Path, Headers: map[string]string{"host": r.Host},
		RequestContext: events.LambdaFunctionURLRequestContext{HTTP: events.LambdaFunctionURLRequestContextHTTPDescription{Method: r.Method, Path: r.URL.Path}}}
	raw, _ := json.Marshal(ev)
	out, err := rt.HandleHTTP(r.Context(), raw)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return http.StatusBadGateway
	}
	resp := out.(events.LambdaFunctionURLResponse)
	for k, v := range resp.Headers {
		w.Header().Set(k, v)
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.WriteString(w, resp.Body)
	return resp.StatusCode
}

// waitReady delivers both queues, in real time (the ACME steps' short
// waits are SQS delays), until the certificate is Ready or the deadline.
func (d *deployment) waitReady(ns, name string, within time.Duration) *api.Certificate {
	d.t.Helper()
	deadline := time.Now().Add(within)
	for {
		n1, _ := d.Deliver(d.worker, d.WorkerQueueURL)
		n2, _ := d.Deliver(d.signer, d.SignerQueueURL)
		c := d.cert(ns, name)
		if api.IsTrue(c.Status.Conditions, "Ready") && !api.IsTrue(c.Status.Conditions, "Issuing") {
			return c
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("certificate %s/%s not Ready after %s: %+v", ns, name, within, c.Status.Conditions)
		}
		if n1 == 0 && n2 == 0 {
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// An ACME certificate (HTTP-01, Pebble) is issued by the worker with the
// http01 function answering Pebble's validation from the state store;
// the counts per issuance are checked against targets (≤ 15
// invocations, ≤ 40 DynamoDB writes) and logged.
func TestACMEIssuanceOnAWS(t *testing.T) {
	h01Port := freePort(t)
	h01Addr := fmt.Sprintf("127.0.0.1:%d", h01Port)
	peb := startPebble(t, h01Port)
	e := awstest.New(t)
	e.EngineClock = &awstest.WallClock{}
	acmeReqs := &acmeadapter.CountingTransport{}
	d := &deployment{Env: e, t: t, api: e.Runtime(app.API.Name), signer: e.Runtime(app.Signer.Name), sched: e.Runtime(app.Scheduler.Name),
		worker: e.Runtime(app.Worker.Name, func(o *awsmode.Options) {
			o.ACME.HTTP01SelfCheckAddr = h01Addr
			o.ACME.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { acmeReqs.Next = rt; return acmeReqs }
		})}
	h01 := e.Runtime(app.HTTP01.Name)
	h01Invocations := serveHTTP01(t, h01Addr, h01)

	d.apply(peb.http01IssuerYAML())
	certYAML := func(name string) string {
		return fmt.Sprintf(`apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: %[1]s, namespace: default}
spec:
  secretName: %[1]s-tls
  dnsNames: [%[1]s.example.com]
  privateKey: {algorithm: ECDSA, size: 256}
  issuerRef: {name: pebble, kind: ClusterIssuer}
`, name)
	}
	// A first certificate registers the account (once per issuer).
	d.apply(certYAML("first"))
	d.waitReady("default", "first", 90*time.Second)

	const n = 3
	d.ResetUsage()
	acmeBefore, h01Before := acmeReqs.Count(), h01Invocations()
	for i := range n {
		name := fmt.Sprintf("site-%d", i)
		d.apply(certYAML(name))
		d.waitReady("default", name, 90*time.Second)
		sec := d.secret("default", name+"-tls")
		l := leaf(t, sec.Data["tls.crt"])
		inter := x509.NewCertPool()
		chain := strings.SplitAfter(string(sec.Data["tls.crt"]), "-----END CERTIFICATE-----\n")
		for _, c := range chain[1:] {
			inter.AppendCertsFromPEM([]byte(c))
		}
		if _, err := l.Verify(x509.VerifyOptions{Roots: peb.roots, Intermediates: inter, DNSName: name + ".example.com"}); err != nil {
			t.Fatalf("%s does not verify against Pebble's root: %v", name, err)
		}
	}
	u := d.Usage()
	h01Calls := h01Invocations() - h01Before
	issue := perUnit(u, n+h01Calls /* api calls + http01 invocations */, n, secretsManagerPrices)
	t.Logf("issuance (ACME HTTP-01, Pebble), per certificate: %s; %.1f ACME requests; http01 invocations %.1f\n    detail for %d: %s",
		issue, float64(acmeReqs.Count()-acmeBefore)/n, float64(h01Calls)/n, n, u)
	t.Logf("cost per 1,000 ACME issuances: $%.4f (prices as in TestCostPerIssuance)", 1000*issue.cost())
	if issue.invocations > 15 || issue.dynamoWrites > 40 {
		t.Errorf("per ACME issuance: %.1f invocations (target ≤ 15), %.1f DynamoDB writes (target ≤ 40)", issue.invocations, issue.dynamoWrites)
	}
	if u.Invocations[app.Signer.Name] != 0 {
		t.Errorf("the signer was invoked %d times for ACME requests", u.Invocations[app.Signer.Name])
	}
	d.scanForKeys()
}

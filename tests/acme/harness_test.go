// Package acme runs the ACME issuer end to end in local mode against
// Pebble (Let's Encrypt's test CA) running in this test process: WFE, CA
// and VA from github.com/letsencrypt/pebble/v2, DNS from
// github.com/letsencrypt/challtestsrv. Pebble's VA reaches certfn's own
// HTTP-01 responder on a loopback port (challtestsrv answers 127.0.0.1 for
// every name). The engine runs on a fake clock that tests advance; Pebble
// runs on the wall clock.
package acme

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/letsencrypt/challtestsrv"
	"github.com/letsencrypt/pebble/v2/ca"
	"github.com/letsencrypt/pebble/v2/db"
	"github.com/letsencrypt/pebble/v2/va"
	"github.com/letsencrypt/pebble/v2/wfe"

	acmeadapter "github.com/certfn/certfn/adapters/acme"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/clock"
	"github.com/certfn/certfn/core/pki"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/internal/localmode"
)

var caller = app.Caller{Username: "local:test", Groups: []string{"system:authenticated", app.SuperuserGroup}}

// pebbleOpts configure one in-process Pebble.
type pebbleOpts struct {
	nonceReject     string // PEBBLE_WFE_NONCEREJECT (default "0")
	vaSleep         bool   // keep the VA's random sleeps (PEBBLE_VA_SLEEPTIME=2)
	requireEAB      bool
	eab             map[string]string // key id -> base64url HMAC key
	alternateRoots  int
	profiles        map[string]ca.Profile
	retryAfterAuthz int
	retryAfterOrder int
	// dnsServer, when set, is the one DNS server the VA asks (over TCP)
	// instead of challtestsrv, e.g. a BIND serving the DNS-01 records.
	dnsServer string
}

// pebble is a running Pebble.
type pebble struct {
	dirURL  string
	tlsPEM  []byte // the WFE's TLS certificate (the issuer's caBundle)
	ca      *ca.CAImpl
	db      *db.MemoryStore
	dns     *challtestsrv.ChallSrv
	dnsAddr string
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func waitTCP(t testing.TB, addr string) {
	t.Helper()
	for i := 0; i < 200; i++ {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s never came up", addr)
}

// setenv sets an environment variable for the test (Pebble reads its
// settings from the environment in va.New and wfe.New).
func setenv(t testing.TB, k, v string) {
	t.Helper()
	if tt, ok := t.(*testing.T); ok {
		tt.Setenv(k, v)
		return
	}
	old, had := os.LookupEnv(k)
	os.Setenv(k, v)
	t.Cleanup(func() {
		if had {
			os.Setenv(k, old)
		} else {
			os.Unsetenv(k)
		}
	})
}

// startPebble starts challtestsrv and Pebble; the VA dials http01Port for
// HTTP-01 validations.
func startPebble(t testing.TB, http01Port int, o pebbleOpts) *pebble {
	t.Helper()
	if o.nonceReject == "" {
		o.nonceReject = "0"
	}
	if o.vaSleep {
		setenv(t, "PEBBLE_VA_NOSLEEP", "0")
		setenv(t, "PEBBLE_VA_SLEEPTIME", "2")
	} else {
		setenv(t, "PEBBLE_VA_NOSLEEP", "1")
	}
	setenv(t, "PEBBLE_WFE_NONCEREJECT", o.nonceReject)
	setenv(t, "PEBBLE_AUTHZREUSE", "0")
	logger := log.New(io.Discard, "pebble ", log.LstdFlags)
	if os.Getenv("PEBBLE_LOG") != "" {
		logger = log.New(os.Stderr, "pebble ", log.LstdFlags)
	}
	dnsAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	dnsSrv, err := challtestsrv.New(challtestsrv.Config{DNSAddrs: []string{dnsAddr}, Log: log.New(io.Discard, "", 0)})
	if err != nil {
		t.Fatal(err)
	}
	dnsSrv.SetDefaultDNSIPv4("127.0.0.1")
	dnsSrv.SetDefaultDNSIPv6("") // the VA would try ::1 first
	dnsSrv.Run()
	t.Cleanup(dnsSrv.Shutdown)
	waitTCP(t, dnsAddr)

	store := db.NewMemoryStore()
	for kid, key := range o.eab {
		if err := store.AddExternalAccountKeyByID(kid, key); err != nil {
			t.Fatal(err)
		}
	}
	profiles := o.profiles
	if profiles == nil {
		profiles = map[string]ca.Profile{"default": {Description: "default"}}
	}
	cai := ca.New(logger, store, "", "ecdsa", o.alternateRoots, 1, profiles)
	vaDNS := dnsAddr
	if o.dnsServer != "" {
		vaDNS = o.dnsServer
	}
	vai := va.New(logger, http01Port, 0, false, vaDNS, store)
	w := wfe.New(logger, store, vai, cai, []string{"pebble.letsencrypt.org"}, false, o.requireEAB, o.retryAfterAuthz, o.retryAfterOrder)
	ts := httptest.NewTLSServer(w.Handler())
	t.Cleanup(ts.Close)
	return &pebble{
		dirURL: ts.URL + wfe.DirectoryPath,
		tlsPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw}),
		ca:     cai, db: store, dns: dnsSrv, dnsAddr: dnsAddr,
	}
}

// roots returns Pebble's root certificates.
func (p *pebble) roots() *x509.CertPool {
	pool := x509.NewCertPool()
	for i := 0; i < p.ca.GetNumberOfRootCerts(); i++ {
		pool.AddCert(p.ca.GetRootCert(i).Cert)
	}
	return pool
}

// timedRequest is one ACME HTTP request with the fake-clock time it was made.
type timedRequest struct {
	at   time.Time
	line string
}

// recorder wraps the ACME transport: it counts and timestamps requests and
// can inject failures.
type recorder struct {
	clk  ports.Clock
	next http.RoundTripper

	mu   sync.Mutex
	reqs []timedRequest
	// failAfter, when set, is asked after each successful round trip; true
	// turns the response into a network error (the request reached the
	// server, the caller never learns the answer: a crash after an ACME call).
	failAfter func(r *http.Request) bool
	// answer, when set, is asked before each round trip; handled means
	// the server's answer is replaced by resp, err (a misbehaving server:
	// the request never reaches Pebble).
	answer func(r *http.Request) (resp *http.Response, err error, handled bool)
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, timedRequest{at: r.clk.Now(), line: req.Method + " " + req.URL.Path})
	fail, answer := r.failAfter, r.answer
	r.mu.Unlock()
	if answer != nil {
		if resp, err, ok := answer(req); ok {
			return resp, err
		}
	}
	resp, err := r.next.RoundTrip(req)
	if err == nil && fail != nil && fail(req) {
		resp.Body.Close()
		return nil, errors.New("injected: connection lost after the request was sent")
	}
	return resp, err
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.reqs)
}

func (r *recorder) since(n int) []timedRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]timedRequest(nil), r.reqs[n:]...)
}

// env is certfn in local mode wired to a Pebble.
type env struct {
	t    testing.TB
	ctx  context.Context
	clk  *clock.Fake
	rt   *localmode.Runtime
	peb  *pebble
	rec  *recorder
	cnt  *acmeadapter.CountingTransport // every ACME HTTP round trip
	h01  string                         // the HTTP-01 responder's address
	opts envOpts
	lo   localmode.Options
	mu   sync.Mutex // guards rt for the HTTP-01 responder
}

type envOpts struct {
	pebble pebbleOpts
	// wrongResponder serves a wrong key authorization on the VA's port
	// instead of certfn's responder (self-check disabled).
	wrongResponder bool
	local          func(*localmode.Options)
	// realClock runs the engine on the wall clock (benchmarks with Serve).
	realClock bool
}

// quiet discards the runtime's log unless CERTFN_TEST_LOG is set.
func quiet() *slog.Logger {
	if os.Getenv("CERTFN_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// newEnv starts certfn's HTTP-01 responder on a loopback port, Pebble with
// its VA pointed at that port, and a local-mode runtime.
func newEnv(t testing.TB, o envOpts) *env {
	t.Helper()
	clk := clock.NewFake(time.Now().UTC().Truncate(time.Second))
	e := &env{t: t, ctx: context.Background(), clk: clk, opts: o}
	e.rec = &recorder{clk: clk}
	if o.realClock {
		e.rec.clk = clock.Real{}
	}
	port := freePort(t)
	e.h01 = fmt.Sprintf("127.0.0.1:%d", port)
	lo := localmode.Options{DataDir: t.TempDir(), Clock: clk, AutoApprove: []string{"*"}, Logger: quiet()}
	// What an operator sets for namespaced ACME Issuers (some tests use
	// them): which ACME servers they may use (any, here), and that their
	// connections may reach loopback, where Pebble, the DNS test servers
	// and acme-dns run.
	lo.ACME.ServerAllow = []string{"*"}
	lo.ACME.AllowPrivateNetworks = []string{"127.0.0.0/8", "::1"}
	if o.realClock {
		lo.Clock = clock.Real{}
	}
	e.cnt = &acmeadapter.CountingTransport{}
	lo.ACME.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		e.cnt.Next = rt
		e.rec.next = e.cnt
		return e.rec
	}
	lo.ACME.HTTP01SelfCheckAddr = e.h01
	lo.ACME.DisableHTTP01SelfCheck = o.wrongResponder
	if o.local != nil {
		o.local(&lo)
	}
	e.lo = lo
	rt, err := localmode.Open(lo)
	if err != nil {
		t.Fatalf("open runtime: %v", err)
	}
	t.Cleanup(func() { _ = e.rt.Close() })
	e.rt = rt
	if o.wrongResponder {
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "not-the-key-authorization")
		})}
		l, err := net.Listen("tcp", e.h01)
		if err != nil {
			t.Fatal(err)
		}
		go srv.Serve(l)
		t.Cleanup(func() { srv.Close() })
	} else {
		// A stable responder that always asks the current runtime, so a
		// simulated restart of the worker leaves HTTP-01 answering (in a
		// cloud deployment the http01 function is separate from the worker).
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			e.mu.Lock()
			h := e.rt.App.HTTP01
			e.mu.Unlock()
			h.ServeHTTP(w, r)
		})}
		l, err := net.Listen("tcp", e.h01)
		if err != nil {
			t.Fatal(err)
		}
		go srv.Serve(l)
		t.Cleanup(func() { srv.Close() })
	}
	e.peb = startPebble(t, port, o.pebble)
	return e
}

// restart simulates a crash and restart of the worker: the runtime is
// closed (its in-memory queue is lost) and opened again on the same data
// directory.
func (e *env) restart() {
	e.t.Helper()
	_ = e.rt.Close()
	rt, err := localmode.Open(e.lo)
	if err != nil {
		e.t.Fatalf("reopen runtime: %v", err)
	}
	e.mu.Lock()
	e.rt = rt
	e.mu.Unlock()
}

// issuerYAML is a ClusterIssuer "pebble" for this Pebble with extra
// spec.acme lines (indented by 4).
func (e *env) issuerYAML(extra string) string {
	return fmt.Sprintf(`apiVersion: cert-manager.io/v1
kind: ClusterIssuer
metadata: {name: pebble}
spec:
  acme:
    server: %s
    email: test@example.com
    caBundle: %s
    privateKeySecretRef: {name: pebble-account}
%s`, e.peb.dirURL, base64.StdEncoding.EncodeToString(e.peb.tlsPEM), extra)
}

const http01Solvers = `    solvers:
    - http01: {ingress: {}}
`

func certYAML(name string, names []string, extra string) string {
	return fmt.Sprintf(`apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: %s, namespace: default%s}
spec:
  secretName: %s-tls
  dnsNames: [%s]
  privateKey: {algorithm: ECDSA, size: 256}
  issuerRef: {name: pebble, kind: ClusterIssuer}
`, name, "", name, strings.Join(names, ", ")) + extra
}

func (e *env) apply(manifest string) {
	e.t.Helper()
	objs, err := api.Decode([]byte(manifest))
	if err != nil {
		e.t.Fatalf("decode: %v\n%s", err, manifest)
	}
	for _, o := range objs {
		if _, err := e.rt.App.Service.Apply(e.ctx, caller, []api.Object{o}); err != nil {
			e.t.Fatalf("apply %s: %v", api.KeyOf(o), err)
		}
	}
}

// run processes everything visible now.
func (e *env) run() {
	e.t.Helper()
	if _, err := e.rt.RunUntilIdle(e.ctx, 4); err != nil {
		e.t.Fatalf("run: %v", err)
	}
}

// until runs the queue, advancing the fake clock by step between rounds
// (and giving Pebble's asynchronous VA and CA a moment of real time),
// until done returns true or rounds are exhausted.
func (e *env) until(rounds int, step time.Duration, done func() bool) bool {
	e.t.Helper()
	for i := 0; i < rounds; i++ {
		e.run()
		if done() {
			return true
		}
		time.Sleep(5 * time.Millisecond)
		e.clk.Advance(step)
	}
	return false
}

func (e *env) cert(name string) *api.Certificate {
	e.t.Helper()
	o, err := e.rt.Repo.Get(e.ctx, api.Key{Kind: api.KindCertificate, Namespace: "default", Name: name})
	if err != nil {
		e.t.Fatalf("get certificate: %v", err)
	}
	return o.(*api.Certificate)
}

func (e *env) ready(name string) bool {
	c := e.cert(name)
	return api.IsTrue(c.Status.Conditions, "Ready") && !api.IsTrue(c.Status.Conditions, "Issuing")
}

// issue waits (in fake time) until the Certificate is Ready.
func (e *env) issue(name string) *api.Certificate {
	e.t.Helper()
	if !e.until(400, 2*time.Second, func() bool { return e.ready(name) }) {
		c := e.cert(name)
		e.t.Fatalf("certificate %s not Ready: %+v\nissuers: %s\nrequests: %s\norders: %s\nchallenges: %s", name, c.Status.Conditions,
			e.describe(api.KindClusterIssuer), e.describe(api.KindCertificateRequest), e.describe(api.KindOrder), e.describe(api.KindChallenge))
	}
	return e.cert(name)
}

func (e *env) orders() []*api.Order {
	objs, err := e.rt.Repo.List(e.ctx, api.KindOrder, "")
	if err != nil {
		e.t.Fatal(err)
	}
	out := make([]*api.Order, len(objs))
	for i, o := range objs {
		out[i] = o.(*api.Order)
	}
	return out
}

func (e *env) challenges() []*api.Challenge {
	objs, err := e.rt.Repo.List(e.ctx, api.KindChallenge, "")
	if err != nil {
		e.t.Fatal(err)
	}
	out := make([]*api.Challenge, len(objs))
	for i, o := range objs {
		out[i] = o.(*api.Challenge)
	}
	return out
}

func (e *env) describe(kind string) string {
	objs, _ := e.rt.Repo.List(e.ctx, kind, "")
	var b strings.Builder
	for _, o := range objs {
		switch v := o.(type) {
		case *api.Order:
			fmt.Fprintf(&b, "\n  %s state=%q reason=%q url=%s", v.Name, v.Status.State, v.Status.Reason, v.Status.URL)
		case *api.CertificateRequest:
			fmt.Fprintf(&b, "\n  %s conditions=%+v", v.Name, v.Status.Conditions)
		case api.GenericIssuer:
			if c := api.FindCondition(v.GetStatus().Conditions, "Ready"); c != nil {
				fmt.Fprintf(&b, "\n  %s Ready=%s %s: %s", v.GetObjectMeta().Name, c.Status, c.Reason, c.Message)
			}
		case *api.Challenge:
			fmt.Fprintf(&b, "\n  %s %s %s processing=%t presented=%t accepted=%t state=%q reason=%q", v.Name, v.Spec.Type, v.Spec.DNSName,
				v.Status.Processing, v.Status.Presented, v.Status.Accepted, v.Status.State, v.Status.Reason)
		}
	}
	// The Warning Events of that kind's objects say why a reconcile failed.
	evs, _ := e.rt.Repo.List(e.ctx, api.KindEvent, "")
	for _, o := range evs {
		if ev := o.(*api.Event); ev.InvolvedObject.Kind == kind {
			fmt.Fprintf(&b, "\n  event %s: %s x%d: %s", ev.InvolvedObject.Name, ev.Reason, ev.Count, ev.Message)
		}
	}
	return b.String()
}

// verify checks the secret's chain against Pebble's roots for names.
func (e *env) verify(secretName string, names ...string) *x509.Certificate {
	e.t.Helper()
	sec, err := e.rt.Secrets.Get(e.ctx, "default", secretName)
	if err != nil {
		e.t.Fatalf("secret %s: %v", secretName, err)
	}
	chain, err := pki.ParseChainPEM(sec.Data["tls.crt"])
	if err != nil {
		e.t.Fatalf("tls.crt: %v", err)
	}
	inter := x509.NewCertPool()
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	for _, n := range names {
		if _, err := chain[0].Verify(x509.VerifyOptions{DNSName: n, Roots: e.peb.roots(), Intermediates: inter}); err != nil {
			e.t.Fatalf("verify %s for %s: %v", secretName, n, err)
		}
	}
	return chain[0]
}

func parseChain(t testing.TB, b []byte) []*x509.Certificate {
	t.Helper()
	c, err := pki.ParseChainPEM(b)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

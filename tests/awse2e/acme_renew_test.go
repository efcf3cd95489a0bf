package awse2e

import (
	"bytes"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	acmeadapter "github.com/certfn/certfn/adapters/acme"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/pki"
	"github.com/certfn/certfn/internal/awsmode"
	"github.com/certfn/certfn/internal/awsmode/awstest"
)

// pebbleIssuerYAML is an ACME ClusterIssuer on peb with the given solvers
// (YAML list items, indented for spec.acme.solvers) and extra spec.acme
// fields.
func pebbleIssuerYAML(name string, peb *pebbleServer, extra, solvers string) string {
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

// verifyPebble checks that tls.crt's leaf verifies against Pebble's root
// for dnsName (with the chain's intermediates), and returns the leaf.
func verifyPebble(t *testing.T, peb *pebbleServer, tlsCrt []byte, dnsName string) *x509.Certificate {
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

// An ACME certificate (HTTP-01, Pebble) issued by the worker with the
// http01 function answering the validation is renewed by the scheduler's
// sweep once the functions' clock passes status.renewalTime (the earlier
// of 2/3 of its lifetime and the ARI window's selected time), and not a
// minute before; the renewal is a new certificate from Pebble, the
// previous one stays in Secrets Manager as AWSPREVIOUS.
//
// Pebble signs in real time while the functions' clock jumps ahead: with
// Pebble's own 90-day validity the renewed certificate would look 60 days
// old at once and be renewed again. The issuer therefore sets
// enableDurationFeature (cert-manager's field: the Order asks for notAfter
// = now + spec.duration by the functions' clock), which Pebble honours, so
// the renewed certificate's renewal time lies ahead of the moved clock.
func TestACMERenewalOnAWS(t *testing.T) {
	h01Port := freePort(t)
	h01Addr := fmt.Sprintf("127.0.0.1:%d", h01Port)
	peb := startPebble(t, h01Port)
	e := awstest.New(t)
	clk := &awstest.WallClock{}
	e.EngineClock = clk
	acmeReqs := &acmeadapter.CountingTransport{}
	d := &deployment{Env: e, t: t, api: e.Runtime(app.API.Name), signer: e.Runtime(app.Signer.Name), sched: e.Runtime(app.Scheduler.Name),
		worker: e.Runtime(app.Worker.Name, func(o *awsmode.Options) {
			o.ACME.HTTP01SelfCheckAddr = h01Addr
			o.ACME.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { acmeReqs.Next = rt; return acmeReqs }
		})}
	serveHTTP01(t, h01Addr, e.Runtime(app.HTTP01.Name))

	d.apply(pebbleIssuerYAML("pebble", peb, "    enableDurationFeature: true\n", "    - http01: {ingress: {}}\n"))
	d.apply(`apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: renew, namespace: default}
spec:
  secretName: renew-tls
  dnsNames: [renew.example.com]
  duration: 2160h
  privateKey: {algorithm: ECDSA, size: 256}
  issuerRef: {name: pebble, kind: ClusterIssuer}
`)
	d.waitReady("default", "renew", 90*time.Second)
	first := verifyPebble(t, peb, d.secret("default", "renew-tls").Data["tls.crt"], "renew.example.com")

	// The renewal time settles once the Order's ARI window is copied to
	// the Certificate: the earlier of 2/3 of the lifetime and the window's
	// selected time. An Order that became valid before the Certificate
	// recorded the revision waits a minute (its nextRunAt) before it
	// copies: the clock moves on by two and the sweep brings it back.
	own := pki.RenewalTime(first.NotBefore, first.NotAfter, nil, nil)
	clk.Advance(2 * time.Minute)
	d.sweep()
	var c *api.Certificate
	d.deliverUntil("renewal information copied to the Certificate and its renewal time", 60*time.Second, func() bool {
		c = d.cert("default", "renew")
		ri := c.Status.RenewalInfo
		if ri == nil || ri.SelectedTime == nil || c.Status.RenewalTime == nil {
			return false
		}
		want := own
		if ri.SelectedTime.Before(own) {
			want = ri.SelectedTime.Time
		}
		return c.Status.RenewalTime.Equal(want)
	})
	renewAt := c.Status.RenewalTime.Time
	if renewAt.Before(first.NotBefore.Add(50*24*time.Hour)) || renewAt.After(first.NotAfter) {
		t.Fatalf("renewalTime %s: not within the certificate's last third (%s..%s)", renewAt, first.NotBefore, first.NotAfter)
	}
	acmeBefore := acmeReqs.Count()

	// A minute before the renewal time the sweep renews nothing.
	clk.Advance(renewAt.Sub(clk.Now()) - time.Minute)
	d.sweep()
	if c := d.cert("default", "renew"); revision(c) != 1 || api.IsTrue(c.Status.Conditions, "Issuing") {
		t.Fatalf("renewal started before the renewal time: revision %d, conditions %+v", revision(c), c.Status.Conditions)
	}

	// Past it, the sweep finds the Certificate due and the worker renews.
	clk.Advance(2 * time.Minute)
	if res := d.sweep(); res.Due == 0 {
		t.Fatal("the sweep found nothing due after the renewal time")
	}
	d.deliverUntil("revision 2 Ready", 90*time.Second, func() bool {
		c = d.cert("default", "renew")
		return revision(c) == 2 && api.IsTrue(c.Status.Conditions, "Ready") && !api.IsTrue(c.Status.Conditions, "Issuing")
	})
	t.Logf("renewal: %d ACME requests; the first certificate's renewal time %s; the second's %s (clock now %s)",
		acmeReqs.Count()-acmeBefore, renewAt.Format(time.RFC3339), c.Status.RenewalTime.Format(time.RFC3339), clk.Now().Format(time.RFC3339))

	sec := d.secret("default", "renew-tls")
	second := verifyPebble(t, peb, sec.Data["tls.crt"], "renew.example.com")
	if bytes.Equal(second.Raw, first.Raw) || second.SerialNumber.Cmp(first.SerialNumber) == 0 {
		t.Fatal("the secret still holds the first certificate")
	}
	if !second.NotBefore.After(first.NotBefore) {
		t.Fatalf("renewed certificate's notBefore %s is not after the first's %s", second.NotBefore, first.NotBefore)
	}
	// The renewed certificate is not due again at once (no renewal loop).
	if rt := c.Status.RenewalTime; rt == nil || !rt.After(clk.Now()) {
		t.Fatalf("renewed certificate's renewalTime %v is not after the clock %s", rt, clk.Now())
	}
	d.requirePrevious("default", "renew-tls", first)
	if n := d.VisibleMessages(d.WorkerDLQURL) + d.VisibleMessages(d.SignerDLQURL); n != 0 {
		t.Errorf("%d messages in the dead-letter queues", n)
	}
	d.scanForKeys()
}

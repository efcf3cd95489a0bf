// Package cloudrun runs certfn's Google Cloud deployment as it runs on
// Cloud Run, on this machine: the binary `make gcp-image` packs (built by
// the Makefile's own command), one process per Cloud Run service of
// infra/terraform/gcp, each with the environment an offline `terraform
// plan` of the module gives it (the real hashicorp/google provider of the
// filesystem mirror), and
//
//   - the state in Google's official Firestore emulator and the queues in
//     Google's official Pub/Sub emulator, with the plan's topics, push
//     subscriptions (retry and dead-letter policies, acknowledgement
//     deadlines) and dead-letter subscriptions: the emulator pushes each
//     message to the service, as Pub/Sub pushes to Cloud Run;
//   - the secrets in the HAND-WRITTEN Secret Manager TEST DOUBLE
//     (adapters/gcp/secretmanager/gsmtest) and the short delays in the
//     HAND-WRITTEN Cloud Tasks TEST DOUBLE (adapters/gcp/pubsubq/taskstest),
//     which publishes due tasks to the Pub/Sub emulator's REST API as the
//     plan's queue forces them to pubsub.googleapis.com: no emulator of
//     either exists. The binary reaches them with its own client libraries
//     over TLS and gRPC through a TEST DOUBLE of Google's front
//     (googleFront: HTTPS_PROXY, SSL_CERT_FILE), with access tokens from a
//     TEST DOUBLE of each service's metadata server (GCE_METADATA_HOST);
//   - a TEST DOUBLE of Cloud Run's front per service (cloudRunFront) that
//     admits callers by the plan's roles/run.invoker members and Google ID
//     tokens signed by googleFront, whose keys the api service fetches as
//     it fetches Google's;
//   - Cloud Scheduler's job played by the test: the plan's method,
//     headers and body with an OIDC token of its service account;
//   - ACME from Let's Encrypt's Pebble in this process (tests/pebbletest),
//     validating HTTP-01 against the http01 service's front. The worker's
//     own HTTP-01 self-check is replaced by the solver's
//     waitInsteadOfSelfCheck: the self-check fetches port 80 of the
//     certificate's name, which no test may bind (the in-process suite,
//     tests/gcpe2e, runs it against a loopback port).
//
// The flows: a CA issuance, an ACME HTTP-01 issuance and a renewal at the
// certificate's renewal time (real time: a 10-minute certificate renews
// after 5 minutes). `make test` runs the first two; CERTFN_TEST_CLOUD=1 (`make test-cloud`)
// (`make test-cloud`) runs all three.
package cloudrun

import (
	"bytes"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app/apptest"
	"github.com/certfn/certfn/core/pki"
	"github.com/certfn/certfn/tests/pebbletest"
)

// fullEnv names the variable that runs every flow (`make test-cloud`).
const fullEnv = "CERTFN_TEST_CLOUD"

func full() bool { return os.Getenv(fullEnv) == "1" }

func TestCloudRun(t *testing.T) {
	start := time.Now()
	d := deploy(t, startBuild(t))
	// Pebble lives as long as the services: a valid Order keeps fetching
	// its certificate's renewal information (ARI) after the issuance.
	peb := pebbletest.Start(t, d.fronts["http01"].Port)
	t.Logf("deployment up: %s", time.Since(start).Round(100*time.Millisecond))

	t.Run("Authentication", func(t *testing.T) { d.authentication(t) })
	t.Run("CA", func(t *testing.T) { d.caFlow(t) })
	t.Run("ACMEHTTP01", func(t *testing.T) { d.acmeFlow(t, peb) })
	if full() {
		t.Run("Renewal", func(t *testing.T) { d.renewalFlow(t) })
	} else {
		t.Logf("Renewal runs with %s=1 (make test-cloud): it waits 5 minutes of real time", fullEnv)
	}
	d.requireNothingDue(t)
	d.requireIdentities(t)
	t.Logf("all flows: %s", time.Since(start).Round(100*time.Millisecond))
}

// call sends an api request through the api's front with the invoker's
// ID token.
func (d *deployment) call(t *testing.T, method, path, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(d.ctx, method, d.fronts["api"].URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+d.g.idToken(d.plan.APIUser, d.plan.URL("api")))
	if body != "" {
		req.Header.Set("Content-Type", "application/yaml")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func (d *deployment) apply(t *testing.T, manifests string) {
	t.Helper()
	if code, b := d.call(t, "POST", "/v1/apply", manifests); code != http.StatusOK {
		t.Fatalf("apply: %d %s", code, b)
	}
}

// cert reads ns/name through the api.
func (d *deployment) cert(t *testing.T, ns, name string) *api.Certificate {
	t.Helper()
	code, b := d.call(t, "GET", "/v1/namespaces/"+ns+"/certificates/"+name, "")
	if code != http.StatusOK {
		t.Fatalf("get certificate %s/%s: %d %s", ns, name, code, b)
	}
	var c api.Certificate
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return &c
}

func ready(c *api.Certificate) bool {
	return api.IsTrue(c.Status.Conditions, api.CertificateConditionReady) && !api.IsTrue(c.Status.Conditions, api.CertificateConditionIssuing)
}

func revision(c *api.Certificate) int {
	if c.Status.Revision == nil {
		return 0
	}
	return *c.Status.Revision
}

// waitReady polls the api until ns/name is Ready at revision rev.
func (d *deployment) waitReady(t *testing.T, ns, name string, rev int, within time.Duration) *api.Certificate {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		c := d.cert(t, ns, name)
		if ready(c) && revision(c) == rev {
			return c
		}
		if time.Now().After(deadline) {
			_, status := d.call(t, "GET", "/v1/namespaces/"+ns+"/certificates/"+name+"/status", "")
			t.Fatalf("%s/%s not Ready at revision %d within %s: revision %d, %+v\nstatus: %s", ns, name, rev, within, revision(c), c.Status.Conditions, status)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// leaf reads ns/secret from Secret Manager and returns its leaf and the
// rest of its chain.
func (d *deployment) leaf(t *testing.T, ns, secret string) (*x509.Certificate, *x509.CertPool) {
	t.Helper()
	s, err := d.secrets.Get(d.ctx, ns, secret)
	if err != nil {
		t.Fatalf("secret %s/%s: %v", ns, secret, err)
	}
	chain, err := pki.ParseChainPEM(s.Data["tls.crt"])
	if err != nil {
		t.Fatalf("%s/%s tls.crt: %v", ns, secret, err)
	}
	if len(s.Data["tls.key"]) == 0 {
		t.Fatalf("%s/%s holds no tls.key", ns, secret)
	}
	inter := x509.NewCertPool()
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	return chain[0], inter
}

// authentication: the fronts refuse what Cloud Run's IAM refuses, and the
// api service itself checks the ID token (signature by the keys it
// fetched from the Google front, audience) when its front is bypassed.
func (d *deployment) authentication(t *testing.T) {
	send := func(url, token string) int {
		t.Helper()
		req, err := http.NewRequestWithContext(d.ctx, "GET", url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	apiURL, user := d.plan.URL("api"), d.plan.APIUser
	cases := []struct {
		name, url, token string
		want             int
	}{
		{"worker front, no token", d.fronts["worker"].URL + "/push", "", http.StatusForbidden},
		{"worker front, the api invoker's token", d.fronts["worker"].URL + "/push", d.g.idToken(user, d.plan.URL("worker")), http.StatusForbidden},
		{"api front, not an invoker", d.fronts["api"].URL + "/v1/clusterissuers", d.g.idToken("stranger@example.com", apiURL), http.StatusForbidden},
		{"api front, token for the worker", d.fronts["api"].URL + "/v1/clusterissuers", d.g.idToken(user, d.plan.URL("worker")), http.StatusForbidden},
		{"api front, the invoker", d.fronts["api"].URL + "/v1/clusterissuers", d.g.idToken(user, apiURL), http.StatusOK},
		{"api process, another audience", fmt.Sprintf("http://127.0.0.1:%d/v1/clusterissuers", d.procs["api"].port), d.g.idToken(user, "https://elsewhere.example"), http.StatusUnauthorized},
		{"api process, unsigned", fmt.Sprintf("http://127.0.0.1:%d/v1/clusterissuers", d.procs["api"].port), unsigned(d.g.idToken(user, apiURL)), http.StatusUnauthorized},
		{"api process, the invoker", fmt.Sprintf("http://127.0.0.1:%d/v1/clusterissuers", d.procs["api"].port), d.g.idToken(user, apiURL), http.StatusOK},
	}
	for _, c := range cases {
		if got := send(c.url, c.token); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
	if den := d.fronts["worker"].takeDenied(); len(den) != 2 {
		t.Errorf("the worker front refused %q, want the two requests above", den)
	}
	if den := d.fronts["api"].takeDenied(); len(den) != 2 {
		t.Errorf("the api front refused %q, want the two requests above", den)
	}
}

// unsigned is tok with its signature replaced.
func unsigned(tok string) string {
	i := strings.LastIndex(tok, ".")
	return tok[:i+1] + base64.RawURLEncoding.EncodeToString([]byte("not a signature"))
}

// caIssuers: a self-signed root issued by certfn (its key pair the
// worker's to write: worker_manages_ca_certificates) and a CA
// ClusterIssuer on it, whose key the signer alone reads.
const caIssuers = apptest.SelfSignedYAML + `---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: root, namespace: cert-manager}
spec:
  isCA: true
  commonName: certfn cloudrun root
  secretName: root-ca
  duration: 87600h
  privateKey: {algorithm: ECDSA, size: 256}
  issuerRef: {name: selfsigned, kind: ClusterIssuer}
---
apiVersion: cert-manager.io/v1
kind: ClusterIssuer
metadata: {name: ca}
spec: {ca: {secretName: root-ca}}
`

// leafYAML is default/<name> for <name>.example.com from ClusterIssuer
// issuer, with extra spec lines.
func leafYAML(name, issuer, extra string) string {
	return fmt.Sprintf(`apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: %[1]s, namespace: default}
spec:
  secretName: %[1]s-tls
  dnsNames: [%[1]s.example.com]
  privateKey: {algorithm: ECDSA, size: 256, rotationPolicy: Always}
  issuerRef: {name: %[2]s, kind: ClusterIssuer}
%[3]s`, name, issuer, extra)
}

// caReady issues the CA once per deployment and returns its certificate.
func (d *deployment) caReady(t *testing.T) *x509.Certificate {
	t.Helper()
	d.apply(t, caIssuers)
	d.waitReady(t, "cert-manager", "root", 1, 60*time.Second)
	root, _ := d.leaf(t, "cert-manager", "root-ca")
	if !root.IsCA {
		t.Fatal("root-ca is not a CA certificate")
	}
	return root
}

// caFlow: a leaf from the CA ClusterIssuer, signed by the signer service
// (the worker hands the approved request off on the signer topic).
func (d *deployment) caFlow(t *testing.T) {
	start := time.Now()
	root := d.caReady(t)
	d.apply(t, leafYAML("web", "ca", ""))
	d.waitReady(t, "default", "web", 1, 60*time.Second)
	l, inter := d.leaf(t, "default", "web-tls")
	roots := x509.NewCertPool()
	roots.AddCert(root)
	if _, err := l.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, DNSName: "web.example.com"}); err != nil {
		t.Fatalf("web-tls does not verify against the root: %v", err)
	}
	if n := d.fronts["signer"].counts()["POST /push 204"]; n == 0 {
		t.Errorf("the signer service was never pushed to: %v", d.fronts["signer"].counts())
	}
	t.Logf("CA flow: %s", time.Since(start).Round(100*time.Millisecond))
}

// acmeFlow: a certificate from Pebble over HTTP-01, the http01 service
// answering Pebble's validation behind its public front.
func (d *deployment) acmeFlow(t *testing.T, peb *pebbletest.Server) {
	start := time.Now()
	d.apply(t, peb.ClusterIssuerYAML("pebble", "", "    - http01: {ingress: {}}\n      waitInsteadOfSelfCheck: 1s\n"))
	d.apply(t, leafYAML("acme", "pebble", ""))
	d.waitReady(t, "default", "acme", 1, 90*time.Second)
	l, inter := d.leaf(t, "default", "acme-tls")
	if _, err := l.Verify(x509.VerifyOptions{Roots: peb.Roots, Intermediates: inter, DNSName: "acme.example.com"}); err != nil {
		t.Fatalf("acme-tls does not verify against Pebble's root: %v", err)
	}
	served := 0
	for k, n := range d.fronts["http01"].counts() {
		if strings.HasPrefix(k, "GET /.well-known/acme-challenge/") && strings.HasSuffix(k, " 200") {
			served += n
		}
	}
	if served == 0 {
		t.Errorf("the http01 service never answered a token: %v", d.fronts["http01"].counts())
	}
	t.Logf("ACME HTTP-01 flow: %s", time.Since(start).Round(100*time.Millisecond))
}

// renewalFlow: a 10-minute certificate (certfn's shortest) with
// renewBefore 5m renews at its renewal time, in real time: revision 2, a
// new key and certificate, the renewal found by the services themselves
// (the Cloud Tasks task the worker leaves for the renewal time, or the
// scheduler's sweep; the test runs Cloud Scheduler's job every minute).
func (d *deployment) renewalFlow(t *testing.T) {
	start := time.Now()
	d.caReady(t)
	d.apply(t, leafYAML("short", "ca", "  duration: 10m\n  renewBefore: 5m\n"))
	c := d.waitReady(t, "default", "short", 1, 60*time.Second)
	first, _ := d.leaf(t, "default", "short-tls")
	at := c.Status.RenewalTime.Time
	if want := first.NotBefore.Add(5 * time.Minute); at.Sub(want).Abs() > time.Minute {
		t.Fatalf("renewalTime %s, want notBefore + 5m = %s", at, want)
	}
	// Cloud Scheduler's job on its schedule (every minute) until renewed.
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			next := time.Now().Truncate(time.Minute).Add(time.Minute)
			select {
			case <-stop:
				return
			case <-time.After(time.Until(next)):
				if code, b := d.runJob(); code != http.StatusOK {
					t.Errorf("Cloud Scheduler's call: %d %s", code, b)
				}
			}
		}
	}()
	defer func() { close(stop); <-done }()
	for time.Now().Before(at.Add(-10 * time.Second)) {
		if c := d.cert(t, "default", "short"); revision(c) != 1 {
			t.Fatalf("renewed before its renewal time %s: revision %d", at, revision(c))
		}
		time.Sleep(10 * time.Second)
	}
	c = d.waitReady(t, "default", "short", 2, time.Until(at)+2*time.Minute)
	second, _ := d.leaf(t, "default", "short-tls")
	if bytes.Equal(second.Raw, first.Raw) || second.NotBefore.Before(at.Add(-time.Minute)) {
		t.Fatalf("short-tls holds the first certificate (notBefore %s)", second.NotBefore)
	}
	if bytes.Equal(second.RawSubjectPublicKeyInfo, first.RawSubjectPublicKeyInfo) {
		t.Error("the key was not rotated (rotationPolicy: Always)")
	}
	if !c.Status.RenewalTime.After(time.Now()) {
		t.Errorf("the renewed certificate's renewalTime %s is not ahead", c.Status.RenewalTime)
	}
	t.Logf("renewal flow: %s (renewed %s after its renewal time)", time.Since(start).Round(time.Second),
		time.Since(at).Round(time.Second))
}

// requireNothingDue runs Cloud Scheduler's job: once the flows settle, its
// sweep finds no due key (every wait was delivered by a Cloud Task or a
// push).
func (d *deployment) requireNothingDue(t *testing.T) {
	t.Helper()
	code, b := d.runJob()
	var res struct {
		Due  int `json:"due"`
		Sent int `json:"sent"`
	}
	if code != http.StatusOK || json.Unmarshal(b, &res) != nil {
		t.Fatalf("Cloud Scheduler's call: %d %s", code, b)
	}
	if res.Due != 0 {
		t.Errorf("the sweep found %d due keys after the flows settled", res.Due)
	}
}

// requireIdentities checks who called what behind the Google front: the
// api, scheduler and http01 services never call Secret Manager or Cloud
// Tasks (infra/terraform/gcp grants them neither); the signer read the CA
// key; every call carried a service account's token.
func (d *deployment) requireIdentities(t *testing.T) {
	t.Helper()
	for _, fn := range []string{"api", "scheduler", "http01"} {
		if c := d.callsBy(d.plan.Services[fn].ServiceAccount); len(c) > 0 {
			t.Errorf("the %s service called Google APIs it has no grant for: %v", fn, c)
		}
	}
	if c := d.callsBy(""); len(c) > 0 {
		t.Errorf("calls without a service account's token: %v", c)
	}
	signer := d.callsBy(d.plan.Services["signer"].ServiceAccount)
	if signer["/google.cloud.secretmanager.v1.SecretManagerService/AccessSecretVersion"] == 0 {
		t.Errorf("the signer never read a secret: %v", signer)
	}
	worker := d.callsBy(d.plan.Services["worker"].ServiceAccount)
	if worker["/google.cloud.secretmanager.v1.SecretManagerService/AddSecretVersion"] == 0 {
		t.Errorf("the worker never wrote a secret version: %v", worker)
	}
	for _, fn := range functions {
		t.Logf("%s front: %v", fn, d.fronts[fn].counts())
	}
	t.Logf("Google API calls: worker %v; signer %v; Cloud Tasks tasks created %d", worker, signer, d.tasks.Creates())
}

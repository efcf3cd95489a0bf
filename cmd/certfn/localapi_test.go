package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/adapters/httpapi/apitest"
	ct "github.com/certfn/certfn/core/certificates/certtest"
)

// pkiFiles writes a CA, a server certificate for 127.0.0.1 and client
// certificates (CN = user, O = groups) as PEM files in dir.
type pkiFiles struct {
	dir    string
	ca     *x509.Certificate
	caKey  *ecdsa.PrivateKey
	serial int64
}

func newPKIFiles(t *testing.T) *pkiFiles {
	t.Helper()
	p := &pkiFiles{dir: t.TempDir()}
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test client CA"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	p.ca, _ = x509.ParseCertificate(der)
	p.caKey, p.serial = key, 1
	p.write(t, "ca.crt", "CERTIFICATE", der)
	return p
}

func (p *pkiFiles) write(t *testing.T, name, typ string, der []byte) string {
	t.Helper()
	path := filepath.Join(p.dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// issue writes <name>.crt and <name>.key and returns their paths.
func (p *pkiFiles) issue(t *testing.T, name, cn string, orgs []string, server bool) (string, string) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	p.serial++
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(p.serial), Subject: pkix.Name{CommonName: cn, Organization: orgs},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalPKCS8PrivateKey(key)
	return p.write(t, name+".crt", "CERTIFICATE", der), p.write(t, name+".key", "PRIVATE KEY", kder)
}

// serve --api-listen serves the HTTP API over TLS to clients with
// certificates: the CLI's remote mode works against it with --client-cert,
// identities come from the certificate (CN, O) and the bindings decide, and
// a client without a certificate of the CA gets nothing.
func TestServeAPIWithClientCertificates(t *testing.T) {
	p, addr := serveTLSAPI(t)
	adminCrt, adminKey := p.issue(t, "admin", "ops-admin", []string{"system:masters"}, false)
	aliceCrt, aliceKey := p.issue(t, "alice", "alice", []string{"team-a"}, false)
	remote := func(crt, key string, args ...string) result {
		t.Helper()
		base := []string{"--server", "https://" + addr, "--server-ca", filepath.Join(p.dir, "ca.crt")}
		if crt != "" {
			base = append(base, "--client-cert", crt, "--client-key", key)
		}
		return cli(t, t.TempDir(), "", append(base, args...)...)
	}
	manifests := filepath.Join(p.dir, "m.yaml")
	if err := os.WriteFile(manifests, []byte(selfSignedIssuer+"---\n"+`apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: web, namespace: default}
spec:
  secretName: web-tls
  dnsNames: [web.example.com]
  issuerRef: {name: selfsigned}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := remote(adminCrt, adminKey, "apply", "-f", manifests); r.code != 0 || !strings.Contains(r.stdout, "certificate.cert-manager.io/web (default) created") {
		t.Fatalf("admin apply: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if r := remote(adminCrt, adminKey, "wait", "certificate", "web", "--for=condition=Ready", "--timeout", "30s"); r.code != 0 {
		t.Fatalf("admin wait: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if r := remote(adminCrt, adminKey, "status", "certificate", "web"); r.code != 0 || !strings.HasPrefix(r.stdout, "Ready") {
		t.Fatalf("admin status: %d %s %s", r.code, r.stdout, r.stderr)
	}
	// A CSR whose subjectAltName hides an IP address (an iPAddress
	// encoded as constructed: crypto/x509 skips it, OpenSSL reads
	// IP:127.0.0.1) is refused at apply through the TLS API, as a
	// CertificateSigningRequest and as a CertificateRequest, naming
	// spec.request and the rule.
	hidden := ct.HiddenIPCSR(t, "web.example.com")
	for i, m := range []string{
		apitest.SigningRequest("hidden-ip", "issuers.cert-manager.io/default.selfsigned", hidden),
		apitest.RequestWithCSR("default", "hidden-ip", "selfsigned", hidden),
	} {
		f := filepath.Join(p.dir, fmt.Sprintf("hidden-%d.yaml", i))
		if err := os.WriteFile(f, []byte(m), 0o600); err != nil {
			t.Fatal(err)
		}
		if r := remote(adminCrt, adminKey, "apply", "-f", f); r.code == 0 || !strings.Contains(r.stderr, "spec.request") ||
			!strings.Contains(r.stderr, "subjectAltName entry 2 (iPAddress): is encoded as constructed") {
			t.Fatalf("hidden IP applied: %d %s %s", r.code, r.stdout, r.stderr)
		}
	}
	// Orders and Challenges are written only by certfn's ACME issuer: even
	// system:masters may not apply one through the API.
	order := filepath.Join(p.dir, "order.yaml")
	if err := os.WriteFile(order, []byte(`apiVersion: acme.cert-manager.io/v1
kind: Order
metadata: {name: mine, namespace: default}
spec: {request: "", issuerRef: {name: selfsigned}, dnsNames: [victim.example.com]}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := remote(adminCrt, adminKey, "apply", "-f", order); r.code == 0 || !strings.Contains(r.stderr, "orders are created and changed only by certfn") {
		t.Fatalf("admin applied an Order: %d %s %s", r.code, r.stdout, r.stderr)
	}
	// alice is authenticated by her certificate but bound to nothing.
	if r := remote(aliceCrt, aliceKey, "get", "certificates", "-n", "default"); r.code == 0 || !strings.Contains(r.stderr, "alice may not list") {
		t.Fatalf("alice get: %d %s %s", r.code, r.stdout, r.stderr)
	}
	// Without a client certificate the TLS handshake is refused.
	if r := remote("", "", "get", "certificates", "-n", "default"); r.code == 0 {
		t.Fatalf("no client certificate: %d %s", r.code, r.stdout)
	}
	// A certificate from another CA is refused too.
	other := newPKIFiles(t)
	eveCrt, eveKey := other.issue(t, "eve", "eve", []string{"system:masters"}, false)
	if r := remote(eveCrt, eveKey, "get", "certificates", "-n", "default"); r.code == 0 {
		t.Fatalf("foreign client certificate accepted: %s", r.stdout)
	}
}

// serveTLSAPI runs `serve --auto-approve '*' --api-listen` on a free
// loopback port with a server certificate and a client CA from p, until
// the test ends, and returns p and the address once it listens.
func serveTLSAPI(t *testing.T) (*pkiFiles, string) {
	t.Helper()
	dir := setupEnv(t)
	p := newPKIFiles(t)
	return p, runTLSAPI(t, p, dir, "--auto-approve", "*")
}

// runTLSAPI runs `serve serveArgs... --api-listen` on dir, on a free
// loopback port with a server certificate for 127.0.0.1 and the client CA
// of p, until the test ends, and returns the address once it listens.
func runTLSAPI(t *testing.T, p *pkiFiles, dir string, serveArgs ...string) string {
	t.Helper()
	srvCrt, srvKey := p.issue(t, "server", "127.0.0.1", nil, true)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	args := append(append([]string{"--data", dir, "serve"}, serveArgs...), "--api-listen", addr,
		"--api-tls-cert", srvCrt, "--api-tls-key", srvKey, "--api-client-ca", filepath.Join(p.dir, "ca.crt"))
	go func() {
		var out, errb bytes.Buffer
		done <- run(ctx, args, strings.NewReader(""), &out, &errb)
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("serve exited %d", code)
		}
	})
	for i := 0; ; i++ {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		if i > 200 {
			t.Fatalf("serve --api-listen not listening on %s", addr)
		}
		time.Sleep(25 * time.Millisecond)
	}
	return addr
}

// Through the local TLS API: a CSR's cert-manager annotations cannot be
// changed by a re-apply (422 naming the field), an approval with a stale
// resourceVersion is 409 (apitest.CSRApprovalChecks); the CLI's
// `certificate approve --resource-version` sends the version it is given
// (a stale one is refused, naming metadata.resourceVersion) and by
// default the version it read.
func TestServeAPIApprovalAppliesToWhatWasReviewed(t *testing.T) {
	p, addr := serveTLSAPI(t)
	adminCrt, adminKey := p.issue(t, "admin", "ops-admin", []string{"system:masters"}, false)
	pair, err := tls.LoadX509KeyPair(adminCrt, adminKey)
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(filepath.Join(p.dir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{pair}}}}
	do := func(method, path, ctype, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, "https://"+addr+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	apitest.CSRApprovalChecks(t, do, "reviewed")

	remote := func(args ...string) result {
		t.Helper()
		base := []string{"--server", "https://" + addr, "--server-ca", filepath.Join(p.dir, "ca.crt"), "--client-cert", adminCrt, "--client-key", adminKey}
		return cli(t, t.TempDir(), "", append(base, args...)...)
	}
	m := filepath.Join(p.dir, "csr.yaml")
	if err := os.WriteFile(m, []byte(apitest.CSRManifest(t, "by-cli", "")), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := remote("apply", "-f", m); r.code != 0 {
		t.Fatalf("apply: %d %s %s", r.code, r.stdout, r.stderr)
	}
	failsWith(t, remote("certificate", "approve", "by-cli", "--resource-version", "999999"), "metadata.resourceVersion")
	if r := remote("certificate", "approve", "by-cli"); r.code != 0 || !strings.Contains(r.stdout, "approved") {
		t.Fatalf("approve at the version read: %d %s %s", r.code, r.stdout, r.stderr)
	}
}

// serve --metrics-listen on a non-loopback address without the TLS files
// does not start, and says which flags it needs.
func TestServeMetricsNonLoopbackNeedsTLS(t *testing.T) {
	dir := setupEnv(t)
	t.Setenv("CERTFN_METRICS_LISTEN", "")
	r := cli(t, dir, "", "serve", "--metrics-listen", "0.0.0.0:0")
	if r.code == 0 || !strings.Contains(r.stderr, "--metrics-listen 0.0.0.0:0 is not a loopback address") ||
		!strings.Contains(r.stderr, "--api-tls-cert, --api-tls-key and --api-client-ca") {
		t.Fatalf("exit %d\nstderr: %s", r.code, r.stderr)
	}
}

// serve --acme-server-allow (and CERTFN_ACME_SERVER_ALLOW) is checked at
// start; an invalid entry is an error naming the flag and the entry.
func TestServeACMEServerAllow(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  string
		args []string
		want string // "" = starts
	}{
		{name: "valid", args: []string{"--acme-server-allow", "https://acme-v02.api.letsencrypt.org/directory,https://ca.internal.example/"}},
		{name: "invalid flag", args: []string{"--acme-server-allow", "https://ok.example/", "--acme-server-allow", "ftp://acme.example/"},
			want: `--acme-server-allow[1]: "ftp://acme.example/" is not an absolute http(s) URL`},
		{name: "invalid environment", env: "acme.example", want: `--acme-server-allow[0]: "acme.example" is not an absolute http(s) URL`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := setupEnv(t)
			t.Setenv("CERTFN_ACME_SERVER_ALLOW", tc.env)
			r := cli(t, dir, "", append([]string{"serve", "--until-idle"}, tc.args...)...)
			if tc.want == "" {
				if r.code != 0 {
					t.Fatalf("exit %d: %s", r.code, r.stderr)
				}
				return
			}
			if r.code == 0 || !strings.Contains(r.stderr, tc.want) {
				t.Fatalf("exit %d\nstderr: %s", r.code, r.stderr)
			}
		})
	}
}

// serve --acme-poll-first/--acme-poll-max (and their environment
// variables) are checked at start; errors name the flag and the rule.
func TestServeACMEPolling(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  string // CERTFN_ACME_POLL_FIRST
		args []string
		want string // "" = starts
	}{
		{name: "defaults"},
		{name: "valid", args: []string{"--acme-poll-first", "250ms", "--acme-poll-max", "5s"}},
		{name: "not a duration", args: []string{"--acme-poll-first", "fast"}, want: `--acme-poll-first: "fast" is not a duration (e.g. 150ms, 2s)`},
		{name: "max below first", args: []string{"--acme-poll-first", "3s", "--acme-poll-max", "1s"}, want: "--acme-poll-max: 1s is below --acme-poll-first (3s)"},
		{name: "environment", env: "2h", want: "--acme-poll-first: 2h0m0s is outside 10ms..1h0m0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := setupEnv(t)
			t.Setenv("CERTFN_ACME_POLL_FIRST", tc.env)
			r := cli(t, dir, "", append([]string{"serve", "--until-idle"}, tc.args...)...)
			if tc.want == "" {
				if r.code != 0 {
					t.Fatalf("exit %d: %s", r.code, r.stderr)
				}
				return
			}
			if r.code == 0 || !strings.Contains(r.stderr, tc.want) {
				t.Fatalf("exit %d\nstderr: %s", r.code, r.stderr)
			}
		})
	}
}

package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/pki"
)

// csrIssuers: cert-manager's CA chain (cmChain) plus a ClusterIssuer on
// the same CA that signs at most 20 minutes.
const csrIssuers = cmChain + `---
apiVersion: cert-manager.io/v1
kind: ClusterIssuer
metadata:
  name: short-ca
  annotations: {certfn.io/max-duration: 20m}
spec:
  ca:
    secretName: root-secret
`

// serveInBackground runs `certfn serve args...` on dir until the test
// ends, and fails the test if it exits otherwise than 0.
func serveInBackground(t *testing.T, dir string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var serveErr syncBuffer
	go func() {
		var out bytes.Buffer
		done <- run(ctx, append([]string{"--data", dir, "serve"}, args...), strings.NewReader(""), &out, &serveErr)
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("serve exited %d: %s", code, serveErr.String())
		}
	})
	// The client commands that follow need the data directory serve
	// creates (state.db): wait for it, or for serve to end.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(dir, "state.db")); err == nil {
			return
		}
		select {
		case code := <-done:
			done <- code
			t.Fatalf("serve exited %d before creating its data directory: %s", code, serveErr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve created no state.db within 30 s: %s", serveErr.String())
		}
	}
}

func writeKey(t *testing.T, dir string) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	b, err := pki.EncodePKCS8PEM(key)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "key.pem")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// The CSR workflow end to end on local mode, with `certfn serve` running
// (local client), and through its HTTP API (remote client, client
// certificates): create csr builds the request from a key the user keeps,
// waits, writes the chain and checks its lifetime (a signer that honours
// less is reported); get csr lists the requests; certificate approve|deny
// are kubectl's verbs on the approval subresource.
func TestCreateCSRWaitsAndChecksLifetime(t *testing.T) {
	dir := setupEnv(t)
	t.Setenv("CERTFN_APPROVER", "")
	work := t.TempDir()
	p := newPKIFiles(t)
	srvCrt, srvKey := p.issue(t, "server", "127.0.0.1", nil, true)
	adminCrt, adminKey := p.issue(t, "admin", "ops-admin", []string{"system:masters"}, false)
	if r := cli(t, dir, csrIssuers, "apply", "-f", "-"); r.code != 0 {
		t.Fatalf("apply: %d %s", r.code, r.stderr)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	serveInBackground(t, dir, "--sweep-interval", "100ms", "--api-listen", addr,
		"--api-tls-cert", srvCrt, "--api-tls-key", srvKey, "--api-client-ca", filepath.Join(p.dir, "ca.crt"))
	key := writeKey(t, work)

	// Local client: honoured as requested.
	out := filepath.Join(work, "app.pem")
	r := cli(t, dir, "", "create", "csr", "--name", "app", "--key", key, "--signer-name", "clusterissuers.cert-manager.io/my-ca-issuer",
		"--expiration", "10m", "--dns-name", "app.example.com", "--out", out, "--timeout", "30s")
	if r.code != 0 || strings.Contains(r.stderr, "warning") || !strings.Contains(r.stderr, "certificate written to "+out) {
		t.Fatalf("create csr: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	chain, err := pki.ParseChainPEM(b)
	if err != nil || chain[0].NotAfter.Sub(chain[0].NotBefore) != 10*time.Minute || chain[0].DNSNames[0] != "app.example.com" {
		t.Fatalf("issued: %v %+v", err, chain)
	}
	// A signer that honours less: the client says so (KEP-2784), and still writes the chain to stdout.
	r = cli(t, dir, "", "create", "csr", "--name", "short", "--key", key, "--signer-name", "clusterissuers.cert-manager.io/short-ca",
		"--expiration", "1h", "--common-name", "short.example.com", "--timeout", "30s")
	if r.code != 0 || !strings.Contains(r.stderr, "warning: the signer did not honour the requested lifetime: asked for 1h0m0s") ||
		!strings.Contains(r.stderr, "valid for 20m0s") || !strings.HasPrefix(r.stdout, "-----BEGIN CERTIFICATE-----") {
		t.Fatalf("create csr short: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if s := ok(t, dir, "get", "csr"); !strings.Contains(s, "REQUESTEDDURATION") || !strings.Contains(s, "clusterissuers.cert-manager.io/short-ca") ||
		!strings.Contains(s, "Approved,Issued") {
		t.Fatalf("get csr:\n%s", s)
	}
	if s := ok(t, dir, "get", "certificatesigningrequests", "short", "-o", "wide"); !strings.Contains(s, "60m") || !strings.Contains(s, "20m") {
		t.Fatalf("get csr -o wide:\n%s", s)
	}
	// Refused before anything is sent: below docs/design/request-duration.md's minimum.
	failsWith(t, cli(t, dir, "", "create", "csr", "--key", key, "--signer-name", "clusterissuers.cert-manager.io/my-ca-issuer",
		"--expiration", "5m", "--common-name", "x"), "at least 10m")

	// Remote client: a request for a signer certfn does not sign waits;
	// certificate deny records the decision, which is permanent.
	remote := func(args ...string) result {
		t.Helper()
		base := []string{"--server", "https://" + addr, "--server-ca", filepath.Join(p.dir, "ca.crt"), "--client-cert", adminCrt, "--client-key", adminKey}
		return cli(t, t.TempDir(), "", append(base, args...)...)
	}
	if r := remote("create", "csr", "--name", "foreign", "--key", key, "--signer-name", "example.com/other", "--common-name", "x", "--wait=false"); r.code != 0 {
		t.Fatalf("remote create csr: %d %s", r.code, r.stderr)
	}
	if r := remote("certificate", "deny", "foreign", "--message", "not ours"); r.code != 0 || !strings.Contains(r.stdout, "certificatesigningrequest.certificates.k8s.io/foreign denied") {
		t.Fatalf("remote deny: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if r := remote("certificate", "approve", "foreign"); r.code == 0 || !strings.Contains(r.stderr, "already Denied") {
		t.Fatalf("remote approve after deny: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if r := remote("create", "csr", "--name", "remote", "--key", key, "--signer-name", "clusterissuers.cert-manager.io/my-ca-issuer",
		"--expiration", "15m", "--common-name", "remote.example.com", "--timeout", "30s"); r.code != 0 || !strings.HasPrefix(r.stdout, "-----BEGIN CERTIFICATE-----") {
		t.Fatalf("remote create csr: %d %s %s", r.code, r.stdout, r.stderr)
	}
	// Remote client: why it waits comes from the CSR's Event over the API.
	if r := remote("create", "csr", "--name", "lost", "--key", key, "--signer-name", "clusterissuers.cert-manager.io/nothere",
		"--common-name", "lost.example.com", "--timeout", "3s"); r.code != 1 ||
		!strings.Contains(r.stderr, `certificatesigningrequest.certificates.k8s.io/lost: approved, waiting for the signer: ClusterIssuer "nothere" not found`) {
		t.Fatalf("remote create csr for a missing issuer: %d %s", r.code, r.stderr)
	}
	if s := ok(t, dir, "get", "csr", "foreign"); !strings.Contains(s, "Denied") {
		t.Fatalf("get csr foreign:\n%s", s)
	}
}

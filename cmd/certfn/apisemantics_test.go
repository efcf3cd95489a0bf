package main

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/adapters/httpapi/apitest"
)

// tlsAPI is a `certfn serve --api-listen` on a data directory, with the
// client certificate of a system:masters user.
type tlsAPI struct {
	addr, ca, crt, key string
}

func startTLSAPI(t *testing.T, dir string, serveArgs ...string) *tlsAPI {
	t.Helper()
	p := newPKIFiles(t)
	crt, key := p.issue(t, "admin", "ops-admin", []string{"system:masters"}, false)
	addr := runTLSAPI(t, p, dir, serveArgs...)
	return &tlsAPI{addr: addr, ca: filepath.Join(p.dir, "ca.crt"), crt: crt, key: key}
}

// cli runs certfn against the API as the admin.
func (a *tlsAPI) cli(t *testing.T, args ...string) result {
	t.Helper()
	return cli(t, t.TempDir(), "", append([]string{"--server", "https://" + a.addr, "--server-ca", a.ca, "--client-cert", a.crt, "--client-key", a.key}, args...)...)
}

// httpClient is an HTTP client with the admin's certificate.
func (a *tlsAPI) httpClient(t *testing.T) *http.Client {
	t.Helper()
	pem, err := os.ReadFile(a.ca)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	cert, err := tls.LoadX509KeyPair(a.crt, a.key)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}}}}
}

// The API's Kubernetes parameters through the local TLS API
// (apitest.Semantics).
func TestTLSAPIKubernetesParameters(t *testing.T) {
	api := startTLSAPI(t, setupEnv(t))
	hc := api.httpClient(t)
	apitest.Semantics(t, "default", func(t *testing.T, method, path, ct, body string) (int, string) {
		req, err := http.NewRequest(method, "https://"+api.addr+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	})
}

const labelledCerts = `apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: web, namespace: default, labels: {app: web}}
spec: {secretName: web-tls, dnsNames: [web.example.com], issuerRef: {name: selfsigned}}
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: db, namespace: default, labels: {app: db}}
spec: {secretName: db-tls, dnsNames: [db.example.com], issuerRef: {name: selfsigned}}
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: bare, namespace: default}
spec: {secretName: bare-tls, dnsNames: [bare.example.com], issuerRef: {name: selfsigned}}
`

// delete -l, --field-selector and --dry-run mean what they mean in
// kubectl, on the local client and through the TLS API alike: a selector
// that selects nothing deletes nothing, a dry run deletes nothing, and a
// wait on one name is never satisfied by another object.
func TestDeleteSelectorsAndDryRun(t *testing.T) {
	for _, mode := range []string{"local", "remote"} {
		t.Run(mode, func(t *testing.T) {
			dir := setupEnv(t)
			run := func(args ...string) result { return cli(t, dir, "", args...) }
			if mode == "remote" {
				api := startTLSAPI(t, dir, "--auto-approve", "*")
				run = func(args ...string) result { return api.cli(t, args...) }
			}
			ok := func(args ...string) string {
				t.Helper()
				r := run(args...)
				if r.code != 0 {
					t.Fatalf("certfn %s: exit %d\n%s%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
				}
				return r.stdout
			}
			fails := func(want string, args ...string) {
				t.Helper()
				if r := run(args...); r.code == 0 || !strings.Contains(r.stderr, want) {
					t.Fatalf("certfn %s: exit %d %s%s, want an error naming %q", strings.Join(args, " "), r.code, r.stdout, r.stderr, want)
				}
			}
			stored := func(want string) {
				t.Helper()
				if got := ok("get", "certificates", "-o", "name"); got != want {
					t.Fatalf("stored:\n%s\nwant:\n%s", got, want)
				}
			}
			const all = "certificate.cert-manager.io/bare\ncertificate.cert-manager.io/db\ncertificate.cert-manager.io/web\n"
			ok("apply", "-f", writeFile(t, t.TempDir(), "m.yaml", selfSignedIssuer+"---\n"+labelledCerts))
			stored(all)

			if r := run("delete", "certificates", "-l", "app=does-not-exist"); r.code != 0 || !strings.Contains(r.stderr, "No resources found") {
				t.Fatalf("delete -l app=does-not-exist: %d %s%s", r.code, r.stdout, r.stderr)
			}
			stored(all)
			ok("delete", "certificates", "--field-selector", "metadata.name=does-not-exist")
			stored(all)
			if out := ok("delete", "certificate", "web", "--dry-run=server"); !strings.Contains(out, "deleted (server dry run)") {
				t.Fatalf("dry run: %q", out)
			}
			ok("delete", "certificates", "-l", "app", "--dry-run=server")
			ok("delete", "certificate/db", "--dry-run=client")
			stored(all)
			fails("labelSelector", "delete", "certificates", "-l", "app in web")
			fails("field label not supported: spec.secretName", "delete", "certificates", "--field-selector", "spec.secretName=web-tls")
			fails("--dry-run", "delete", "certificate", "web", "--dry-run=maybe")
			fails("no names", "delete", "certificate", "web", "-l", "app=web")
			stored(all)

			if got := ok("get", "certificates", "--field-selector", "metadata.name!=web", "-l", "app", "-o", "name"); got != "certificate.cert-manager.io/db\n" {
				t.Fatalf("get with selectors: %q", got)
			}
			ok("delete", "certificates", "-l", "app=web")
			stored("certificate.cert-manager.io/bare\ncertificate.cert-manager.io/db\n")
			ok("delete", "certificates", "--field-selector", "metadata.name=db")
			stored("certificate.cert-manager.io/bare\n")

			if mode == "remote" {
				// bare becomes Ready; a wait on another name is not
				// satisfied by it, in either form: the deleted names are
				// not found, at once, as kubectl wait says.
				ok("wait", "certificate", "bare", "--for=condition=Ready", "--timeout", "30s")
				ok("wait", "certificate/bare", "--for=condition=Ready", "--timeout", "30s")
				for _, args := range [][]string{{"wait", "certificate", "web"}, {"wait", "certificate/db"}} {
					if r := run(append(args, "--for=condition=Ready", "--timeout", "1h")...); r.code != 1 || !strings.Contains(r.stderr, "not found") {
						t.Fatalf("%v: %d %s%s", args, r.code, r.stdout, r.stderr)
					}
				}
			}
		})
	}
}

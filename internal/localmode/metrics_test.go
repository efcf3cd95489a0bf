package localmode

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/clock"
)

// The examples are issued; /metrics then has cert-manager's certificate
// gauges for both Certificates (the values are their status times) and
// certfn's counters; a Certificate that is not Ready reports False.
func TestMetricsEndpoint(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	rt, err := Open(Options{DataDir: t.TempDir(), Clock: clock.NewFake(t0), AutoApprove: []string{"*"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	ctx := context.Background()
	files, _ := filepath.Glob("../../examples/0[123]*.yaml")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := api.Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			if _, err := rt.App.Service.Apply(ctx, app.Caller{Username: "admin", Groups: []string{app.SuperuserGroup}}, []api.Object{o}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := rt.RunUntilIdle(ctx, 2); err != nil {
		t.Fatal(err)
	}
	// One more Certificate whose issuer does not exist: not Ready.
	objs, err := api.Decode([]byte("apiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata: {name: orphan, namespace: default}\nspec: {secretName: orphan-tls, dnsNames: [o.example.com], issuerRef: {name: missing}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.App.Service.Apply(ctx, app.Caller{Username: "admin", Groups: []string{app.SuperuserGroup}}, []api.Object{objs[0]}); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.RunUntilIdle(ctx, 2); err != nil {
		t.Fatal(err)
	}

	srv := httptest.NewServer(rt.MetricsHandler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain; version=0.0.4") {
		t.Fatalf("%d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	text := string(body)
	o, err := rt.Repo.Get(ctx, api.Key{Kind: api.KindCertificate, Namespace: "default", Name: "web"})
	if err != nil {
		t.Fatal(err)
	}
	web := o.(*api.Certificate)
	webLabels := `{issuer_group="cert-manager.io",issuer_kind="ClusterIssuer",issuer_name="demo-ca",name="web",namespace="default"`
	for _, want := range []string{
		"# TYPE " + MetricExpiration + " gauge",
		MetricExpiration + webLabels + "} " + strconv.FormatFloat(float64(web.Status.NotAfter.Unix()), 'g', -1, 64),
		MetricRenewal + webLabels + "} " + strconv.FormatFloat(float64(web.Status.RenewalTime.Unix()), 'g', -1, 64),
		MetricReady + `{condition="True",` + webLabels[1:] + "} 1",
		MetricReady + `{condition="False",` + webLabels[1:] + "} 0",
		MetricReady + `{condition="False",issuer_group="cert-manager.io",issuer_kind="Issuer",issuer_name="missing",name="orphan",namespace="default"} 1`,
		`issuer_name="selfsigned",name="demo-ca",namespace="cert-manager"`,
		"# TYPE certfn_",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if strings.Contains(text, MetricExpiration+`{issuer_group="cert-manager.io",issuer_kind="Issuer",issuer_name="missing"`) {
		t.Error("an expiration for a Certificate that has no certificate")
	}
	if t.Failed() {
		t.Log(text)
	}
	if r, _ := http.Post(srv.URL+"/metrics", "text/plain", nil); r == nil || r.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /metrics: %v", r)
	}
}

// --metrics-listen: an address without a host binds 127.0.0.1; a host is
// loopback when it is a loopback IP, or a name all of whose addresses are.
func TestMetricsAddr(t *testing.T) {
	for _, tc := range []struct {
		addr, bind string
		loopback   bool
		err        string
	}{
		{addr: ":9402", bind: "127.0.0.1:9402", loopback: true},
		{addr: ":0", bind: "127.0.0.1:0", loopback: true},
		{addr: "127.0.0.1:9402", bind: "127.0.0.1:9402", loopback: true},
		{addr: "127.0.0.53:9402", bind: "127.0.0.53:9402", loopback: true},
		{addr: "[::1]:9402", bind: "[::1]:9402", loopback: true},
		{addr: "0.0.0.0:9402", bind: "0.0.0.0:9402"},
		{addr: "[::]:9402", bind: "[::]:9402"},
		{addr: "192.0.2.10:9402", bind: "192.0.2.10:9402"},
		{addr: "9402", err: `--metrics-listen "9402": want host:port or :port`},
		{addr: "", err: `--metrics-listen "": want host:port or :port`},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			bind, loopback, err := metricsAddr(context.Background(), tc.addr)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || bind != tc.bind || loopback != tc.loopback {
				t.Fatalf("= %q %t %v, want %q %t", bind, loopback, err, tc.bind, tc.loopback)
			}
		})
	}
	// localhost resolves to loopback addresses only; one of them is bound.
	bind, loopback, err := metricsAddr(context.Background(), "localhost:9402")
	if err != nil {
		t.Skipf("localhost does not resolve here: %v", err)
	}
	host, _, _ := net.SplitHostPort(bind)
	if ip := net.ParseIP(host); !loopback || ip == nil || !ip.IsLoopback() {
		t.Fatalf("localhost:9402 = %q %t", bind, loopback)
	}
}

// metricsPKI is a client CA with a server certificate for 127.0.0.1 and
// client certificates, written as PEM files.
type metricsPKI struct {
	dir   string
	ca    *x509.Certificate
	caKey *ecdsa.PrivateKey
	n     int64
}

func newMetricsPKI(t *testing.T) *metricsPKI {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "clients CA"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(der)
	p := &metricsPKI{dir: t.TempDir(), ca: ca, caKey: key, n: 1}
	p.write(t, "ca.crt", "CERTIFICATE", der)
	return p
}

func (p *metricsPKI) write(t *testing.T, name, typ string, der []byte) string {
	t.Helper()
	path := filepath.Join(p.dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// issue returns the certificate and key files of subject; server
// certificates are for 127.0.0.1.
func (p *metricsPKI) issue(t *testing.T, name string, subject pkix.Name, server bool) (string, string) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	p.n++
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(p.n), Subject: subject, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if server {
		tmpl.ExtKeyUsage, tmpl.IPAddresses = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, []net.IP{net.ParseIP("127.0.0.1")}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalPKCS8PrivateKey(key)
	return p.write(t, name+".crt", "CERTIFICATE", der), p.write(t, name+".key", "PRIVATE KEY", kder)
}

// On a loopback address the metrics are plain HTTP; a non-loopback one
// without the TLS files is refused, naming the flags.
func TestListenMetricsLoopbackOnlyWithoutTLS(t *testing.T) {
	rt, err := Open(Options{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	addr, stop, err := rt.ListenMetrics(":0", APIOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if host, _, _ := net.SplitHostPort(addr); host != "127.0.0.1" {
		t.Fatalf(":0 bound %s, want 127.0.0.1", addr)
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("loopback /metrics: %d", resp.StatusCode)
	}
	for _, o := range []APIOptions{{}, {CertFile: "x.crt", KeyFile: "x.key"}} {
		_, _, err := rt.ListenMetrics("0.0.0.0:0", o)
		if err == nil {
			t.Fatalf("0.0.0.0 served without TLS files %+v", o)
		}
		for _, want := range []string{"--metrics-listen 0.0.0.0:0 is not a loopback address", "--api-tls-cert, --api-tls-key and --api-client-ca", MetricsReaders} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q lacks %q", err, want)
			}
		}
	}
	if _, _, err := rt.ListenMetrics("0.0.0.0:0", APIOptions{CertFile: "/nonexistent.crt", KeyFile: "/nonexistent.key", ClientCAFile: "/nonexistent.crt"}); err == nil ||
		!strings.Contains(err.Error(), "--metrics-listen 0.0.0.0:0") || !strings.Contains(err.Error(), "nonexistent") {
		t.Fatalf("missing TLS files: %v", err)
	}
}

// On a non-loopback address the metrics are served over TLS to client
// certificates of the client CA whose caller may list Certificates in all
// namespaces: an administrator and a user bound cluster-wide read them; a
// user allowed in one namespace only gets 403, a certificate with two
// common names 401, no certificate or one of another CA no handshake.
func TestListenMetricsTLS(t *testing.T) {
	rt, err := Open(Options{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	admin := app.Caller{Username: "admin", Groups: []string{app.SuperuserGroup}}
	objs, err := api.Decode([]byte(`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: metrics-reader}
rules: [{apiGroups: [cert-manager.io], resources: [certificates], verbs: [list]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: prometheus-reads-metrics}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: metrics-reader}
subjects: [{kind: Group, name: monitoring}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: team-a-lists, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: metrics-reader}
subjects: [{kind: User, name: alice}]
`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.App.Service.Apply(context.Background(), admin, objs); err != nil {
		t.Fatal(err)
	}
	p := newMetricsPKI(t)
	srvCrt, srvKey := p.issue(t, "server", pkix.Name{CommonName: "certfn"}, true)
	addr, stop, err := rt.ListenMetrics("0.0.0.0:0", APIOptions{CertFile: srvCrt, KeyFile: srvKey, ClientCAFile: filepath.Join(p.dir, "ca.crt")})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	_, port, _ := net.SplitHostPort(addr)
	url := "https://127.0.0.1:" + port + "/metrics"
	roots := x509.NewCertPool()
	roots.AddCert(p.ca)
	get := func(crt, key string) (int, string, error) {
		cfg := &tls.Config{RootCAs: roots}
		if crt != "" {
			pair, err := tls.LoadX509KeyPair(crt, key)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Certificates = []tls.Certificate{pair}
		}
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}, Timeout: 10 * time.Second}
		resp, err := c.Get(url)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), nil
	}
	other := newMetricsPKI(t)
	for _, tc := range []struct {
		name    string
		pki     *metricsPKI
		subject *pkix.Name
		status  int
		body    string
	}{
		{name: "administrator", pki: p, subject: &pkix.Name{CommonName: "ops", Organization: []string{app.SuperuserGroup}}, status: 200, body: "# TYPE certfn_"},
		{name: "bound cluster-wide", pki: p, subject: &pkix.Name{CommonName: "prometheus", Organization: []string{"monitoring"}}, status: 200, body: "# TYPE certfn_"},
		{name: "bound in one namespace", pki: p, subject: &pkix.Name{CommonName: "alice"}, status: 403, body: "alice may not list"},
		{name: "bound to nothing", pki: p, subject: &pkix.Name{CommonName: "bob"}, status: 403, body: MetricsReaders},
		{name: "two common names", pki: p, subject: &pkix.Name{Organization: []string{"monitoring"},
			ExtraNames: []pkix.AttributeTypeAndValue{{Type: asn1.ObjectIdentifier{2, 5, 4, 3}, Value: "prometheus"}, {Type: asn1.ObjectIdentifier{2, 5, 4, 3}, Value: "x"}}},
			status: 401, body: "2 common names"},
		{name: "no client certificate", pki: p},
		{name: "another CA's certificate", pki: other, subject: &pkix.Name{CommonName: "prometheus", Organization: []string{app.SuperuserGroup}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var crt, key string
			if tc.subject != nil {
				crt, key = tc.pki.issue(t, strings.ReplaceAll(tc.name, " ", "-"), *tc.subject, false)
			}
			status, body, err := get(crt, key)
			if tc.status == 0 {
				if err == nil {
					t.Fatalf("served %d without an accepted client certificate", status)
				}
				return
			}
			if err != nil || status != tc.status || !strings.Contains(body, tc.body) {
				t.Fatalf("= %d %v %.200q, want %d with %q", status, err, body, tc.status, tc.body)
			}
		})
	}
}

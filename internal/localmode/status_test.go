package localmode

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/clock"
	"github.com/certfn/certfn/core/metrics"
)

var statusAdmin = app.Caller{Username: "admin", Groups: []string{app.SuperuserGroup}}

// statusT0 is the fixture's (fake) time.
var statusT0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// statusRuntime is a local mode with five Certificates, issued: the
// examples' demo CA (cert-manager) and web (default), api in team-a (a
// 30-day certificate: the first renewal), orphan in default and broken in
// team-a, whose Issuers do not exist (failures). alice may get and list
// Certificates in team-a; carol may list Issuers in team-b only. The
// scheduler has just swept.
func statusRuntime(t *testing.T) *Runtime {
	t.Helper()
	rt, err := Open(Options{DataDir: t.TempDir(), Clock: clock.NewFake(statusT0), AutoApprove: []string{"*"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	ctx := context.Background()
	files, _ := filepath.Glob("../../examples/0[123]*.yaml")
	var docs [][]byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, b)
	}
	docs = append(docs, []byte(`apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: orphan, namespace: default}
spec: {secretName: orphan-tls, dnsNames: [o.example.com], issuerRef: {name: missing}}
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: api, namespace: team-a}
spec: {secretName: api-tls, dnsNames: [api.team-a.example], duration: 720h, issuerRef: {name: demo-ca, kind: ClusterIssuer}}
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: broken, namespace: team-a}
spec: {secretName: broken-tls, dnsNames: [b.team-a.example], issuerRef: {name: team-a-ca}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: cert-reader, namespace: team-a}
rules: [{apiGroups: [cert-manager.io], resources: [certificates], verbs: [get, list]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: alice-reads, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: cert-reader}
subjects: [{kind: User, name: alice}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: issuer-reader, namespace: team-b}
rules: [{apiGroups: [cert-manager.io], resources: [issuers], verbs: [list]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: carol-reads-issuers, namespace: team-b}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: issuer-reader}
subjects: [{kind: User, name: carol}]
`))
	for _, d := range docs {
		objs, err := api.Decode(d)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			if _, err := rt.App.Service.Apply(ctx, statusAdmin, []api.Object{o}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := rt.RunUntilIdle(ctx, 2); err != nil {
			t.Fatal(err)
		}
	}
	rt.health.serving(10 * time.Second)
	rt.health.swept(time.Now())
	return rt
}

// /metrics is valid Prometheus text (it parses with the Prometheus
// library's own parser): every family has HELP and TYPE, certfn's and
// cert-manager's names with the catalog's help and type, beside the Go
// and process collectors.
func TestMetricsTextParses(t *testing.T) {
	rt := statusRuntime(t)
	srv := httptest.NewServer(rt.MetricsHandler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || expfmt.ResponseFormat(resp.Header).FormatType() != expfmt.TypeTextPlain {
		t.Fatalf("%d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v\n%s", err, body)
	}
	for _, want := range []string{"go_goroutines", "go_info", "process_start_time_seconds", "process_resident_memory_bytes",
		"certfn_build_info", "certfn_last_sweep_timestamp_seconds", "certfn_reconciles_total", "certfn_certificate_expiry_seconds",
		MetricExpiration, MetricNotAfter, MetricNotBefore, MetricRenewal, MetricReady} {
		if fams[want] == nil {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	for name, f := range fams {
		if f.GetHelp() == "" {
			t.Errorf("%s has no HELP", name)
		}
		if !strings.HasPrefix(name, "certfn_") && !strings.HasPrefix(name, "certmanager_") && !strings.HasPrefix(name, "policy_") {
			continue
		}
		d, ok := metrics.Lookup(name)
		if !ok {
			t.Errorf("%s is served but not in the catalog", name)
			continue
		}
		if f.GetHelp() != d.Help || !strings.EqualFold(f.GetType().String(), d.Type) {
			t.Errorf("%s: help %q type %s, the catalog says %q %s", name, f.GetHelp(), f.GetType(), d.Help, d.Type)
		}
	}
	// Expiration and notAfter are the same instant; the web certificate's.
	web := `name="web"`
	for _, n := range []string{MetricExpiration, MetricNotAfter} {
		if !regexp.MustCompile(n + `\{[^}]*` + web + `[^}]*\} 1\.78`).Match(body) {
			t.Errorf("%s of web missing or not in 2026: %s", n, body)
		}
	}
}

// statusGet fetches url with the client certificate crt/key of p.
func statusGet(t *testing.T, p *metricsPKI, url, crt, key string) (int, http.Header, string) {
	t.Helper()
	roots := x509.NewCertPool()
	roots.AddCert(p.ca)
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
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// GET /status on the API listener, with client certificates: an
// administrator sees every Certificate and every failure with its blocker
// line; alice, allowed in team-a, only team-a's; carol, bound in team-b to
// something else, and bob, bound to nothing, get the same 403. Every
// answer forbids scripts.
func TestStatusPageAPIListenerRBAC(t *testing.T) {
	rt := statusRuntime(t)
	p := newMetricsPKI(t)
	srvCrt, srvKey := p.issue(t, "server", pkix.Name{CommonName: "certfn"}, true)
	addr, stop, err := rt.ListenAPI(APIOptions{Listen: "127.0.0.1:0", CertFile: srvCrt, KeyFile: srvKey, ClientCAFile: filepath.Join(p.dir, "ca.crt")})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	orphanBlocker := `Not ready: Issuer &#34;missing&#34; does not exist in namespace default`
	brokenBlocker := `Not ready: Issuer &#34;team-a-ca&#34; does not exist in namespace team-a`
	for _, tc := range []struct {
		name    string
		subject pkix.Name
		status  int
		has     []string
		lacks   []string
	}{
		{"administrator", pkix.Name{CommonName: "ops", Organization: []string{app.SuperuserGroup}}, 200,
			[]string{`data-certificate="default/web"`, `data-certificate="cert-manager/demo-ca"`, `data-certificate="team-a/api"`,
				orphanBlocker, brokenBlocker, "For ops: every namespace."}, nil},
		{"tenant of team-a", pkix.Name{CommonName: "alice"}, 200,
			// alice may not get Issuers: her blocker line is the one
			// `certfn status` prints for her, without the issuer's state.
			[]string{`data-certificate="team-a/api"`, `data-certificate="team-a/broken"`, "For alice: namespace team-a.",
				`Issuing: Issuing certificate as Secret &#34;broken-tls&#34; does not exist`},
			[]string{"default/", "cert-manager/", orphanBlocker, brokenBlocker}},
		{"bound in another namespace to something else", pkix.Name{CommonName: "carol"}, 403,
			[]string{"carol may not list certificates.cert-manager.io in any namespace"}, []string{"team-b", "team-a"}},
		{"bound to nothing", pkix.Name{CommonName: "bob"}, 403,
			[]string{"bob may not list certificates.cert-manager.io in any namespace"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			crt, key := p.issue(t, strings.ReplaceAll(tc.name, " ", "-"), tc.subject, false)
			status, h, body := statusGet(t, p, "https://"+addr+"/status", crt, key)
			if status != tc.status {
				t.Fatalf("status %d, want %d: %s", status, tc.status, body)
			}
			if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'none'") || !strings.Contains(csp, "default-src 'none'") {
				t.Errorf("Content-Security-Policy %q does not forbid scripts", csp)
			}
			for _, s := range tc.has {
				if !strings.Contains(body, s) {
					t.Errorf("body lacks %q:\n%s", s, body)
				}
			}
			for _, s := range tc.lacks {
				if strings.Contains(body, s) {
					t.Errorf("body has %q:\n%s", s, body)
				}
			}
			if status == 200 && (!strings.HasPrefix(h.Get("Content-Type"), "text/html") || strings.Contains(body, "<script")) {
				t.Errorf("Content-Type %q, or a script in the page", h.Get("Content-Type"))
			}
		})
	}
	// The API itself is still served next to the page.
	crt, key := p.issue(t, "api-user", pkix.Name{CommonName: "ops", Organization: []string{app.SuperuserGroup}}, false)
	if status, _, body := statusGet(t, p, "https://"+addr+"/v1/namespaces/default/certificates/web", crt, key); status != 200 || !strings.Contains(body, `"web"`) {
		t.Fatalf("API next to /status: %d %s", status, body)
	}
}

// On the loopback metrics listener (plain HTTP, no caller) the page shows
// what /metrics shows: every Certificate with expiry, renewal and Ready
// (with its reason), not the blocker lines; POST is 405.
func TestStatusPageMetricsListener(t *testing.T) {
	rt := statusRuntime(t)
	addr, stop, err := rt.ListenMetrics("127.0.0.1:0", APIOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	resp, err := http.Get("http://" + addr + "/status")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	body := string(b)
	if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "script-src 'none'") {
		t.Fatalf("%d %v", resp.StatusCode, resp.Header)
	}
	for _, s := range []string{`data-certificate="default/web"`, `data-certificate="team-a/broken"`, "Blocker lines are not shown",
		`default/orphan</strong><span class="blocker">Ready is False (`} {
		if !strings.Contains(body, s) {
			t.Errorf("body lacks %q:\n%s", s, body)
		}
	}
	if strings.Contains(body, "does not exist") {
		t.Errorf("the unauthenticated view shows a blocker line:\n%s", body)
	}
	resp, err = http.Post("http://"+addr+"/status", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
		t.Fatalf("POST /status: %d %v", resp.StatusCode, resp.Header)
	}
}

// On a metrics listener served over TLS (not loopback) the page is behind
// the metrics' own authorization: a reader allowed to list Certificates in
// every namespace sees the full page with blocker lines (those `certfn
// status` prints for it: it may not get Issuers), the tenant alice gets
// the metrics' 403.
func TestStatusPageMetricsListenerTLS(t *testing.T) {
	rt := statusRuntime(t)
	objs, err := api.Decode([]byte(`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: metrics-reader}
rules: [{apiGroups: [cert-manager.io], resources: [certificates], verbs: [get, list]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: monitoring-reads}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: metrics-reader}
subjects: [{kind: Group, name: monitoring}]
`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.App.Service.Apply(context.Background(), statusAdmin, objs); err != nil {
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
	url := "https://127.0.0.1:" + port + "/status"
	crt, key := p.issue(t, "prometheus", pkix.Name{CommonName: "prometheus", Organization: []string{"monitoring"}}, false)
	status, _, body := statusGet(t, p, url, crt, key)
	if status != 200 || !strings.Contains(body, "For prometheus: every namespace.") || strings.Contains(body, "Blocker lines are not shown") ||
		!strings.Contains(body, `<span class="blocker">Issuing: Issuing certificate as Secret &#34;orphan-tls&#34; does not exist`) {
		t.Fatalf("reader: %d\n%s", status, body)
	}
	crt, key = p.issue(t, "alice", pkix.Name{CommonName: "alice"}, false)
	if status, _, body := statusGet(t, p, url, crt, key); status != 403 || !strings.Contains(body, MetricsReaders) {
		t.Fatalf("tenant on the metrics listener: %d %s", status, body)
	}
}

// What the page quotes (blocker lines hold issuers' and servers'
// messages) is escaped: markup in it is text, never an element.
func TestStatusTemplateEscapes(t *testing.T) {
	evil := `<script>alert(1)</script><img src=x onerror=alert(2)>`
	page := &statusPage{Scope: "every namespace", Failures: []statusFailure{{Namespace: "default", Name: "x", Blocker: evil}},
		Certificates: []statusRow{{Namespace: "default", Name: "x", Ready: "False", Reason: evil}}}
	var b bytes.Buffer
	if err := statusTemplate.Execute(&b, page); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); strings.Contains(out, "<script") || strings.Contains(out, "<img") || !strings.Contains(out, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Fatalf("not escaped:\n%s", out)
	}
}

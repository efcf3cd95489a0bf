package localmode

import (
	"context"
	"io"
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
	o, err := rt.Engine.Get(ctx, api.Key{Kind: api.KindCertificate, Namespace: "default", Name: "web"})
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

package awsmode_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/certfn/certfn/core/app"
	ct "github.com/certfn/certfn/core/certificates/certtest"
	"github.com/certfn/certfn/internal/awsmode"
	"github.com/certfn/certfn/internal/awsmode/awstest"
)

// With CERTFN_METRICS=emf the worker writes one CloudWatch EMF line per
// invocation; a CA Certificate's resync reports the time to its expiry.
func TestWorkerExportsEMFMetrics(t *testing.T) {
	e := awstest.New(t)
	e.Vars[awsmode.EnvMetrics] = "emf"
	var out bytes.Buffer
	worker := e.Runtime(app.Worker.Name, func(o *awsmode.Options) { o.Metrics = nil; o.MetricsOut = &out })
	signer := e.Runtime(app.Signer.Name)
	apiFn := e.Runtime(app.API.Name)
	e.InstallSecret(ct.NewCA(t).Secret(t, "cert-manager", "ops-ca"), "ca")
	apply(t, apiFn, `apiVersion: cert-manager.io/v1
kind: ClusterIssuer
metadata: {name: ops-ca}
spec: {ca: {secretName: ops-ca}}
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: web, namespace: default}
spec:
  secretName: web-tls
  dnsNames: [web.example.com]
  duration: 2160h
  issuerRef: {name: ops-ca, kind: ClusterIssuer}
`)
	e.RunUntilIdle(worker, signer, 200)
	var found bool
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var doc map[string]any
		if err := json.Unmarshal([]byte(line), &doc); err != nil {
			t.Fatalf("not JSON: %q", line)
		}
		if _, ok := doc["_aws"]; !ok || doc["Function"] != "worker" {
			t.Fatalf("not an EMF line of the worker: %q", line)
		}
		if vs, ok := doc["CertificateExpirySeconds"].([]any); ok && len(vs) > 0 {
			if v := vs[0].(float64); v < 89*86400 || v > 90*86400 {
				t.Fatalf("expiry %v s, want about 90 days", v)
			}
			found = true
		}
	}
	if !found {
		t.Fatalf("no CertificateExpirySeconds in the worker's EMF lines:\n%s", out.String())
	}
}

// The function that signs a CertificateSigningRequest with
// spec.expirationSeconds exports KEP-2784's two counters (docs/design/request-duration.md):
// CSRRequestedDuration, and CSRHonoredDuration when the certificate's
// lifetime is the one requested.
func TestSignerExportsCSRDurationMetrics(t *testing.T) {
	e := awstest.New(t)
	e.Vars[awsmode.EnvMetrics] = "emf"
	var out bytes.Buffer
	worker := e.Runtime(app.Worker.Name)
	signer := e.Runtime(app.Signer.Name, func(o *awsmode.Options) { o.Metrics = nil; o.MetricsOut = &out })
	apiFn := e.Runtime(app.API.Name)
	e.InstallSecret(ct.NewCA(t).Secret(t, "cert-manager", "ops-ca"), "ca")
	apply(t, apiFn, "apiVersion: cert-manager.io/v1\nkind: ClusterIssuer\nmetadata: {name: ops-ca}\nspec: {ca: {secretName: ops-ca}}\n")
	e.RunUntilIdle(worker, signer, 200)
	apply(t, apiFn, fmt.Sprintf(`apiVersion: certificates.k8s.io/v1
kind: CertificateSigningRequest
metadata: {name: app}
spec:
  request: %s
  signerName: clusterissuers.cert-manager.io/ops-ca
  expirationSeconds: 3600
  usages: [digital signature, server auth]
`, base64.StdEncoding.EncodeToString(ct.BareCSR(t, "app.example.internal"))))
	e.RunUntilIdle(worker, signer, 200)
	if _, err := apiFn.App.Service.ApproveCSR(e.Ctx, caller, "app", true, "", "", ""); err != nil && !errors.Is(err, app.ErrConflict) {
		t.Fatal(err)
	}
	e.RunUntilIdle(worker, signer, 200)
	got := map[string]float64{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var doc map[string]any
		if err := json.Unmarshal([]byte(line), &doc); err != nil {
			t.Fatalf("not JSON: %q", line)
		}
		for _, m := range []string{"CSRRequestedDuration", "CSRHonoredDuration"} {
			if v, ok := doc[m].(float64); ok && doc["Function"] == "signer" {
				got[m] += v
			}
		}
	}
	if got["CSRRequestedDuration"] != 1 || got["CSRHonoredDuration"] != 1 {
		t.Fatalf("signer's CSR counters %v, want one requested and one honoured:\n%s", got, out.String())
	}
}

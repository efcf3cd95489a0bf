package gcpmode_test

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"testing"

	"cloud.google.com/go/secretmanager/apiv1/secretmanagerpb"

	"github.com/certfn/certfn/adapters/gcp/secretmanager"
	"github.com/certfn/certfn/adapters/httpapi/apitest"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/certificates"
	ct "github.com/certfn/certfn/core/certificates/certtest"
)

// Through the api service's handler: a tenant allowed to manage
// Certificates in its namespace names the key pair of the namespace's CA
// Issuer as its Certificate's secret, with rotationPolicy Never and a
// world-readable file mode: the key pair an operator installed (class ca,
// which the worker cannot even read), and one certfn issued from the
// operator's CA Certificate (class ica). Both stay as they were, and the
// tenant reads why its Certificate is not Ready.
func TestTenantCannotTakeOverAnIssuersSecretThroughTheAPI(t *testing.T) {
	d := newDeployment(t)
	ctx := context.Background()
	all, err := secretmanager.New(d.sm, secretmanager.Options{Project: project})
	if err != nil {
		t.Fatal(err)
	}
	ca := ct.NewCA(t).Secret(t, "team-a", "installed-ca")
	id, err := all.SecretID(secretmanager.ClassCA, "team-a", "installed-ca")
	if err != nil {
		t.Fatal(err)
	}
	payload, _ := json.Marshal(map[string]string{"tls.crt": string(ca.Data["tls.crt"]), "tls.key": string(ca.Data["tls.key"])})
	if _, err := d.sm.CreateSecret(ctx, &secretmanagerpb.CreateSecretRequest{Parent: "projects/" + project, SecretId: id,
		Secret: &secretmanagerpb.Secret{Replication: &secretmanagerpb.Replication{Replication: &secretmanagerpb.Replication_Automatic_{Automatic: &secretmanagerpb.Replication_Automatic{}}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.sm.AddSecretVersion(ctx, &secretmanagerpb.AddSecretVersionRequest{Parent: "projects/" + project + "/secrets/" + id,
		Payload: &secretmanagerpb.SecretPayload{Data: payload}}); err != nil {
		t.Fatal(err)
	}
	operator := apitest.Docs(apitest.Issuer("team-a", "self"), `apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: team-root, namespace: team-a}
spec:
  isCA: true
  commonName: team-a root
  secretName: issued-ca
  privateKey: {algorithm: ECDSA, size: 256}
  issuerRef: {name: self}
`, apitest.CAIssuer("team-a", "installed", "installed-ca"), apitest.CAIssuer("team-a", "issued", "issued-ca"),
		apitest.Grant("team-a-edit", "dev@example.com", "team-a", "cert-manager.io", []string{"certificates"}, []string{"create", "update", "get", "list"}))
	if w := d.do(d.api, "POST", "/v1/apply", "token-ops@example.com", operator); w.Code != 200 {
		t.Fatalf("apply: %d %s", w.Code, w.Body)
	}
	d.settle()
	issued, err := all.Get(ctx, "team-a", "issued-ca")
	if err != nil {
		t.Fatalf("the operator's CA Certificate was not issued: %v", err)
	}
	attack := apitest.Docs(apitest.SecretTakeover("team-a", "grab-installed", "installed-ca", "installed"),
		apitest.SecretTakeover("team-a", "grab-issued", "issued-ca", "issued"))
	if w := d.do(d.api, "POST", "/v1/apply", "token-dev@example.com", attack); w.Code != 200 {
		t.Fatalf("tenant apply: %d %s", w.Code, w.Body)
	}
	d.settle()

	for _, want := range []struct {
		name string
		sec  *secretmanager.Store
		data map[string][]byte
	}{{"installed-ca", all, ca.Data}, {"issued-ca", all, issued.Data}} {
		got, err := want.sec.Get(ctx, "team-a", want.name)
		if err != nil {
			t.Fatal(err)
		}
		if !maps.EqualFunc(got.Data, want.data, bytes.Equal) {
			t.Errorf("secret %s was changed", want.name)
		}
	}
	ids := d.sm.SecretIDs()
	for _, id := range ids {
		if shadow, _ := all.SecretID(secretmanager.ClassTLS, "team-a", "installed-ca"); id == shadow {
			t.Errorf("a tenant's secret %s now shadows the installed CA", id)
		}
	}
	// The issued key pair names its Certificate: the tenant's shares it
	// with an owner (DuplicateSecretName); the installed one is the
	// Issuer's (SecretInUse).
	for name, reason := range map[string]string{"grab-installed": certificates.ReasonSecretInUse, "grab-issued": certificates.ReasonDuplicateSecretName} {
		w := d.do(d.api, "GET", "/v1/namespaces/team-a/certificates/"+name, "token-dev@example.com", "")
		var crt api.Certificate
		if err := json.Unmarshal(w.Body.Bytes(), &crt); w.Code != 200 || err != nil {
			t.Fatalf("get %s: %d %s", name, w.Code, w.Body)
		}
		ready := api.FindCondition(crt.Status.Conditions, api.CertificateConditionReady)
		if ready == nil || ready.Status != api.ConditionFalse || ready.Reason != reason || crt.Status.Revision != nil {
			t.Errorf("%s: Ready = %+v, revision %v; want False, reason %s", name, ready, crt.Status.Revision, reason)
		}
	}
}

// settle drains the topics and sweeps until nothing is left to do.
func (d *deployment) settle() {
	d.t.Helper()
	for i := 0; i < 4; i++ {
		d.drain(false)
		if w := d.do(d.sched, "POST", "/sweep", "", ""); w.Code != 200 {
			d.t.Fatalf("sweep: %d %s", w.Code, w.Body)
		}
	}
	d.drain(false)
}

package awsmode_test

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"testing"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/certfn/certfn/adapters/httpapi"
	"github.com/certfn/certfn/adapters/httpapi/apitest"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/certificates"
	ct "github.com/certfn/certfn/core/certificates/certtest"
	"github.com/certfn/certfn/internal/awsmode"
)

// newFnEnvWith is newFnEnv on a deployment built with settings.
func newFnEnvWith(t *testing.T, settings app.Settings) *fnEnv {
	t.Helper()
	st, err := awsmode.ParseSettings(app.API.Name, env{"CERTFN_TABLE": "t", "CERTFN_QUEUE_URL": "q", "CERTFN_API_ADMINS": adminRole}.get)
	if err != nil {
		t.Fatal(err)
	}
	rt, _ := apitest.RuntimeWith(t, settings)
	h, err := httpapi.New(httpapi.Config{Service: rt.Service, Authenticate: awsmode.IAMAuthenticator(st.APIAdmins), MaxBody: st.APIMaxBody, Logger: apitest.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	return &fnEnv{t: t, rt: rt, h: lambda.NewHandler(awsmode.ServeFunctionURL(h))}
}

// Through the api function's Function URL: a tenant allowed to manage
// Certificates in its namespace names the operator-installed key pair of
// the namespace's CA Issuer as its Certificate's secret, with
// rotationPolicy Never and a world-readable file mode. The key pair stays
// byte for byte as installed, and the tenant reads why its Certificate is
// not Ready.
func TestTenantCannotTakeOverAnIssuersSecretThroughTheAPI(t *testing.T) {
	// Every request approved: the attack needs no policy's help.
	e := newFnEnvWith(t, app.Settings{AutoApprove: []string{"*"}})
	ctx := context.Background()
	yaml := "application/yaml"
	installed := ct.NewCA(t).Secret(t, "team-a", "ca-key-pair")
	if err := e.rt.Secrets.Put(ctx, installed); err != nil {
		t.Fatal(err)
	}
	e.must(200, req{method: "POST", path: "/v1/apply", ctype: yaml, arn: adminRole, body: apitest.Docs(apitest.CAIssuer("team-a", "ca", "ca-key-pair"),
		apitest.Grant("team-a-edit", ciRole, "team-a", "cert-manager.io", []string{"certificates"}, []string{"create", "update", "get", "list"}))})
	e.must(200, req{method: "POST", path: "/v1/apply", ctype: yaml, arn: ciSession, body: apitest.SecretTakeover("team-a", "grab", "ca-key-pair", "ca")})
	if _, err := e.rt.RunUntilIdle(ctx, 0); err != nil {
		t.Fatal(err)
	}

	got, err := e.rt.Secrets.Get(ctx, "team-a", "ca-key-pair")
	if err != nil {
		t.Fatal(err)
	}
	if !maps.EqualFunc(got.Data, installed.Data, bytes.Equal) || len(got.Annotations) != 0 {
		t.Fatalf("the CA key pair was changed: annotations %v", got.Annotations)
	}
	resp := e.must(200, req{method: "GET", path: "/v1/namespaces/team-a/certificates/grab", arn: ciSession})
	var crt api.Certificate
	if err := json.Unmarshal([]byte(resp.Body), &crt); err != nil {
		t.Fatal(err)
	}
	ready := api.FindCondition(crt.Status.Conditions, api.CertificateConditionReady)
	if ready == nil || ready.Status != api.ConditionFalse || ready.Reason != certificates.ReasonSecretInUse || crt.Status.Revision != nil {
		t.Fatalf("Ready = %+v, revision %v; want False, reason %s", ready, crt.Status.Revision, certificates.ReasonSecretInUse)
	}
}

package awsmode_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	sm "github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/certfn/certfn/adapters/httpapi"
	"github.com/certfn/certfn/adapters/httpapi/apitest"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	ct "github.com/certfn/certfn/core/certificates/certtest"
	"github.com/certfn/certfn/core/errs"
	"github.com/certfn/certfn/core/rbac"
	"github.com/certfn/certfn/internal/awsmode"
)

const (
	account   = "123456789012"
	ciRole    = "arn:aws:iam::123456789012:role/ci"
	ciSession = "arn:aws:sts::123456789012:assumed-role/ci/build-42"
	adminRole = "arn:aws:iam::123456789012:role/platform-admin"
	mallory   = "arn:aws:iam::123456789012:user/mallory"
)

// payload is a Function URL event as Lambda delivers it (BUFFERED, AWS_IAM
// auth); {{AUTHORIZER}} is replaced by the authorizer block or nothing.
const payload = `{
  "version": "2.0",
  "rawPath": {{PATH}},
  "rawQueryString": {{QUERY}},
  "headers": {
    "content-type": {{CTYPE}},
    "host": "abcdefghijklmnopqrstuvwxyz012345.lambda-url.eu-west-1.on.aws",
    "x-amz-date": "20260301T120000Z",
    "x-amz-content-sha256": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "x-forwarded-proto": "https",
    "x-certfn-user": "admin",
    "user-agent": "certfn"
  },
  "requestContext": {
    "accountId": "123456789012",
    "apiId": "abcdefghijklmnopqrstuvwxyz012345",
    {{AUTHORIZER}}
    "domainName": "abcdefghijklmnopqrstuvwxyz012345.lambda-url.eu-west-1.on.aws",
    "domainPrefix": "abcdefghijklmnopqrstuvwxyz012345",
    "http": {
      "method": {{METHOD}},
      "path": {{PATH}},
      "protocol": "HTTP/1.1",
      "sourceIp": "198.51.100.7",
      "userAgent": "certfn"
    },
    "requestId": "4f2c7a3e-0000-4000-8000-000000000000",
    "time": "01/Mar/2026:12:00:00 +0000",
    "timeEpoch": 1772366400000
  },
  "body": {{BODY}},
  "isBase64Encoded": {{B64}}
}`

const authorizer = `"authorizer": {
      "iam": {
        "accessKey": "ASIAEXAMPLEEXAMPLE",
        "accountId": "123456789012",
        "callerId": {{USERID}},
        "cognitoIdentity": null,
        "principalOrgId": null,
        "userArn": {{ARN}},
        "userId": {{USERID}}
      }
    },`

// req describes one event.
type req struct {
	method, path, query, ctype, body string
	arn                              string // "" = no authorizer block
	b64                              bool
}

func js(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func (r req) json() []byte {
	body := r.body
	if r.b64 {
		body = base64.StdEncoding.EncodeToString([]byte(body))
	}
	auth := ""
	if r.arn != "" {
		userID := "AIDAEXAMPLE"
		if strings.Contains(r.arn, ":assumed-role/") {
			userID = "AROAEXAMPLE:" + r.arn[strings.LastIndex(r.arn, "/")+1:]
		}
		auth = strings.NewReplacer("{{ARN}}", js(r.arn), "{{USERID}}", js(userID)).Replace(authorizer)
	}
	b64 := "false"
	if r.b64 {
		b64 = "true"
	}
	return []byte(strings.NewReplacer("{{PATH}}", js(r.path), "{{QUERY}}", js(r.query), "{{CTYPE}}", js(r.ctype), "{{METHOD}}", js(r.method),
		"{{AUTHORIZER}}", auth, "{{BODY}}", js(body), "{{B64}}", b64).Replace(payload))
}

type fnEnv struct {
	t  *testing.T
	rt *apitest.Deployment
	h  lambda.Handler
}

// newFnEnv runs the api function's Function URL handler on an in-memory
// deployment, with
// adminRole in CERTFN_API_ADMINS, a 16 KiB body limit, and ciRole bound to
// create, get and list certificates and requests everywhere.
func newFnEnv(t *testing.T) *fnEnv {
	t.Helper()
	st, err := awsmode.ParseSettings(app.API.Name, env{"CERTFN_TABLE": "t", "CERTFN_QUEUE_URL": "q", "CERTFN_API_MAX_BODY": "16384", "CERTFN_API_ADMINS": adminRole}.get)
	if err != nil {
		t.Fatal(err)
	}
	rt, _ := apitest.Runtime(t)
	h, err := httpapi.New(httpapi.Config{Service: rt.Service, Authenticate: awsmode.IAMAuthenticator(st.APIAdmins), MaxBody: st.APIMaxBody, Logger: apitest.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	e := &fnEnv{t: t, rt: rt, h: lambda.NewHandler(awsmode.ServeFunctionURL(h))}
	return e
}

// invoke sends the event's JSON through the Lambda handler, as the runtime does.
func (e *fnEnv) invoke(r req) events.LambdaFunctionURLResponse {
	e.t.Helper()
	out, err := e.h.Invoke(context.Background(), r.json())
	if err != nil {
		e.t.Fatalf("invoke %s %s: %v", r.method, r.path, err)
	}
	var resp events.LambdaFunctionURLResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		e.t.Fatalf("response: %v: %s", err, out)
	}
	if resp.Headers["content-type"] != "application/json" {
		e.t.Fatalf("%s %s: content-type %q", r.method, r.path, resp.Headers["content-type"])
	}
	return resp
}

func (e *fnEnv) must(code int, r req) events.LambdaFunctionURLResponse {
	e.t.Helper()
	resp := e.invoke(r)
	if resp.StatusCode != code {
		e.t.Fatalf("%s %s as %q: %d %s, want %d", r.method, r.path, r.arn, resp.StatusCode, resp.Body, code)
	}
	return resp
}

type env map[string]string

func (e env) get(k string) string { return e[k] }

// A Function URL request with an IAM identity passes through the bindings:
// the first bindings come from an admin (CERTFN_API_ADMINS), then an
// assumed role bound by a ClusterRoleBinding creates a request recorded
// with its role as requester; other identities are refused.
func TestFunctionURLIdentityAndBindings(t *testing.T) {
	e := newFnEnv(t)
	yaml := "application/yaml"
	bindings := apitest.Docs(apitest.Issuer("team-a", "ss"),
		apitest.Grant("ci-requester", ciRole, "", "cert-manager.io", []string{"certificaterequests", "certificates"}, []string{"create", "get", "list"}))

	// Nobody else may create the first bindings.
	e.must(403, req{method: "POST", path: "/v1/apply", ctype: yaml, body: bindings, arn: ciSession})
	e.must(200, req{method: "POST", path: "/v1/apply", ctype: yaml, body: bindings, arn: adminRole})

	// The CI role's session creates a request; the requester is its role.
	cr := apitest.Request(t, "team-a", "build-42", "ss", "build.example.com")
	resp := e.must(200, req{method: "POST", path: "/v1/apply", ctype: yaml, body: cr, arn: ciSession})
	if !strings.Contains(resp.Body, `"action":"created"`) {
		t.Fatalf("apply: %s", resp.Body)
	}
	resp = e.must(200, req{method: "GET", path: "/v1/namespaces/team-a/certificaterequests/build-42", arn: ciSession})
	var got api.CertificateRequest
	if err := json.Unmarshal([]byte(resp.Body), &got); err != nil {
		t.Fatal(err)
	}
	s := got.Spec
	if s.Username != ciRole || s.UID != "AROAEXAMPLE:build-42" || !contains(s.Groups, "aws:account:"+account) || !contains(s.Groups, rbac.GroupAuthenticated) ||
		contains(s.Groups, app.SuperuserGroup) || s.Extra[rbac.ExtraAWSSessionName][0] != "build-42" || s.Extra[rbac.ExtraAWSPrincipalARN][0] != ciSession {
		t.Fatalf("requester identity: %+v", s)
	}
	// The query string reaches the handler.
	resp = e.must(200, req{method: "GET", path: "/v1/certificaterequests", query: "namespace=team-a", arn: ciSession})
	if !strings.Contains(resp.Body, `"name":"build-42"`) {
		t.Fatalf("list: %s", resp.Body)
	}

	for _, tc := range []struct {
		name string
		r    req
		code int
		msg  string
	}{
		{"no authorizer (a header names admin)", req{method: "GET", path: "/v1/certificaterequests"}, 401,
			"unauthenticated: no IAM identity in the request context (the Function URL must use AWS_IAM auth"},
		{"unusable ARN", req{method: "GET", path: "/v1/certificaterequests", arn: "arn:aws:iam::123:user/x"}, 401,
			`unauthenticated: aws principal "arn:aws:iam::123:user/x": account "123" is not a 12-digit account id`},
		{"unbound user", req{method: "GET", path: "/v1/namespaces/team-a/certificaterequests/build-42", arn: mallory}, 403,
			`arn:aws:iam::123456789012:user/mallory may not get CertificateRequest/team-a/build-42`},
		{"bound role, other verb", req{method: "DELETE", path: "/v1/namespaces/team-a/certificaterequests/build-42", arn: ciSession}, 403,
			`arn:aws:iam::123456789012:role/ci may not delete CertificateRequest/team-a/build-42`},
		{"bound role, other kind", req{method: "POST", path: "/v1/apply", ctype: yaml, body: apitest.Issuer("team-a", "mine"), arn: ciSession}, 403,
			`may not create or update Issuer/team-a/mine`},
		{"an Order is never written through the API, not even by an admin", req{method: "POST", path: "/v1/apply", ctype: yaml,
			body: "apiVersion: acme.cert-manager.io/v1\nkind: Order\nmetadata: {name: o, namespace: team-a}\nspec: {request: \"\", issuerRef: {name: ss}, dnsNames: [x.example.com]}\n",
			arn:  adminRole}, 403, "orders are created and changed only by certfn's ACME issuer"},
		{"approval needs approve on the signer", req{method: "POST", path: "/v1/namespaces/team-a/certificaterequests/build-42/approval",
			ctype: "application/json", body: `{"approve": true}`, arn: ciSession}, 403, `may not approve or deny requests for signer`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := e.must(tc.code, tc.r)
			var b struct{ Error string }
			if err := json.Unmarshal([]byte(resp.Body), &b); err != nil || !strings.Contains(b.Error, tc.msg) {
				t.Fatalf("error %q (%v), want it to contain %q", b.Error, err, tc.msg)
			}
		})
	}
	if n, _ := e.rt.Repo.List(context.Background(), api.KindIssuer, ""); len(n) != 1 {
		t.Fatalf("a refused apply stored an issuer: %d", len(n))
	}
}

// Bad input: oversized, malformed or undecodable bodies.
func TestFunctionURLBadInput(t *testing.T) {
	e := newFnEnv(t)
	issuer := apitest.Issuer("default", "ss")
	for _, tc := range []struct {
		name string
		r    req
		code int
		msg  string
	}{
		{"base64 body", req{method: "POST", path: "/v1/apply", ctype: "application/yaml", body: issuer, b64: true}, 200, ""},
		{"invalid base64", req{method: "POST", path: "/v1/apply", ctype: "application/yaml", body: "%%%"}, 400, "body: invalid base64"},
		{"oversized", req{method: "POST", path: "/v1/apply", ctype: "application/yaml", body: issuer + "# " + strings.Repeat("x", 17<<10) + "\n"}, 413,
			"request body is larger than the limit of 16384 bytes"},
		{"malformed JSON", req{method: "POST", path: "/v1/apply", ctype: "application/json", body: `{"apiVersion": "cert-manager.io/v1", "kind"`}, 400, "body: "},
		{"invalid manifest", req{method: "POST", path: "/v1/apply", ctype: "application/yaml", body: apitest.Certificate("default", "c", "ss", "a..b")},
			422, "spec.dnsNames[0]"},
		{"no method", req{path: "/v1/certificates"}, 400, "requestContext.http.method: missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.r.arn = adminRole
			if tc.name == "invalid base64" {
				tc.r.b64 = false
				raw := tc.r.json()
				raw = bytes.Replace(raw, []byte(`"isBase64Encoded": false`), []byte(`"isBase64Encoded": true`), 1)
				out, err := e.h.Invoke(context.Background(), raw)
				if err != nil {
					t.Fatal(err)
				}
				var resp events.LambdaFunctionURLResponse
				if err := json.Unmarshal(out, &resp); err != nil || resp.StatusCode != 400 || !strings.Contains(resp.Body, tc.msg) {
					t.Fatalf("%v %+v", err, resp)
				}
				return
			}
			resp := e.must(tc.code, tc.r)
			if tc.code != 200 {
				var b struct{ Error, Reason string }
				if err := json.Unmarshal([]byte(resp.Body), &b); err != nil || !strings.Contains(b.Error, tc.msg) || b.Reason == "" {
					t.Fatalf("error %q reason %q (%v), want it to contain %q", b.Error, b.Reason, err, tc.msg)
				}
			}
		})
	}
}

func TestAPISettingsFromEnv(t *testing.T) {
	base := env{"CERTFN_TABLE": "certfn-state", "CERTFN_QUEUE_URL": "https://sqs.eu-west-1.amazonaws.com/123456789012/certfn-worker"}
	with := func(kv ...string) env {
		e := env{}
		for k, v := range base {
			e[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			e[kv[i]] = kv[i+1]
		}
		return e
	}
	for _, tc := range []struct {
		name  string
		env   env
		want  string // error substring; "" = valid
		check func(awsmode.Settings) bool
	}{
		{"defaults", base, "", func(c awsmode.Settings) bool {
			return c.Table == "certfn-state" && c.DueShards == 16 && c.APIMaxBody == 1<<20 && c.APIAdmins == nil && c.ClusterResourceNamespace == "cert-manager"
		}},
		{"all set", with("CERTFN_FUNCTION", "api", "CERTFN_DUE_SHARDS", "32", "CERTFN_API_MAX_BODY", "65536", "CERTFN_CLUSTER_RESOURCE_NAMESPACE", "certs", "CERTFN_LOG_LEVEL", "debug",
			"CERTFN_API_ADMINS", adminRole+", arn:aws:iam::123456789012:user/alice"), "", func(c awsmode.Settings) bool {
			return c.DueShards == 32 && c.APIMaxBody == 65536 && c.ClusterResourceNamespace == "certs" && len(c.APIAdmins) == 2 && c.APIAdmins[adminRole]
		}},
		{"other function", with("CERTFN_FUNCTION", "worker"), `CERTFN_FUNCTION: "worker": this binary is the api function`, nil},
		{"no table", with("CERTFN_TABLE", ""), "CERTFN_TABLE: required", nil},
		{"no queue", with("CERTFN_QUEUE_URL", " "), "CERTFN_QUEUE_URL: required", nil},
		{"bad shards", with("CERTFN_DUE_SHARDS", "many"), `CERTFN_DUE_SHARDS`, nil},
		{"bad log level", with("CERTFN_LOG_LEVEL", "loud"), `CERTFN_LOG_LEVEL: "loud" is not a log level`, nil},
		{"zero body", with("CERTFN_API_MAX_BODY", "0"), `CERTFN_API_MAX_BODY: "0": want a number of bytes from 1 to 6291456`, nil},
		{"huge body", with("CERTFN_API_MAX_BODY", "7000000"), `CERTFN_API_MAX_BODY: "7000000"`, nil},
		{"bad admin", with("CERTFN_API_ADMINS", adminRole+",bob"), `CERTFN_API_ADMINS[1]: aws principal "bob"`, nil},
		{"session admin", with("CERTFN_API_ADMINS", ciSession), `CERTFN_API_ADMINS[0]: "arn:aws:sts::123456789012:assumed-role/ci/build-42" is a session: name its role, arn:aws:iam::123456789012:role/ci`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := awsmode.ParseSettings(app.API.Name, tc.env.get)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("error: %v", err)
			case tc.want == "" && !tc.check(c):
				t.Fatalf("config %+v", c)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := awsmode.FromEnvWith(context.Background(), app.API.Name, awsmode.Options{Getenv: with("CERTFN_TABLE", "").get, Logger: apitest.Discard()}); err == nil || !strings.Contains(err.Error(), "CERTFN_TABLE") {
		t.Fatalf("setup with a bad environment: %v", err)
	}
}

// The api function's deployment: an engine on the table and the worker
// queue, with the SQS delay limit, and a secret store that refuses.
func TestAPIRuntimeChecksConfig(t *testing.T) {
	cfg := awsConfigForTest()
	o := awsmode.Options{Logger: apitest.Discard(), DynamoDB: dynamodb.NewFromConfig(cfg), SQS: sqs.NewFromConfig(cfg), SecretsManager: sm.NewFromConfig(cfg)}
	for _, tc := range []struct {
		env  env
		want string
	}{
		{env{"CERTFN_TABLE": "", "CERTFN_QUEUE_URL": "q"}, "table"},
		{env{"CERTFN_TABLE": "t", "CERTFN_QUEUE_URL": ""}, "CERTFN_QUEUE_URL"},
	} {
		o.Getenv = tc.env.get
		if _, err := awsmode.FromEnvWith(context.Background(), app.API.Name, o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("%v: %v, want %q", tc.env, err, tc.want)
		}
	}
	o.Getenv = env{"CERTFN_TABLE": "t", "CERTFN_QUEUE_URL": "https://sqs.example/q"}.get
	rt, err := awsmode.FromEnvWith(context.Background(), app.API.Name, o)
	if err != nil || rt.Kernel == nil || rt.API == nil {
		t.Fatalf("valid config: %v", err)
	}
	e := rt.App
	if e.Wiring().ClusterResourceNamespace != "cert-manager" || e.Wiring().MaxQueueDelay != 15*time.Minute {
		t.Fatalf("cluster resource namespace %q", e.Wiring().ClusterResourceNamespace)
	}
	if _, err := e.Wiring().Secrets.Get(context.Background(), "x", "y"); err == nil || !errs.IsPermanent(err) || !strings.Contains(err.Error(), "the secret store is not part of this role") {
		t.Fatalf("the engine's secret store reads: %v", err)
	}
}

func awsConfigForTest() aws.Config {
	return aws.Config{Region: "eu-west-1", Credentials: credentials.NewStaticCredentialsProvider("AKID", "secret", "")}
}

// A CSR whose subjectAltName hides an IP address (an iPAddress encoded as
// constructed, which crypto/x509 skips and OpenSSL reads) is refused at
// apply by the api function, as a CertificateSigningRequest and as a
// CertificateRequest, with a message naming spec.request and the rule;
// nothing is stored.
func TestFunctionURLRefusesHiddenSANEntries(t *testing.T) {
	e := newFnEnv(t)
	csr := ct.HiddenIPCSR(t, "web.team-a.example.com")
	for _, m := range []string{
		apitest.SigningRequest("hidden-ip", "issuers.cert-manager.io/default.ss", csr),
		apitest.RequestWithCSR("default", "hidden-ip", "ss", csr),
	} {
		resp := e.must(422, req{method: "POST", path: "/v1/apply", ctype: "application/yaml", body: m, arn: adminRole})
		var b struct{ Error string }
		if err := json.Unmarshal([]byte(resp.Body), &b); err != nil ||
			!strings.Contains(b.Error, "spec.request") || !strings.Contains(b.Error, "subjectAltName entry 2 (iPAddress): is encoded as constructed") {
			t.Fatalf("error %q (%v), want spec.request and the constructed iPAddress named", b.Error, err)
		}
	}
	for _, path := range []string{"/v1/certificatesigningrequests/hidden-ip", "/v1/namespaces/default/certificaterequests/hidden-ip"} {
		e.must(404, req{method: "GET", path: path, arn: adminRole})
	}
}

// Through the api function's Function URL handler: a CSR's cert-manager
// annotations cannot be changed by a re-apply (422 naming the field), and
// an approval with a stale resourceVersion is 409 (apitest.CSRApprovalChecks).
func TestFunctionURLCSRApprovalAppliesToWhatWasReviewed(t *testing.T) {
	e := newFnEnv(t)
	apitest.CSRApprovalChecks(t, func(method, path, ctype, body string) (int, string) {
		resp := e.invoke(req{method: method, path: path, ctype: ctype, body: body, arn: adminRole})
		return resp.StatusCode, resp.Body
	}, "reviewed")
}

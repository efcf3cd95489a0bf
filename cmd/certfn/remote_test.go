package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/certfn/certfn/adapters/httpapi"
	"github.com/certfn/certfn/adapters/httpapi/apitest"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/rbac"
)

// Test principals: access key id → secret and identity.
const (
	adminKey, adminSecret = "AKIDADMIN", "admin-secret"
	aliceKey, aliceSecret = "AKIDALICE", "alice-secret"
	aliceARN              = "arn:aws:iam::123456789012:user/alice"
	testRegion            = "eu-west-1"
)

type principal struct {
	secret string
	caller app.Caller
}

var sigv4Header = regexp.MustCompile(`^AWS4-HMAC-SHA256 Credential=([A-Z0-9]+)/(\d{8})/([a-z0-9-]+)/lambda/aws4_request, SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})$`)

// sigv4Auth stands in for a Function URL's AWS_IAM auth: it checks that the
// Authorization header is a well-formed SigV4 signature for the service
// "lambda" and verifies it by signing the same request again with the
// principal's secret.
func sigv4Auth(t *testing.T, principals map[string]principal) func(*http.Request) (app.Caller, error) {
	return func(r *http.Request) (app.Caller, error) {
		fail := func(format string, a ...any) (app.Caller, error) {
			return app.Caller{}, fmt.Errorf("%w: %s", httpapi.ErrUnauthenticated, fmt.Sprintf(format, a...))
		}
		auth := r.Header.Get("Authorization")
		if auth == "" {
			return fail("no Authorization header")
		}
		m := sigv4Header.FindStringSubmatch(auth)
		if m == nil {
			return fail("malformed SigV4 Authorization header %q", auth)
		}
		akid, region, signed := m[1], m[3], strings.Split(m[4], ";")
		p, ok := principals[akid]
		if !ok {
			return fail("unknown access key %s", akid)
		}
		date, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
		if err != nil || date.Format("20060102") != m[2] {
			return fail("X-Amz-Date %q does not match the credential scope", r.Header.Get("X-Amz-Date"))
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return fail("read body: %v", err)
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		sum := sha256.Sum256(body)
		hash := hex.EncodeToString(sum[:])
		if r.Header.Get("X-Amz-Content-Sha256") != hash {
			return fail("X-Amz-Content-Sha256 does not match the body")
		}
		for _, h := range []string{"host", "x-amz-date", "x-amz-content-sha256"} {
			if !contains(signed, h) {
				return fail("%s is not signed", h)
			}
		}
		again, err := http.NewRequest(r.Method, "http://"+r.Host+r.URL.RequestURI(), nil)
		if err != nil {
			return fail("rebuild request: %v", err)
		}
		again.ContentLength = r.ContentLength
		for _, h := range signed {
			if h != "host" && h != "content-length" {
				again.Header[textproto.CanonicalMIMEHeaderKey(h)] = r.Header.Values(h)
			}
		}
		err = v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: akid, SecretAccessKey: p.secret}, again, hash, "lambda", region, date)
		if err != nil {
			t.Errorf("re-sign: %v", err)
			return fail("re-sign: %v", err)
		}
		if again.Header.Get("Authorization") != auth {
			return fail("the signature does not match")
		}
		return p.caller, nil
	}
}

func contains(l []string, s string) bool {
	for _, v := range l {
		if v == s {
			return true
		}
	}
	return false
}

// remoteEnv is an API server on a local runtime (fake clock) and the AWS
// environment of a CLI that uses it.
type remoteEnv struct {
	t   *testing.T
	rt  *apitest.Deployment
	srv *httptest.Server
}

func newRemoteEnv(t *testing.T) *remoteEnv {
	t.Helper()
	setupEnv(t)
	rt, _ := apitest.Runtime(t)
	alice, err := rbac.FromAWSARN(aliceARN)
	if err != nil {
		t.Fatal(err)
	}
	principals := map[string]principal{
		adminKey: {adminSecret, app.Caller{Username: "arn:aws:iam::123456789012:role/admin", Groups: []string{app.SuperuserGroup}}},
		aliceKey: {aliceSecret, app.Caller{Username: alice.Username, Groups: alice.Groups, Extra: alice.Extra}},
	}
	h, err := httpapi.New(httpapi.Config{Service: rt.Service, Authenticate: sigv4Auth(t, principals), Logger: apitest.Discard(), MaxBody: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	// The SDK's default chain must find exactly these credentials.
	none := filepath.Join(t.TempDir(), "none")
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": adminKey, "AWS_SECRET_ACCESS_KEY": adminSecret, "AWS_SESSION_TOKEN": "",
		"AWS_REGION": testRegion, "AWS_DEFAULT_REGION": "", "AWS_PROFILE": "", "AWS_CONFIG_FILE": none,
		"AWS_SHARED_CREDENTIALS_FILE": none, "AWS_EC2_METADATA_DISABLED": "true", "AWS_CONTAINER_CREDENTIALS_FULL_URI": "",
		"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "", "AWS_WEB_IDENTITY_TOKEN_FILE": "", "CERTFN_SERVER": srv.URL,
	} {
		t.Setenv(k, v)
	}
	return &remoteEnv{t: t, rt: rt, srv: srv}
}

// as switches the CLI's credentials.
func (e *remoteEnv) as(key, secret string) {
	e.t.Setenv("AWS_ACCESS_KEY_ID", key)
	e.t.Setenv("AWS_SECRET_ACCESS_KEY", secret)
}

// run runs certfn in remote mode (CERTFN_SERVER) with an unused --data.
func (e *remoteEnv) run(stdin string, args ...string) result {
	e.t.Helper()
	return cli(e.t, filepath.Join(e.t.TempDir(), "unused"), stdin, args...)
}

func (e *remoteEnv) ok(args ...string) string {
	e.t.Helper()
	r := e.run("", args...)
	if r.code != 0 {
		e.t.Fatalf("certfn %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

func (e *remoteEnv) process() {
	e.t.Helper()
	if _, err := e.rt.RunUntilIdle(context.Background(), 2); err != nil {
		e.t.Fatal(err)
	}
}

// Every verb works in remote mode as it does locally.
func TestRemoteVerbs(t *testing.T) {
	e := newRemoteEnv(t)
	other := strings.ReplaceAll(appCert, "app", "other")
	r := e.run(selfSignedIssuer+"---\n"+appCert+"---\n"+other, "apply", "-f", "-")
	want := "issuer.cert-manager.io/selfsigned (default) created\ncertificate.cert-manager.io/app (default) created\ncertificate.cert-manager.io/other (default) created\n"
	if r.code != 0 || r.stdout != want {
		t.Fatalf("apply: %+v", r)
	}
	if r := e.run(appCert, "apply", "-f", "-", "-n", "team-b"); r.code != 0 || r.stdout != "certificate.cert-manager.io/app (team-b) created\n" {
		t.Fatalf("apply -n: %+v", r)
	}
	// Every example (policies, RBAC, CA issuers) survives the trip as JSON.
	local := ok(t, t.TempDir(), "--server", "", "apply", "-f", "../../examples")
	if remote := e.ok("apply", "-f", "../../examples"); remote != local {
		t.Fatalf("apply examples: remote\n%s\nlocal\n%s", remote, local)
	}
	e.ok("delete", "-f", "../../examples")
	out := e.ok("get", "certificates", "-A")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 4 || !strings.HasPrefix(lines[0], "NAMESPACE") || !strings.Contains(out, "team-b") {
		t.Fatalf("get -A:\n%s", out)
	}
	// Chunks of one: three pages through limit and continue.
	if chunked := e.ok("get", "certificates", "-A", "--chunk-size", "1"); strings.Count(chunked, "NAMESPACE") != 1 || len(strings.Split(strings.TrimSpace(chunked), "\n")) != 4 {
		t.Fatalf("get -A --chunk-size 1:\n%s", chunked)
	}
	if out := e.ok("get", "certificates"); strings.Contains(out, "team-b") || !strings.Contains(out, "other") {
		t.Fatalf("get in default:\n%s", out)
	}
	var one map[string]any
	if err := json.Unmarshal([]byte(e.ok("get", "certificate", "app", "-o", "json")), &one); err != nil || one["kind"] != "Certificate" {
		t.Fatalf("get -o json: %v %v", err, one)
	}

	e.process() // no auto-approval, no policy: the requests wait
	if out := e.ok("get", "cr", "-o", "wide"); !strings.Contains(out, "app-1") || !strings.Contains(out, "no policy applies") {
		t.Fatalf("requests not pending:\n%s", out)
	}
	if out := e.ok("deny", "app-1", "--reason", "Nope", "--message", "not today"); out != "certificaterequest.cert-manager.io/app-1 (default) denied\n" {
		t.Fatalf("deny: %q", out)
	}
	failsWith(t, e.run("", "approve", "app-1"), "already Denied")
	if out := e.ok("approve", "other-1"); out != "certificaterequest.cert-manager.io/other-1 (default) approved\n" {
		t.Fatalf("approve: %q", out)
	}
	failsWith(t, e.run("", "approve", "missing-1"), "not found")
	e.process()

	s := e.ok("status", "certificate", "other")
	for _, want := range []string{"Ready: ", "Certificate: default/other (generation 1, revision 1)", `Issuer: Issuer "selfsigned"`,
		"Secret: default/other-tls — not read (the API never reads the secret store", "CertificateRequest: default/other-1 (revision 1, requester system:serviceaccount:cert-manager:cert-manager)",
		"Approved=True (KubectlCertManager) manually approved by arn:aws:iam::123456789012:role/admin"} {
		if !strings.Contains(s, want) {
			t.Errorf("status lacks %q:\n%s", want, s)
		}
	}
	if s := e.ok("status", "certificate", "app"); !strings.HasPrefix(s, "Not ready: ") || !strings.Contains(s, "not today") {
		t.Fatalf("denied certificate status:\n%s", s)
	}
	failsWith(t, e.run("", "status", "certificate", "nope"), "certificate.cert-manager.io/nope (default) not found")

	if out := e.ok("wait", "certificate", "other", "--timeout", "5s"); !strings.Contains(out, "condition met: Ready=True") {
		t.Fatalf("wait: %q", out)
	}
	if out := e.ok("renew", "other"); out != "Manually triggered issuance of certificate.cert-manager.io/other (default)\n" {
		t.Fatalf("renew: %q", out)
	}
	if out := e.ok("renew", "other"); !strings.HasPrefix(out, "certificate.cert-manager.io/other (default) is already being issued: woke Certificate/default/other") {
		t.Fatalf("renew again: %q", out)
	}
	failsWith(t, e.run("", "renew", "nope"), "not found")
	// --all lists remotely, then renews each; one already issuing
	// (team-b/app waits for approval) is reported and its issuance woken,
	// and the command goes on, as certbot's renew goes on past a
	// certificate it cannot renew now.
	if out := e.ok("renew", "--all", "-n", "team-b"); !strings.Contains(out, "certificate.cert-manager.io/app (team-b) is already being issued: woke Certificate/team-b/app, CertificateRequest/team-b/app-1") {
		t.Fatalf("renew --all: %q", out)
	}

	if out := e.ok("delete", "certificate", "app", "-n", "team-b"); out != "certificate.cert-manager.io/app (team-b) deleted\n" {
		t.Fatalf("delete: %q", out)
	}
	failsWith(t, e.run("", "get", "certificate", "app", "-n", "team-b"), "certificate.cert-manager.io/app (team-b) not found")
	failsWith(t, e.run("", "delete", "certificate", "app", "-n", "team-b"), "certificate.cert-manager.io/app (team-b) not found")
}

// Invalid input and refused identities fail with one clear error line.
func TestRemoteErrors(t *testing.T) {
	e := newRemoteEnv(t)
	e.ok("apply", "-f", writeFile(t, t.TempDir(), "i.yaml", selfSignedIssuer+"---\n"+
		apitest.Grant("reader", aliceARN, "default", "cert-manager.io", []string{"certificates"}, []string{"get", "list"})))

	for _, tc := range []struct {
		name, stdin string
		args        []string
		env         map[string]string
		want        string
	}{
		{"invalid SAN", strings.Replace(appCert, "[app.example.com]", "[app.example.com, a..b]", 1), []string{"apply", "-f", "-"}, nil, "spec.dnsNames[1]"},
		{"one bad document of two", appCert + "---\n" + strings.Replace(appCert, "size: 256", "size: 255", 1), []string{"apply", "-f", "-"}, nil, "spec.privateKey.size"},
		{"unknown field (decoded by the CLI)", strings.Replace(appCert, "secretName:", "secretNme:", 1), []string{"apply", "-f", "-"}, nil, "spec.secretNme: unknown field"},
		{"too large for the server", strings.Replace(appCert, "metadata: {", "metadata: {annotations: {big: "+strings.Repeat("x", 70<<10)+"}, ", 1),
			[]string{"apply", "-f", "-"}, nil, "request body is larger than the limit of 65536 bytes"},
		{"wrong secret", "", []string{"get", "certificates"}, map[string]string{"AWS_SECRET_ACCESS_KEY": "wrong"},
			"the server refused the credentials (401): unauthenticated: the signature does not match"},
		{"unknown access key", "", []string{"get", "certificates"}, map[string]string{"AWS_ACCESS_KEY_ID": "AKIDNOBODY"},
			"(401): unauthenticated: unknown access key AKIDNOBODY"},
		{"no credentials", "", []string{"get", "certificates"}, map[string]string{"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": ""}, "AWS credentials: "},
		{"forbidden namespace", "", []string{"get", "certificates", "-n", "team-b"}, map[string]string{"AWS_ACCESS_KEY_ID": aliceKey, "AWS_SECRET_ACCESS_KEY": aliceSecret},
			`forbidden: arn:aws:iam::123456789012:user/alice may not list Certificate/team-b/`},
		{"forbidden create", appCert, []string{"apply", "-f", "-"}, map[string]string{"AWS_ACCESS_KEY_ID": aliceKey, "AWS_SECRET_ACCESS_KEY": aliceSecret},
			"may not create or update Certificate/default/app"},
		{"--as with --server", "", []string{"--as", "bob", "get", "certificates"}, nil, "--as and --as-group are local-only"},
		{"serve", "", []string{"serve", "--until-idle"}, nil, "serve is local-only"},
		{"inspect", "", []string{"inspect", "secret", "app-tls"}, nil, "inspect secret is local-only (not available with --server): secrets are read from the cloud secret store"},
		{"bad server URL", "", []string{"--server", "lambda-url.example", "get", "certificates"}, nil, `--server "lambda-url.example": want an http(s) URL`},
		{"no region", "", []string{"get", "certificates"}, map[string]string{"AWS_REGION": ""}, "no AWS region to sign with: pass --region or set AWS_REGION"},
		{"not certfn", "", []string{"--server", notCertfn(t).URL, "get", "certificates"}, nil,
			`answered 403 Forbidden: {"Message":"Forbidden"} (the Function URL refused the request: check the signature's region and that your principal may lambda:InvokeFunctionUrl)`},
		{"server down", "", []string{"--server", "http://127.0.0.1:1", "get", "certificates"}, nil, "server http://127.0.0.1:1: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			failsWith(t, e.run(tc.stdin, tc.args...), tc.want)
		})
	}
	// The refused applies stored nothing; alice may read what she is bound to.
	e.as(aliceKey, aliceSecret)
	if out := e.ok("get", "certificates"); out != "No certificates found.\n" {
		t.Fatalf("get as alice: %q", out)
	}
	// An explicit --region is used for signing (the verifier accepts any region).
	e.as(adminKey, adminSecret)
	if out := e.ok("--region", "us-west-2", "get", "issuers"); !strings.Contains(out, "selfsigned") {
		t.Fatalf("get with --region: %q", out)
	}
}

// notCertfn answers like a Function URL refusing an IAM request.
func notCertfn(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, `{"Message":"Forbidden"}`)
	}))
	t.Cleanup(srv.Close)
	return srv
}

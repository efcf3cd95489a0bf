package tfprovider_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awsacm "github.com/aws/aws-sdk-go-v2/service/acm"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/certfn/certfn/adapters/aws/acm/acmtest"
	"github.com/certfn/certfn/adapters/aws/awscfg"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/clock"
	"github.com/certfn/certfn/internal/awsmode"
	"github.com/certfn/certfn/internal/awsmode/awstest"
)

// AWS principals of the Function URL stand-in: access key → (secret, ARN).
var awsPrincipals = map[string]struct{ secret, arn string }{
	"AKIDADMIN0000000000A": {"admin-secret", "arn:aws:iam::123456789012:role/terraform"},
	"AKIDMALLORY00000000M": {"mallory-secret", "arn:aws:iam::123456789012:user/mallory"},
}

var sigv4Header = regexp.MustCompile(`^AWS4-HMAC-SHA256 Credential=([A-Z0-9]+)/(\d{8})/([a-z0-9-]+)/lambda/aws4_request, SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})$`)

// functionURL stands in for a Lambda Function URL with AWS_IAM auth in
// front of the api function: it verifies the SigV4 signature (service
// lambda) by signing the request again with the principal's secret,
// refuses a bad one with the Function URL's own 403, and invokes the api
// function's handler (HandleFunctionURL) with the principal in the
// event's requestContext.authorizer.iam, as Lambda does.
func functionURL(t *testing.T, h awsmode.URLHandler) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		arn, why := verifySigV4(r, body)
		if why != "" {
			t.Logf("Function URL refused: %s", why)
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`{"Message":"Forbidden"}`))
			return
		}
		headers := map[string]string{}
		for k := range r.Header {
			headers[strings.ToLower(k)] = r.Header.Get(k)
		}
		ev := events.LambdaFunctionURLRequest{Version: "2.0", RawPath: r.URL.EscapedPath(), RawQueryString: r.URL.RawQuery, Headers: headers,
			Body: base64.StdEncoding.EncodeToString(body), IsBase64Encoded: true,
			RequestContext: events.LambdaFunctionURLRequestContext{AccountID: "123456789012", DomainName: "abc.lambda-url.us-east-1.on.aws",
				HTTP: events.LambdaFunctionURLRequestContextHTTPDescription{Method: r.Method, Path: r.URL.Path, SourceIP: "127.0.0.1"},
				Authorizer: &events.LambdaFunctionURLRequestContextAuthorizerDescription{IAM: &events.LambdaFunctionURLRequestContextAuthorizerIAMDescription{
					UserARN: arn, UserID: "AIDA" + strings.ToUpper(arn[len(arn)-4:]), AccountID: "123456789012"}}}}
		out, err := h(r.Context(), ev)
		if err != nil {
			t.Errorf("api handler: %v", err)
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		for k, v := range out.Headers {
			w.Header().Set(k, v)
		}
		w.WriteHeader(out.StatusCode)
		b := []byte(out.Body)
		if out.IsBase64Encoded {
			b, _ = base64.StdEncoding.DecodeString(out.Body)
		}
		_, _ = w.Write(b)
	}))
}

// verifySigV4 returns the principal's ARN, or why the signature is refused.
func verifySigV4(r *http.Request, body []byte) (arn, why string) {
	auth := r.Header.Get("Authorization")
	m := sigv4Header.FindStringSubmatch(auth)
	if m == nil {
		return "", fmt.Sprintf("no or a malformed SigV4 Authorization header %q", auth)
	}
	akid, region, signed := m[1], m[3], strings.Split(m[4], ";")
	p, ok := awsPrincipals[akid]
	if !ok {
		return "", "unknown access key " + akid
	}
	date, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil || date.Format("20060102") != m[2] {
		return "", "X-Amz-Date does not match the credential scope"
	}
	sum := sha256.Sum256(body)
	hash := hex.EncodeToString(sum[:])
	if r.Header.Get("X-Amz-Content-Sha256") != hash {
		return "", "X-Amz-Content-Sha256 does not match the body"
	}
	for _, h := range []string{"host", "x-amz-date", "x-amz-content-sha256"} {
		if !slices.Contains(signed, h) {
			return "", h + " is not signed"
		}
	}
	again, err := http.NewRequest(r.Method, "http://"+r.Host+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return "", err.Error()
	}
	again.ContentLength = r.ContentLength
	for _, h := range signed {
		if h != "host" && h != "content-length" {
			again.Header[textproto.CanonicalMIMEHeaderKey(h)] = r.Header.Values(h)
		}
	}
	if err := v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: akid, SecretAccessKey: p.secret}, again, hash, "lambda", region, date); err != nil {
		return "", err.Error()
	}
	if again.Header.Get("Authorization") != auth {
		return "", "the signature does not match"
	}
	return p.arn, ""
}

// acmCertificateHCL declares web with ACM import, waited for until it is
// in ACM, and a listener-style consumer of its ARN (terraform_data stands
// in for aws_lb_listener, which needs a load balancer).
const acmCertificateHCL = `
resource "certfn_manifest" "web" {
  manifest = <<-YAML
    apiVersion: cert-manager.io/v1
    kind: Certificate
    metadata:
      name: web
      annotations:
        certfn.io/acm-import: "true"
    spec:
      secretName: web-tls
      commonName: web.example.com
      dnsNames: [web.example.com]
      privateKey: {algorithm: ECDSA, size: 256}
      issuerRef:
        name: ${certfn_manifest.issuer.name}
  YAML
  wait {
    condition = "ACMImported"
    timeout   = "60s"
  }
}

data "certfn_certificate" "web" {
  namespace = certfn_manifest.web.namespace
  name      = certfn_manifest.web.name
}

resource "terraform_data" "listener" {
  input = {
    port            = 443
    certificate_arn = data.certfn_certificate.web.acm_certificate_arn
  }
}
`

// useAWSCredentials makes the AWS SDK's default chain find akid.
func useAWSCredentials(t *testing.T, akid string) {
	none := filepath.Join(t.TempDir(), "none")
	for k, v := range map[string]string{"AWS_ACCESS_KEY_ID": akid, "AWS_SECRET_ACCESS_KEY": awsPrincipals[akid].secret, "AWS_SESSION_TOKEN": "",
		"AWS_REGION": "us-east-1", "AWS_PROFILE": "", "AWS_CONFIG_FILE": none, "AWS_SHARED_CREDENTIALS_FILE": none, "AWS_EC2_METADATA_DISABLED": "true"} {
		t.Setenv(k, v)
	}
}

// The provider against the AWS api function, in this process on the
// emulators (DynamoDB, SQS, Secrets Manager): SigV4 with the SDK's
// default credentials; the worker and signer take the queues meanwhile,
// so wait sees the Certificate issued; the data source reports the
// secret's Secrets Manager name. Then an unbound principal gets the
// api's 403 at plan time.
func TestAWSAPIWithSigV4(t *testing.T) {
	e := awstest.New(t)
	e.Clock = clock.NewFake(time.Now().UTC().Truncate(time.Second)) // ACM imports certificates valid now
	e.Vars[awsmode.EnvAPIAdmins] = awsPrincipals["AKIDADMIN0000000000A"].arn
	e.Vars[awsmode.EnvACMImport] = "true"
	acmd := acmtest.New(t)
	acmd.Deployment = "certfn-tf-test"
	apiFn, signer := e.Runtime(app.API.Name), e.Runtime(app.Signer.Name)
	worker := e.Runtime(app.Worker.Name, func(o *awsmode.Options) {
		o.ACM = awsacm.NewFromConfig(awscfg.ForEndpoint(acmd.URL, awstest.FastRetry))
		getenv := o.Getenv
		o.Getenv = func(k string) string {
			if k == "AWS_LAMBDA_FUNCTION_NAME" { // what Lambda sets: the deployment's name
				return acmd.Deployment + "-worker"
			}
			return getenv(k)
		}
	})
	srv := functionURL(t, apiFn.HandleFunctionURL)
	defer srv.Close()

	// The event source mappings: deliver both queues until the test ends.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			e.Deliver(worker, e.WorkerQueueURL)
			e.Deliver(signer, e.SignerQueueURL)
		}
	}()
	defer func() { close(stop); wg.Wait() }()

	provider := fmt.Sprintf(`
provider "certfn" {
  endpoint = %q
  auth     = "aws-sigv4"
  region   = "us-east-1"
}
`, srv.URL)
	useAWSCredentials(t, "AKIDADMIN0000000000A")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: factories(),
		WorkingDir:               workDir(t),
		Steps: []resource.TestStep{{
			Config: provider + issuerHCL + acmCertificateHCL,
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr("data.certfn_certificate.web", "ready", "true"),
				resource.TestCheckResourceAttr("data.certfn_certificate.web", "revision", "1"),
				resource.TestCheckResourceAttr("data.certfn_certificate.web", "secret_reference", "certfn/default/web-tls"),
				resource.TestMatchResourceAttr("data.certfn_certificate.web", "acm_certificate_arn", regexp.MustCompile(`^arn:aws:acm:[a-z0-9-]+:\d{12}:certificate/`)),
				resource.TestCheckResourceAttrPair("terraform_data.listener", "input.certificate_arn", "data.certfn_certificate.web", "acm_certificate_arn"),
				resource.TestCheckResourceAttrPair("data.certfn_certificate.web", "imported_certificate", "data.certfn_certificate.web", "acm_certificate_arn"),
				func(*terraform.State) error {
					if n := len(acmd.ARNs()); n != 1 {
						return fmt.Errorf("%d certificates in ACM, want 1", n)
					}
					return nil
				},
			),
		}},
	})

	useAWSCredentials(t, "AKIDMALLORY00000000M")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: factories(),
		WorkingDir:               workDir(t),
		Steps: []resource.TestStep{{
			Config:      provider + issuerHCL,
			PlanOnly:    true,
			ExpectError: regexp.MustCompile(`(?s)certfn refused Issuer/default/selfsigned: 403 Forbidden.*arn:aws:iam::123456789012:user/mallory\s+may\s+not\s+create`),
		}},
	})
}

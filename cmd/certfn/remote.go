package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/certfn/certfn/adapters/httpapi"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/ports"
)

// signingService is the SigV4 service name of a Lambda Function URL.
const signingService = "lambda"

// maxAnswer bounds the answers the remote client reads.
const maxAnswer = 32 << 20

// remoteOptions configure a remoteClient.
type remoteOptions struct {
	// Server is the API's base URL, e.g. https://<id>.lambda-url.<region>.on.aws.
	Server string
	// Region signs the requests; empty: the Function URL's region, else
	// the SDK configuration's (AWS_REGION, the profile).
	Region string
	// HTTPClient defaults to a client with a 60 s timeout.
	HTTPClient *http.Client
	// ClientCert and ClientKey (PEM files), when set, authenticate with a
	// TLS client certificate instead of SigV4 (`certfn serve --api-listen`);
	// ServerCA (PEM), when set, is the CA the server's certificate must
	// chain to instead of the system's.
	ClientCert, ClientKey, ServerCA string
}

// remoteClient runs the verbs on certfn's HTTP API, signing each request
// with SigV4 (service "lambda") using the AWS SDK's default credentials
// (environment, shared files and profiles, SSO, the instance or task role).
type remoteClient struct {
	base   *url.URL
	region string
	creds  aws.CredentialsProvider
	signer *v4.Signer
	http   *http.Client
	now    func() time.Time
}

// newRemoteClient checks the server URL and loads the SDK configuration;
// it makes no request (credentials are resolved on the first call).
func newRemoteClient(ctx context.Context, o remoteOptions) (*remoteClient, error) {
	u, err := url.Parse(strings.TrimRight(o.Server, "/"))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("--server %q: want an http(s) URL such as https://<url-id>.lambda-url.<region>.on.aws", o.Server)
	}
	if o.ClientCert != "" || o.ClientKey != "" || o.ServerCA != "" {
		return newX509Client(u, o)
	}
	var opts []func(*config.LoadOptions) error
	if o.Region != "" {
		opts = append(opts, config.WithRegion(o.Region))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("load AWS configuration: %w", err)
	}
	region := o.Region
	if region == "" {
		region = functionURLRegion(u.Hostname())
	}
	if region == "" {
		region = cfg.Region
	}
	if region == "" {
		return nil, fmt.Errorf("--server %s: no AWS region to sign with: pass --region or set AWS_REGION", u.Redacted())
	}
	if cfg.Credentials == nil {
		return nil, fmt.Errorf("no AWS credentials configured (set AWS_PROFILE, AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, or run on a role)")
	}
	hc := o.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 60 * time.Second}
	}
	return &remoteClient{base: u, region: region, creds: cfg.Credentials, signer: v4.NewSigner(), http: hc, now: time.Now}, nil
}

// newX509Client is the remote client of a local `certfn serve
// --api-listen`: TLS with a client certificate, no SigV4.
func newX509Client(u *url.URL, o remoteOptions) (*remoteClient, error) {
	if u.Scheme != "https" {
		return nil, fmt.Errorf("--server %s: client certificates need an https URL", u.Redacted())
	}
	if o.ClientCert == "" || o.ClientKey == "" {
		return nil, fmt.Errorf("--client-cert and --client-key go together")
	}
	cert, err := tls.LoadX509KeyPair(o.ClientCert, o.ClientKey)
	if err != nil {
		return nil, fmt.Errorf("--client-cert/--client-key: %w", err)
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
	if o.ServerCA != "" {
		pem, err := os.ReadFile(o.ServerCA)
		if err != nil {
			return nil, fmt.Errorf("--server-ca: %w", err)
		}
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--server-ca %s: no PEM certificate in it", o.ServerCA)
		}
	}
	hc := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{TLSClientConfig: tc}}
	return &remoteClient{base: u, http: hc, now: time.Now}, nil
}

// functionURLRegion returns <region> of <url-id>.lambda-url.<region>.on.aws, else "".
func functionURLRegion(host string) string {
	parts := strings.Split(host, ".")
	if len(parts) == 5 && parts[1] == "lambda-url" && parts[3] == "on" && parts[4] == "aws" {
		return parts[2]
	}
	return ""
}

// apiError is an error answer of the API.
type apiError struct {
	status int
	body   struct {
		Error  string `json:"error"`
		Reason string `json:"reason"`
		Field  string `json:"field"`
	}
}

func (e *apiError) Error() string {
	if e.status == http.StatusUnauthorized {
		return "the server refused the credentials (401): " + e.body.Error
	}
	return e.body.Error
}

// Is lets callers test remote errors as local ones: 404 is
// ports.ErrNotFound, 403 app.ErrForbidden, 409 ports.ErrConflict.
func (e *apiError) Is(target error) bool {
	switch e.status {
	case http.StatusNotFound:
		return target == ports.ErrNotFound
	case http.StatusForbidden:
		return target == app.ErrForbidden
	case http.StatusConflict:
		return target == ports.ErrConflict
	}
	return false
}

// isUnauthenticated reports whether the server refused the credentials.
func isUnauthenticated(err error) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.status == http.StatusUnauthorized
}

// do sends a signed request and decodes a 2xx JSON answer into out.
func (c *remoteClient) do(ctx context.Context, method, path string, body []byte, out any) error {
	u := *c.base
	u.Path = strings.TrimRight(c.base.Path, "/") + path
	u.RawPath = ""
	u.RawQuery = ""
	req, err := http.NewRequestWithContext(ctx, method, u.String(), bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	sum := sha256.Sum256(body)
	hash := hex.EncodeToString(sum[:])
	req.Header.Set("X-Amz-Content-Sha256", hash)
	if c.creds != nil { // SigV4; without, the TLS client certificate authenticates
		creds, err := c.creds.Retrieve(ctx)
		if err != nil {
			return fmt.Errorf("AWS credentials: %w", err)
		}
		if err := c.signer.SignHTTP(ctx, creds, req, hash, signingService, c.region, c.now()); err != nil {
			return fmt.Errorf("sign %s %s: %w", method, path, err)
		}
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("server %s: %w", c.base.Redacted(), err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return fmt.Errorf("server %s: read answer: %w", c.base.Redacted(), err)
	}
	if resp.StatusCode/100 != 2 {
		ae := &apiError{status: resp.StatusCode}
		if json.Unmarshal(b, &ae.body) != nil || ae.body.Error == "" {
			// Not certfn's answer (a Function URL's own refusal, a proxy).
			ae.body.Error = fmt.Sprintf("server %s answered %s: %s", c.base.Redacted(), resp.Status, truncate(strings.TrimSpace(string(b)), 200))
			if resp.StatusCode == http.StatusForbidden {
				ae.body.Error += " (the Function URL refused the request: check the signature's region and that your principal may lambda:InvokeFunctionUrl)"
			}
		}
		return ae
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("server %s: %s %s: undecodable answer: %w", c.base.Redacted(), method, path, err)
	}
	return nil
}

// objectPath returns /v1/[namespaces/NS/]PLURAL/NAME.
func objectPath(key api.Key) (string, error) {
	info, ok := api.KindInfoFor(key.Kind)
	if !ok {
		return "", fmt.Errorf("unknown kind %q", key.Kind)
	}
	p := "/v1/" + url.PathEscape(info.Plural)
	if info.Namespaced {
		p = "/v1/namespaces/" + url.PathEscape(key.Namespace) + "/" + url.PathEscape(info.Plural)
	}
	if key.Name != "" {
		p += "/" + url.PathEscape(key.Name)
	}
	return p, nil
}

func (c *remoteClient) Apply(ctx context.Context, objs []api.Object) ([]app.ApplyResult, error) {
	body, err := json.Marshal(objs)
	if err != nil {
		return nil, fmt.Errorf("encode manifests: %w", err)
	}
	var out httpapi.ApplyResponse
	if err := c.do(ctx, http.MethodPost, "/v1/apply", body, &out); err != nil {
		return nil, err
	}
	res := make([]app.ApplyResult, len(out.Results))
	for i, r := range out.Results {
		res[i] = app.ApplyResult{Key: api.Key{Kind: r.Kind, Namespace: r.Namespace, Name: r.Name},
			Created: r.Action == "created", Changed: r.Action != "unchanged", Ignored: r.Ignored}
	}
	return res, nil
}

// decodeObject decodes one object of kind from its JSON.
func decodeObject(kind string, raw []byte) (api.Object, error) {
	info, ok := api.KindInfoFor(kind)
	if !ok {
		return nil, fmt.Errorf("unknown kind %q", kind)
	}
	o := info.New()
	if err := json.Unmarshal(raw, o); err != nil {
		return nil, fmt.Errorf("decode %s: %w", kind, err)
	}
	return o, nil
}

func (c *remoteClient) Get(ctx context.Context, key api.Key) (api.Object, error) {
	p, err := objectPath(key)
	if err != nil {
		return nil, err
	}
	var raw json.RawMessage
	if err := c.do(ctx, http.MethodGet, p, nil, &raw); err != nil {
		return nil, err
	}
	return decodeObject(key.Kind, raw)
}

func (c *remoteClient) List(ctx context.Context, kind, namespace string) ([]api.Object, error) {
	info, ok := api.KindInfoFor(kind)
	if !ok {
		return nil, fmt.Errorf("unknown kind %q", kind)
	}
	p := "/v1/" + url.PathEscape(info.Plural)
	if info.Namespaced && namespace != "" {
		p = "/v1/namespaces/" + url.PathEscape(namespace) + "/" + url.PathEscape(info.Plural)
	}
	var out struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := c.do(ctx, http.MethodGet, p, nil, &out); err != nil {
		return nil, err
	}
	objs := make([]api.Object, 0, len(out.Items))
	for _, raw := range out.Items {
		o, err := decodeObject(kind, raw)
		if err != nil {
			return nil, err
		}
		objs = append(objs, o)
	}
	return objs, nil
}

func (c *remoteClient) Delete(ctx context.Context, key api.Key) error {
	p, err := objectPath(key)
	if err != nil {
		return err
	}
	return c.do(ctx, http.MethodDelete, p, nil, nil)
}

func (c *remoteClient) Status(ctx context.Context, key api.Key) (*app.Report, error) {
	p, err := objectPath(key)
	if err != nil {
		return nil, err
	}
	var rep app.Report
	if err := c.do(ctx, http.MethodGet, p+"/status", nil, &rep); err != nil {
		return nil, err
	}
	if rep.Certificate == nil {
		return nil, errors.New("server answered a status without a certificate")
	}
	return &rep, nil
}

func (c *remoteClient) Renew(ctx context.Context, key api.Key) error {
	p, err := objectPath(key)
	if err != nil {
		return err
	}
	return c.do(ctx, http.MethodPost, p+"/renew", nil, nil)
}

func (c *remoteClient) Approve(ctx context.Context, key api.Key, approve bool, reason, message string) error {
	p, err := objectPath(key)
	if err != nil {
		return err
	}
	body, err := json.Marshal(httpapi.ApprovalRequest{Approve: &approve, Reason: reason, Message: message})
	if err != nil {
		return err
	}
	return c.do(ctx, http.MethodPost, p+"/approval", body, nil)
}

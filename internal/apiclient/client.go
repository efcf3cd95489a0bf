// Package apiclient is the client of certfn's HTTP API (adapters/httpapi): the
// verbs of core/app over HTTP, authenticated as the deployment expects —
// SigV4 for the AWS api function's Function URL, a Google ID token for the
// Google Cloud api service, a TLS client certificate for `certfn serve
// --api-listen`. The CLI's remote mode and the Terraform provider share it.
package apiclient

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/certfn/certfn/adapters/httpapi"
	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/ports"
)

// signingService is the SigV4 service name of a Lambda Function URL.
const signingService = "lambda"

// maxAnswer bounds the answers the remote client reads.
const maxAnswer = 32 << 20

// Options configure a Client.
type Options struct {
	// Server is the API's base URL, e.g. https://<id>.lambda-url.<region>.on.aws
	// or https://<service>-<hash>-<region>.a.run.app.
	Server string
	// Auth is aws-sigv4, google-id-token, client-cert or none; empty:
	// chosen from the other options and the URL (SelectAuth).
	Auth string
	// Region signs the requests (aws-sigv4); empty: the Function URL's
	// region, else the SDK configuration's (AWS_REGION, the profile).
	Region string
	// Audience (google-id-token) is the ID token's audience; empty:
	// https://<Server's host>, the api service's default.
	Audience string
	// Token (google-id-token) is an ID token to send instead of one from
	// Application Default Credentials.
	Token string
	// HTTPClient defaults to a client with a 60 s timeout.
	HTTPClient *http.Client
	// ClientCert and ClientKey (PEM files) authenticate with a TLS client
	// certificate (`certfn serve --api-listen`); ServerCA (PEM), when
	// set, is the CA the server's certificate must chain to instead of
	// the system's (with any auth).
	ClientCert, ClientKey, ServerCA string
	// Name returns how an option is called in errors, by flag name
	// ("auth"): "--auth", or its environment variable when it came from
	// there; nil: "--<flag>".
	Name func(flag string) string
}

// name is the display name of option flag.
func (o Options) name(flag string) string {
	if o.Name != nil {
		return o.Name(flag)
	}
	return "--" + flag
}

// authorizer adds credentials to a request whose body is body.
type authorizer func(ctx context.Context, req *http.Request, body []byte) error

// Client runs the verbs on certfn's HTTP API, authenticating each
// request as SelectAuth chose: SigV4 (service "lambda") with the AWS
// SDK's default credentials, a Google ID token, or a TLS client
// certificate.
type Client struct {
	base *url.URL
	auth string
	// authorize is nil for client-cert (the TLS handshake
	// authenticates) and none.
	authorize authorizer
	http      *http.Client
}

// New checks the server URL and the options and prepares the
// credentials: the AWS SDK configuration (no request: credentials are
// resolved on the first call), the first Google ID token, or the client
// certificate.
func New(ctx context.Context, o Options) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(o.Server, "/"))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("--server %q: want an http(s) URL such as https://<url-id>.lambda-url.<region>.on.aws or https://<service>-<hash>-<region>.a.run.app", o.Server)
	}
	auth, err := SelectAuth(u, o)
	if err != nil {
		return nil, err
	}
	if err := checkAuthFlags(auth, o); err != nil {
		return nil, err
	}
	if auth == AuthClientCert {
		return newX509Client(u, o)
	}
	hc := o.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 60 * time.Second}
		if o.ServerCA != "" {
			tc, err := serverTLSConfig(o.ServerCA)
			if err != nil {
				return nil, err
			}
			hc.Transport = &http.Transport{TLSClientConfig: tc}
		}
	}
	c := &Client{base: u, auth: auth, http: hc}
	switch auth {
	case AuthAWSSigV4:
		c.authorize, err = sigV4Authorizer(ctx, u, o)
	case AuthGoogleIDToken:
		c.authorize, err = googleAuthorizer(ctx, u, o)
	}
	if err != nil {
		return nil, err
	}
	return c, nil
}

// newX509Client is the remote client of a local `certfn serve
// --api-listen`: TLS with a client certificate.
func newX509Client(u *url.URL, o Options) (*Client, error) {
	if u.Scheme != "https" {
		return nil, fmt.Errorf("--server %s: client certificates need an https URL", u.Redacted())
	}
	if o.ClientCert == "" && o.ClientKey == "" {
		return nil, fmt.Errorf("--auth client-cert needs --client-cert and --client-key (with --server-ca alone, choose the server's --auth: %s)",
			strings.Join([]string{AuthAWSSigV4, AuthGoogleIDToken, AuthNone}, ", "))
	}
	if o.ClientCert == "" || o.ClientKey == "" {
		return nil, fmt.Errorf("--client-cert and --client-key go together")
	}
	cert, err := tls.LoadX509KeyPair(o.ClientCert, o.ClientKey)
	if err != nil {
		return nil, fmt.Errorf("--client-cert/--client-key: %w", err)
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if o.ServerCA != "" {
		if tc, err = serverTLSConfig(o.ServerCA); err != nil {
			return nil, err
		}
	}
	tc.Certificates = []tls.Certificate{cert}
	hc := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{TLSClientConfig: tc}}
	return &Client{base: u, auth: AuthClientCert, http: hc}, nil
}

// serverTLSConfig trusts the CA certificates of the PEM file caFile
// (--server-ca) instead of the system's.
func serverTLSConfig(caFile string) (*tls.Config, error) {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("--server-ca: %w", err)
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: x509.NewCertPool()}
	if !tc.RootCAs.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--server-ca %s: no PEM certificate in it", caFile)
	}
	return tc, nil
}

// FunctionURLRegion returns <region> of <url-id>.lambda-url.<region>.on.aws, else "".
func FunctionURLRegion(host string) string {
	parts := strings.Split(host, ".")
	if len(parts) == 5 && parts[1] == "lambda-url" && parts[3] == "on" && parts[4] == "aws" {
		return parts[2]
	}
	return ""
}

// APIError is an error answer of the API.
type APIError struct {
	status int
	body   struct {
		Error  string `json:"error"`
		Reason string `json:"reason"`
		Field  string `json:"field"`
	}
}

func (e *APIError) Error() string {
	if e.status == http.StatusUnauthorized {
		return "the server refused the credentials (401): " + e.body.Error
	}
	return e.body.Error
}

// Is lets callers test remote errors as local ones: 404 is
// ports.ErrNotFound, 403 app.ErrForbidden, 409 ports.ErrConflict and
// app.ErrConflict (the stored state refuses the call).
func (e *APIError) Is(target error) bool {
	switch e.status {
	case http.StatusNotFound:
		return target == ports.ErrNotFound
	case http.StatusForbidden:
		return target == app.ErrForbidden
	case http.StatusConflict:
		return target == ports.ErrConflict || target == app.ErrConflict
	}
	return false
}

// StatusCode is the answer's HTTP status.
func (e *APIError) StatusCode() int { return e.status }

// Reason is certfn's reason (Invalid, Forbidden, …); empty for an answer
// that is not certfn's.
func (e *APIError) Reason() string { return e.body.Reason }

// Field is the first invalid field's path (422, 400), else empty.
func (e *APIError) Field() string { return e.body.Field }

// IsUnauthenticated reports whether the server refused the credentials.
func IsUnauthenticated(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.status == http.StatusUnauthorized
}

// Do sends a request to path (with its query) on the server, body as
// JSON, and decodes a 2xx JSON answer into out (nil: the answer is
// dropped); an error answer is an *APIError.
func (c *Client) Do(ctx context.Context, method, path string, body []byte, out any) error {
	return c.do(ctx, method, path, body, out)
}

// do sends a signed request and decodes a 2xx JSON answer into out.
func (c *Client) do(ctx context.Context, method, path string, body []byte, out any) error {
	u := *c.base
	p, query, _ := strings.Cut(path, "?")
	u.Path = strings.TrimRight(c.base.Path, "/") + p
	u.RawPath = ""
	u.RawQuery = query
	req, err := http.NewRequestWithContext(ctx, method, u.String(), bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.authorize != nil {
		if err := c.authorize(ctx, req, body); err != nil {
			return err
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
		ae := &APIError{status: resp.StatusCode}
		if json.Unmarshal(b, &ae.body) != nil || ae.body.Error == "" {
			// Not certfn's answer (a Function URL's own refusal, a proxy).
			ae.body.Error = fmt.Sprintf("server %s answered %s: %s", c.base.Redacted(), resp.Status, truncate(strings.TrimSpace(string(b)), 200))
			ae.body.Error += refusalHint(c.auth, resp.StatusCode)
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

// refusalHint explains a 401 or 403 that is not certfn's answer: the
// platform in front of the api refused the request.
func refusalHint(auth string, status int) string {
	switch {
	case auth == AuthAWSSigV4 && status == http.StatusForbidden:
		return " (the Function URL refused the request: check the signature's region and that your principal may lambda:InvokeFunctionUrl)"
	case auth == AuthGoogleIDToken && (status == http.StatusUnauthorized || status == http.StatusForbidden):
		return " (Cloud Run refused the request: your account needs roles/run.invoker on the service (api_invoker_members), " +
			"and the ID token's audience must be the service's URL or one of its custom audiences: see --audience)"
	}
	return ""
}

// ObjectPath returns /v1/[namespaces/NS/]PLURAL/NAME.
func ObjectPath(key api.Key) (string, error) {
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

func (c *Client) Apply(ctx context.Context, objs []api.Object) ([]app.ApplyResult, error) {
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

func (c *Client) DryRun(ctx context.Context, objs []api.Object) ([]app.DryRunResult, error) {
	body, err := json.Marshal(objs)
	if err != nil {
		return nil, fmt.Errorf("encode manifests: %w", err)
	}
	var out httpapi.ApplyResponse
	if err := c.do(ctx, http.MethodPost, "/v1/apply?dryRun=All", body, &out); err != nil {
		return nil, err
	}
	return out.DryRun, nil
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

// Get returns the object at key; an answer that is another object (its
// kind, namespace or name differ from key's) is an error.
func (c *Client) Get(ctx context.Context, key api.Key) (api.Object, error) {
	if key.Name == "" {
		return nil, fmt.Errorf("get %s: the name is empty", key.Kind)
	}
	p, err := ObjectPath(key)
	if err != nil {
		return nil, err
	}
	var raw json.RawMessage
	if err := c.do(ctx, http.MethodGet, p, nil, &raw); err != nil {
		return nil, err
	}
	o, err := decodeObject(key.Kind, raw)
	if err != nil {
		return nil, err
	}
	if got := api.KeyOf(o); got != key {
		return nil, fmt.Errorf("server %s: asked for %s, answered %s", c.base.Redacted(), key, got)
	}
	return o, nil
}

// selectorQuery is opts as the API's query parameters.
func selectorQuery(opts app.ListOptions) url.Values {
	q := url.Values{}
	if opts.LabelSelector != "" {
		q.Set("labelSelector", opts.LabelSelector)
	}
	if opts.FieldSelector != "" {
		q.Set("fieldSelector", opts.FieldSelector)
	}
	return q
}

// List returns every object of kind (in namespace; "" for all) that
// opts select (the server selects).
func (c *Client) List(ctx context.Context, kind, namespace string, opts app.ListOptions) ([]api.Object, error) {
	objs, _, err := c.list(ctx, kind, namespace, selectorQuery(opts))
	return objs, err
}

// ListPage returns up to limit objects of kind that opts select from the
// position cont ("" for the first page) and the token of the next page
// ("" after the last), as the API's limit and continue parameters do.
func (c *Client) ListPage(ctx context.Context, kind, namespace string, opts app.ListOptions, limit int, cont string) ([]api.Object, string, error) {
	q := selectorQuery(opts)
	q.Set("limit", strconv.Itoa(limit))
	if cont != "" {
		q.Set("continue", cont)
	}
	return c.list(ctx, kind, namespace, q)
}

// list GETs kind's collection with query (nil: the whole list) and
// returns its items and metadata.continue.
func (c *Client) list(ctx context.Context, kind, namespace string, query url.Values) ([]api.Object, string, error) {
	info, ok := api.KindInfoFor(kind)
	if !ok {
		return nil, "", fmt.Errorf("unknown kind %q", kind)
	}
	p := "/v1/" + url.PathEscape(info.Plural)
	if info.Namespaced && namespace != "" {
		p = "/v1/namespaces/" + url.PathEscape(namespace) + "/" + url.PathEscape(info.Plural)
	}
	if len(query) > 0 {
		p += "?" + query.Encode()
	}
	var out struct {
		Metadata struct {
			Continue string `json:"continue"`
		} `json:"metadata"`
		Items []json.RawMessage `json:"items"`
	}
	if err := c.do(ctx, http.MethodGet, p, nil, &out); err != nil {
		return nil, "", err
	}
	objs := make([]api.Object, 0, len(out.Items))
	for _, raw := range out.Items {
		o, err := decodeObject(kind, raw)
		if err != nil {
			return nil, "", err
		}
		objs = append(objs, o)
	}
	return objs, out.Metadata.Continue, nil
}

// Delete deletes the object at key with opts: dryRun=All as a query
// parameter, the preconditions in a DeleteOptions body, as Kubernetes
// clients send them. A server that answers it deleted something else, or
// that it deleted while a dry run was asked for, is an error.
func (c *Client) Delete(ctx context.Context, key api.Key, opts app.DeleteOptions) error {
	if key.Name == "" {
		return fmt.Errorf("delete %s: the name is empty", key.Kind)
	}
	p, err := ObjectPath(key)
	if err != nil {
		return err
	}
	if opts.DryRun {
		p += "?dryRun=All"
	}
	var body []byte
	if !opts.Preconditions.IsZero() {
		if body, err = json.Marshal(httpapi.DeleteOptions{Kind: "DeleteOptions", APIVersion: "v1", Preconditions: opts.Preconditions}); err != nil {
			return err
		}
	}
	var out httpapi.Deleted
	if err := c.do(ctx, http.MethodDelete, p, body, &out); err != nil {
		return err
	}
	if got := (api.Key{Kind: out.Kind, Namespace: out.Namespace, Name: out.Name}); got != key || out.Deleted == opts.DryRun {
		return fmt.Errorf("server %s: asked to delete %s (dry run: %t), answered %+v", c.base.Redacted(), key, opts.DryRun, out)
	}
	return nil
}

func (c *Client) Status(ctx context.Context, key api.Key) (*app.Report, error) {
	p, err := ObjectPath(key)
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

// Renew forces a re-issuance, or wakes the issuance in flight (see
// app.Service.Renew).
func (c *Client) Renew(ctx context.Context, key api.Key) (*app.RenewResult, error) {
	p, err := ObjectPath(key)
	if err != nil {
		return nil, err
	}
	var res app.RenewResult
	if err := c.do(ctx, http.MethodPost, p+"/renew", nil, &res); err != nil {
		return nil, err
	}
	if res.Certificate == nil {
		return nil, errors.New("server answered a renewal without a certificate")
	}
	return &res, nil
}

// Approve approves (or denies) the request at key through its approval
// subresource; a non-empty resourceVersion is the precondition that the
// request is still at that version (else the server answers 409).
func (c *Client) Approve(ctx context.Context, key api.Key, approve bool, reason, message, resourceVersion string) error {
	p, err := ObjectPath(key)
	if err != nil {
		return err
	}
	body, err := json.Marshal(httpapi.ApprovalRequest{Approve: &approve, Reason: reason, Message: message, ResourceVersion: resourceVersion})
	if err != nil {
		return err
	}
	return c.do(ctx, http.MethodPost, p+"/approval", body, nil)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}

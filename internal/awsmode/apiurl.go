package awsmode

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"github.com/certfn/certfn/adapters/httpapi"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/rbac"
)

// iamKey keys the IAM identity a Function URL with AWS_IAM auth verified.
type iamKey struct{}

// HandleFunctionURL is the Lambda handler of the api function behind a
// Function URL with AWS_IAM auth (BUFFERED invoke mode): the HTTP API of
// adapters/httpapi, the caller being the IAM principal the Function URL
// verified (see IAMAuthenticator).
func (rt *Runtime) HandleFunctionURL(ctx context.Context, ev events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error) {
	if rt.API == nil {
		return jsonError(http.StatusInternalServerError, "InternalError", fmt.Sprintf("the %s function serves no API", rt.Role.Name)), nil
	}
	return ServeFunctionURL(rt.API)(ctx, ev)
}

// URLHandler is the Lambda handler of a Function URL (BUFFERED invoke mode).
type URLHandler func(context.Context, events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error)

// ServeFunctionURL converts Function URL events to HTTP requests for h
// and its answers back. The IAM identity of requestContext.authorizer.iam
// goes into the request's context — only there, so no header or body can
// claim an identity — where authenticateIAM finds it.
//
// The function cannot tell an event Lambda built for a SigV4-verified
// Function URL request from the same JSON sent by a direct Invoke, which
// carries no signature of its own: the authorizer is trustworthy because
// only principals allowed lambda:InvokeFunction on the function without
// the lambda:InvokedViaFunctionUrl condition can send one directly.
// infra/terraform/aws grants Invoke to callers only under that condition,
// so that leaves principals who may also replace the function's code or
// its CERTFN_API_ADMINS; anyone else who could invoke it directly could
// claim to be anybody. localstack/e2e.sh relies on this on purpose
// (LocalStack's Function URLs verify nothing and set no authorizer; see
// docs/deploy/aws.md, "LocalStack").
func ServeFunctionURL(h http.Handler) URLHandler {
	return func(ctx context.Context, ev events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error) {
		req, err := toHTTPRequest(ctx, ev)
		if err != nil {
			return jsonError(http.StatusBadRequest, "BadRequest", err.Error()), nil
		}
		w := &bufferedWriter{header: http.Header{}}
		h.ServeHTTP(w, req)
		return w.response(), nil
	}
}

// toHTTPRequest builds the request of a Function URL event.
func toHTTPRequest(ctx context.Context, ev events.LambdaFunctionURLRequest) (*http.Request, error) {
	body := []byte(ev.Body)
	if ev.IsBase64Encoded {
		b, err := base64.StdEncoding.DecodeString(ev.Body)
		if err != nil {
			return nil, fmt.Errorf("body: invalid base64 from the Function URL: %v", err)
		}
		body = b
	}
	method := ev.RequestContext.HTTP.Method
	if method == "" {
		return nil, fmt.Errorf("requestContext.http.method: missing")
	}
	path := ev.RawPath
	if path == "" {
		path = "/"
	}
	u, err := url.Parse("https://" + ev.RequestContext.DomainName + path)
	if err != nil {
		return nil, fmt.Errorf("rawPath %q: %v", ev.RawPath, err)
	}
	u.RawQuery = ev.RawQueryString
	if a := ev.RequestContext.Authorizer; a != nil && a.IAM != nil {
		iam := *a.IAM
		ctx = context.WithValue(ctx, iamKey{}, &iam)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("request: %v", err)
	}
	for k, v := range ev.Headers {
		req.Header.Set(k, v)
	}
	req.Host = ev.RequestContext.DomainName
	req.RemoteAddr = ev.RequestContext.HTTP.SourceIP
	req.RequestURI = u.RequestURI()
	return req, nil
}

// IAMAuthenticator returns the authenticator of a Function URL with
// AWS_IAM auth: the caller is requestContext.authorizer.iam.userArn mapped
// by rbac.FromAWSARN (an assumed-role session becomes its role's ARN;
// groups aws:account:<id> and system:authenticated), uid = userId. A
// caller whose username is in admins is also in system:masters (allowed
// everything: how the first bindings are created). No identity is a 401.
func IAMAuthenticator(admins map[string]bool) func(*http.Request) (app.Caller, error) {
	return func(r *http.Request) (app.Caller, error) {
		iam, _ := r.Context().Value(iamKey{}).(*events.LambdaFunctionURLRequestContextAuthorizerIAMDescription)
		if iam == nil || iam.UserARN == "" {
			return app.Caller{}, fmt.Errorf("%w: no IAM identity in the request context (the Function URL must use AWS_IAM auth and requests must be SigV4-signed)",
				httpapi.ErrUnauthenticated)
		}
		id, err := rbac.FromAWSARN(iam.UserARN)
		if err != nil {
			return app.Caller{}, fmt.Errorf("%w: %w", httpapi.ErrUnauthenticated, err)
		}
		if admins[id.Username] {
			id.Groups = append(id.Groups, app.SuperuserGroup)
		}
		return app.Caller{Username: id.Username, UID: iam.UserID, Groups: id.Groups, Extra: id.Extra}, nil
	}
}

// bufferedWriter collects an answer for a BUFFERED Function URL.
type bufferedWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *bufferedWriter) Header() http.Header { return w.header }

func (w *bufferedWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *bufferedWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(p)
}

func (w *bufferedWriter) response() events.LambdaFunctionURLResponse {
	status := w.status
	if status == 0 {
		status = http.StatusOK
	}
	resp := events.LambdaFunctionURLResponse{StatusCode: status, Headers: map[string]string{}}
	for k, v := range w.header {
		if k == "Set-Cookie" {
			resp.Cookies = v
			continue
		}
		resp.Headers[strings.ToLower(k)] = strings.Join(v, ",")
	}
	if b := w.body.Bytes(); utf8.Valid(b) {
		resp.Body = string(b)
	} else {
		resp.Body, resp.IsBase64Encoded = base64.StdEncoding.EncodeToString(b), true
	}
	return resp
}

// jsonError is an error answer in the API's format, for requests that
// never reach the handler.
func jsonError(status int, reason, msg string) events.LambdaFunctionURLResponse {
	b, _ := json.Marshal(map[string]string{"error": msg, "reason": reason})
	w := &bufferedWriter{header: http.Header{"Content-Type": {"application/json"}}}
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
	return w.response()
}

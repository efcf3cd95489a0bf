package lambdarie

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// urlEvent is the event a Lambda Function URL sends (payload format 2.0,
// as the Lambda developer guide's "Request payload format" shows it).
type urlEvent struct {
	Version               string            `json:"version"`
	RouteKey              string            `json:"routeKey"`
	RawPath               string            `json:"rawPath"`
	RawQueryString        string            `json:"rawQueryString"`
	Cookies               []string          `json:"cookies,omitempty"`
	Headers               map[string]string `json:"headers"`
	QueryStringParameters map[string]string `json:"queryStringParameters,omitempty"`
	RequestContext        urlRequestContext `json:"requestContext"`
	Body                  string            `json:"body,omitempty"`
	PathParameters        map[string]string `json:"pathParameters"`
	IsBase64Encoded       bool              `json:"isBase64Encoded"`
	StageVariables        map[string]string `json:"stageVariables"`
}

type urlRequestContext struct {
	AccountID      string         `json:"accountId"`
	APIID          string         `json:"apiId"`
	Authentication any            `json:"authentication"`
	Authorizer     *urlAuthorizer `json:"authorizer,omitempty"`
	DomainName     string         `json:"domainName"`
	DomainPrefix   string         `json:"domainPrefix"`
	HTTP           struct {
		Method    string `json:"method"`
		Path      string `json:"path"`
		Protocol  string `json:"protocol"`
		SourceIP  string `json:"sourceIp"`
		UserAgent string `json:"userAgent"`
	} `json:"http"`
	RequestID string `json:"requestId"`
	RouteKey  string `json:"routeKey"`
	Stage     string `json:"stage"`
	Time      string `json:"time"`
	TimeEpoch int64  `json:"timeEpoch"`
}

// urlAuthorizer is what an AWS_IAM Function URL puts in the event about
// the SigV4-verified caller.
type urlAuthorizer struct {
	IAM struct {
		AccessKey       string `json:"accessKey"`
		AccountID       string `json:"accountId"`
		CallerID        string `json:"callerId"`
		CognitoIdentity any    `json:"cognitoIdentity"`
		PrincipalOrgID  any    `json:"principalOrgId"`
		UserARN         string `json:"userArn"`
		UserID          string `json:"userId"`
	} `json:"iam"`
}

// urlResponse is a function's answer to a Function URL ("Response
// payload format"). A payload that is not such an object is the body of
// a 200 answer.
type urlResponse struct {
	StatusCode      int               `json:"statusCode"`
	Headers         map[string]string `json:"headers"`
	Body            string            `json:"body"`
	IsBase64Encoded bool              `json:"isBase64Encoded"`
	Cookies         []string          `json:"cookies"`
}

// iamCaller is the IAM principal an AWS_IAM Function URL verified.
type iamCaller struct {
	AccountID, UserARN, UserID, AccessKey string
}

// functionURLStandIn is a STAND-IN for a Lambda Function URL (not AWS's
// front end): it turns an HTTP request into the Function URL event of
// the URL in the state and the function's answer into the HTTP response.
// For an AWS_IAM URL it puts the caller in requestContext.authorizer.iam
// (AWS verifies the SigV4 signature and the resource policy before it
// invokes the function; nothing here does).
type functionURLStandIn struct {
	u      functionURL
	fn     *lambdaFn
	caller *iamCaller // AWS_IAM only

	mu    sync.Mutex
	calls []urlCall
}

// urlCall is one request through the stand-in and its status.
type urlCall struct {
	Method, Path, Host, UserAgent string
	Status                        int
}

// isText reports whether a Function URL passes a body of contentType as
// text; any other body is base64-encoded (isBase64Encoded).
func isText(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	return strings.HasPrefix(mt, "text/") || mt == "application/json" || mt == "application/xml" || mt == "application/javascript" ||
		strings.HasSuffix(mt, "+json") || strings.HasSuffix(mt, "+xml")
}

// event builds the Function URL event of r with body.
func (s *functionURLStandIn) event(r *http.Request, body []byte) urlEvent {
	u, _ := url.Parse(s.u.URL)
	host := ""
	if u != nil {
		host = u.Hostname()
	}
	now := time.Now().UTC()
	ev := urlEvent{Version: "2.0", RouteKey: "$default", RawPath: r.URL.EscapedPath(), RawQueryString: r.URL.RawQuery,
		Headers: map[string]string{}, PathParameters: nil, StageVariables: nil}
	if ev.RawPath == "" {
		ev.RawPath = "/"
	}
	for k, vs := range r.Header {
		if strings.EqualFold(k, "Cookie") {
			for _, v := range vs {
				for _, c := range strings.Split(v, ";") {
					ev.Cookies = append(ev.Cookies, strings.TrimSpace(c))
				}
			}
			continue
		}
		ev.Headers[strings.ToLower(k)] = strings.Join(vs, ",")
	}
	ev.Headers["host"] = r.Host
	if q := r.URL.Query(); len(q) > 0 {
		ev.QueryStringParameters = map[string]string{}
		for k, vs := range q {
			ev.QueryStringParameters[k] = strings.Join(vs, ",")
		}
	}
	if len(body) > 0 {
		if isText(r.Header.Get("Content-Type")) {
			ev.Body = string(body)
		} else {
			ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
		}
	}
	rc := &ev.RequestContext
	rc.AccountID, rc.APIID, rc.DomainName, rc.DomainPrefix = "anonymous", s.u.URLID, host, s.u.URLID
	rc.HTTP.Method, rc.HTTP.Path, rc.HTTP.Protocol, rc.HTTP.UserAgent = r.Method, ev.RawPath, r.Proto, r.UserAgent()
	if h, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		rc.HTTP.SourceIP = h
	}
	rc.RequestID, rc.RouteKey, rc.Stage = rand.Text(), "$default", "$default"
	rc.Time, rc.TimeEpoch = now.Format("02/Jan/2006:15:04:05 -0700"), now.UnixMilli()
	if s.caller != nil {
		a := &urlAuthorizer{}
		a.IAM.AccessKey, a.IAM.AccountID, a.IAM.CallerID = s.caller.AccessKey, s.caller.AccountID, s.caller.UserID
		a.IAM.UserARN, a.IAM.UserID = s.caller.UserARN, s.caller.UserID
		rc.Authorizer, rc.AccountID = a, s.caller.AccountID
	}
	return ev
}

// ServeHTTP invokes the function with r's event and writes its answer
// (502 when the invocation fails, as a Function URL answers).
func (s *functionURLStandIn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	status := s.serve(w, r)
	s.mu.Lock()
	s.calls = append(s.calls, urlCall{Method: r.Method, Path: r.URL.Path, Host: r.Host, UserAgent: r.UserAgent(), Status: status})
	s.mu.Unlock()
}

func (s *functionURLStandIn) serve(w http.ResponseWriter, r *http.Request) int {
	body, err := io.ReadAll(io.LimitReader(r.Body, 6<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return http.StatusBadRequest
	}
	payload, _ := json.Marshal(s.event(r, body))
	out, err := s.fn.invoke(r.Context(), payload)
	if err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Amzn-ErrorType", "FunctionError")
		w.WriteHeader(http.StatusBadGateway)
		fmt.Fprintf(w, `{"Message":%q}`, err.Error())
		return http.StatusBadGateway
	}
	resp, err := decodeURLResponse(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return http.StatusBadGateway
	}
	for k, v := range resp.Headers {
		w.Header().Set(k, v)
	}
	for _, c := range resp.Cookies {
		w.Header().Add("Set-Cookie", c)
	}
	w.WriteHeader(resp.StatusCode)
	b := []byte(resp.Body)
	if resp.IsBase64Encoded {
		b, _ = base64.StdEncoding.DecodeString(resp.Body)
	}
	_, _ = w.Write(b)
	return resp.StatusCode
}

// decodeURLResponse reads a function's answer as a Function URL does.
func decodeURLResponse(payload []byte) (urlResponse, error) {
	var probe map[string]json.RawMessage
	if json.Unmarshal(payload, &probe) == nil {
		if _, ok := probe["statusCode"]; ok {
			var r urlResponse
			if err := json.Unmarshal(payload, &r); err != nil {
				return urlResponse{}, fmt.Errorf("function URL response %s: %w", payload, err)
			}
			return r, nil
		}
	}
	return urlResponse{StatusCode: http.StatusOK, Headers: map[string]string{"content-type": "application/json"}, Body: string(payload)}, nil
}

// call sends one request through the stand-in in this process (the api's
// callers: what `curl --aws-sigv4` would send to the URL) and returns
// the status and body.
func (s *functionURLStandIn) call(ctx context.Context, method, path, contentType string, body []byte) (int, []byte, error) {
	r, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(s.u.URL, "/")+path, strings.NewReader(string(body)))
	if err != nil {
		return 0, nil, err
	}
	r.RemoteAddr = "127.0.0.1:50000"
	r.Header.Set("User-Agent", "certfn-lambdarie")
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	}
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, r)
	return rec.Code, rec.Body.Bytes(), nil
}

// served returns the requests so far.
func (s *functionURLStandIn) served() []urlCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]urlCall(nil), s.calls...)
}

// listen serves the stand-in on addr until t ends.
func (s *functionURLStandIn) listen(t *testing.T, addr string) {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("the http01 Function URL stand-in cannot listen on %s (HTTP-01 is validated on port 80; "+
			"binding it needs root or CAP_NET_BIND_SERVICE, and no other process on the port): %v", addr, err)
	}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
}

package acme

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mholt/acmez/v3/acme"

	core "github.com/certfn/certfn/core/acme"
	"github.com/certfn/certfn/core/errs"
)

func TestMapError(t *testing.T) {
	c := &Client{dir: "https://acme.example/dir"}
	prob := func(status int, typ, detail string) error {
		return fmt.Errorf("attempt 1: https://acme.example/x: %w", acme.Problem{Status: status, Type: typ, Detail: detail})
	}
	tests := []struct {
		name   string
		err    error
		ra     time.Duration
		class  errs.Class
		delay  time.Duration
		substr string
	}{
		{"rate limited with Retry-After", prob(429, acme.ProblemTypeRateLimited, "too many"), 90 * time.Second, errs.Transient, 90 * time.Second, "rateLimited: too many"},
		{"rate limited without Retry-After", prob(429, acme.ProblemTypeRateLimited, "too many"), 0, errs.Transient, time.Hour, "rateLimited"},
		{"unavailable", prob(503, acme.ProblemTypeServerInternal, "maintenance"), 0, errs.Transient, time.Minute, "maintenance"},
		{"rejected identifier", prob(400, acme.ProblemTypeRejectedIdentifier, "no .test"), 0, errs.PermanentClass, 0, "rejectedIdentifier: no .test"},
		{"unauthorized", prob(403, acme.ProblemTypeUnauthorized, "nope"), 0, errs.PermanentClass, 0, "unauthorized: nope"},
		{"caa", prob(403, acme.ProblemTypeCAA, "CAA forbids"), 0, errs.PermanentClass, 0, "caa: CAA forbids"},
		{"malformed", prob(400, acme.ProblemTypeMalformed, "bad"), 0, errs.PermanentClass, 0, "malformed"},
		{"external account required", prob(403, acme.ProblemTypeExternalAccountRequired, "eab"), 0, errs.PermanentClass, 0, "externalAccountRequired"},
		{"already replaced", prob(409, ProblemAlreadyReplaced, "dup"), 0, errs.PermanentClass, 0, "alreadyReplaced"},
		{"bad nonce after retries", prob(400, acme.ProblemTypeBadNonce, "stale"), 0, errs.Transient, 0, "badNonce"},
		{"server error", prob(500, acme.ProblemTypeServerInternal, "boom"), 0, errs.Transient, 0, "serverInternal"},
		{"unknown 4xx", prob(418, "urn:example:teapot", "short and stout"), 0, errs.PermanentClass, 0, "teapot"},
		{"network", fmt.Errorf("performing request: %w", errors.New("dial tcp: connection refused")), 0, errs.Transient, 0, "cannot reach the ACME server"},
		{"untrusted TLS certificate", fmt.Errorf("performing request: %w", &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}), 0, errs.Transient, 0,
			"the TLS certificate of the ACME server https://acme.example/dir is not trusted; set spec.acme.caBundle"},
		{"certificate for another host", fmt.Errorf("performing request: %w", x509.HostnameError{Certificate: &x509.Certificate{}, Host: "acme.example"}), 0, errs.Transient, 0, "is not trusted"},
		{"proxy error page", fmt.Errorf("provisioning client: %w", errors.New("HTTP 502: <html>"+strings.Repeat("x", 2000)+"</html>")), 0, errs.Transient, 0,
			"op: the ACME server https://acme.example/dir answered HTTP 502 (a server or proxy error)"},
		{"not found at the directory URL", errors.New("provisioning client: HTTP 404: not found"), 0, errs.Transient, 0, "does not serve an ACME directory (HTTP 404)"},
		{"garbage directory", errors.New("provisioning client: server did not return error headers, but required directory fields are missing"), 0, errs.Transient, 0, "does not serve an ACME directory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := &meta{retryAfter: tc.ra}
			err := c.mapError("op", tc.err, m)
			if got := errs.Classify(err); got != tc.class {
				t.Fatalf("class %v, want %v (%v)", got, tc.class, err)
			}
			d, ok := errs.SuggestedDelay(err)
			if tc.delay > 0 && (!ok || d != tc.delay) {
				t.Fatalf("delay %v/%t, want %v", d, ok, tc.delay)
			}
			if tc.delay == 0 && ok {
				t.Fatalf("unexpected delay %v", d)
			}
			if !strings.Contains(err.Error(), tc.substr) {
				t.Fatalf("%q does not contain %q", err, tc.substr)
			}
			if len(err.Error()) > 600 {
				t.Fatalf("message of %d bytes: a server's error page must be clipped", len(err.Error()))
			}
			var p acme.Problem
			if !errors.As(tc.err, &p) && !errors.Is(err, tc.err) { // problems become *ProblemError
				t.Fatalf("%v does not wrap the original error", err)
			}
		})
	}
	if err := c.mapError("op", fmt.Errorf("x: %w", acme.Problem{Status: 409, Type: ProblemAlreadyReplaced}), nil); !errors.Is(err, core.ErrAlreadyReplaced) {
		t.Errorf("alreadyReplaced does not wrap ErrAlreadyReplaced: %v", err)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Duration{
		"":                              0,
		"120":                           2 * time.Minute,
		"-5":                            0,
		"soon":                          0,
		"Thu, 01 Jan 2026 00:01:00 GMT": time.Minute,
		"Wed, 31 Dec 2025 23:00:00 GMT": 0,
	} {
		if got := ParseRetryAfter(in, now); got != want {
			t.Errorf("ParseRetryAfter(%q) = %v, want %v", in, got, want)
		}
	}
}

// GETs are retried a bounded number of times on 5xx; POSTs never.
func TestTransportRetriesOnlyIdempotentRequests(t *testing.T) {
	var gets, posts atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			posts.Add(1)
		} else {
			gets.Add(1)
		}
		w.Header().Set("Retry-After", "7")
		http.Error(w, "down", http.StatusInternalServerError)
	}))
	defer srv.Close()
	cnt := &CountingTransport{Next: http.DefaultTransport}
	rt := captureTransport{next: methodSplit{idempotent: retrying(cnt, 2), direct: cnt}}
	hc := &http.Client{Transport: rt}
	ctx, m := withMeta(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	if resp, err := hc.Do(req); err == nil {
		resp.Body.Close()
	}
	req, _ = http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader("{}"))
	if resp, err := hc.Do(req); err == nil {
		resp.Body.Close()
	}
	if gets.Load() != 3 || posts.Load() != 1 {
		t.Fatalf("GET attempts %d (want 3), POST attempts %d (want 1)", gets.Load(), posts.Load())
	}
	if cnt.Count() != 4 || len(cnt.Log()) != 4 {
		t.Fatalf("counted %d round trips, want 4", cnt.Count())
	}
	if m.RetryAfter() != 7*time.Second {
		t.Fatalf("Retry-After captured as %v", m.RetryAfter())
	}
}

func TestDialerCachesClientsPerServerConfig(t *testing.T) {
	d := NewDialer(Options{})
	a, _ := d.Client(core.ServerConfig{Directory: "https://a/dir"})
	b, _ := d.Client(core.ServerConfig{Directory: "https://a/dir"})
	c, _ := d.Client(core.ServerConfig{Directory: "https://a/dir", SkipTLSVerify: true})
	if a != b || a == c {
		t.Fatal("clients must be cached per (directory, caBundle, skipTLSVerify)")
	}
	if _, err := d.Client(core.ServerConfig{Directory: "https://b/dir", CABundle: []byte("not pem")}); err == nil || !strings.Contains(err.Error(), "caBundle") {
		t.Fatalf("a caBundle without certificates: %v", err)
	}
}

package acme

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/certfn/certfn/adapters/netguard"
)

// CountingTransport counts every HTTP round trip that reaches it and keeps
// a log of "METHOD path" lines. It is safe for concurrent use; tests and
// benchmarks wrap the ACME client's transport with it.
type CountingTransport struct {
	Next http.RoundTripper

	n   atomic.Int64
	mu  sync.Mutex
	log []string
}

// RoundTrip counts r and forwards it.
func (c *CountingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	c.mu.Lock()
	c.log = append(c.log, r.Method+" "+r.URL.Path)
	c.mu.Unlock()
	return c.Next.RoundTrip(r)
}

// Count returns the number of round trips so far.
func (c *CountingTransport) Count() int64 { return c.n.Load() }

// Log returns a copy of the request log.
func (c *CountingTransport) Log() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.log...)
}

// Reset clears the count and the log.
func (c *CountingTransport) Reset() {
	c.mu.Lock()
	c.log = nil
	c.n.Store(0)
	c.mu.Unlock()
}

// meta records what the transport saw of the responses to one ACME call
// (the Retry-After hint), carried in the call's context.
type meta struct {
	mu         sync.Mutex
	retryAfter time.Duration
}

type metaKey struct{}

func withMeta(ctx context.Context) (context.Context, *meta) {
	m := &meta{}
	return context.WithValue(ctx, metaKey{}, m), m
}

func (m *meta) RetryAfter() time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.retryAfter
}

// captureTransport stores each response's Retry-After in the request
// context's meta.
type captureTransport struct{ next http.RoundTripper }

func (c captureTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(r)
	if resp != nil {
		if m, ok := r.Context().Value(metaKey{}).(*meta); ok {
			d := ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
			m.mu.Lock()
			m.retryAfter = d
			m.mu.Unlock()
		}
	}
	return resp, err
}

// MaxRetryAfter is the longest delay a Retry-After is taken for: a longer
// one (or a number of seconds a time.Duration cannot hold) is taken as
// this, so a server cannot park an Order for years; if it still throttles
// then, it says so again.
const MaxRetryAfter = 24 * time.Hour

// ParseRetryAfter parses a Retry-After value (seconds or an HTTP date
// relative to now), at most MaxRetryAfter; zero when absent or invalid.
func ParseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		switch {
		case s < 0:
			return 0
		case s > int64(MaxRetryAfter/time.Second):
			return MaxRetryAfter
		}
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return min(d, MaxRetryAfter)
		}
	}
	return 0
}

// methodSplit sends idempotent requests (GET, HEAD) through a bounded
// retrying transport and everything else (signed POSTs) straight through:
// a signed POST is never re-sent by this layer.
type methodSplit struct {
	idempotent http.RoundTripper
	direct     http.RoundTripper
}

func (m methodSplit) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return m.idempotent.RoundTrip(r)
	}
	return m.direct.RoundTrip(r)
}

// retrying wraps next with go-retryablehttp: at most retries extra
// attempts for network errors and 5xx (not 429/503, whose Retry-After the
// steps honour by scheduling), waiting 100 ms to 1 s between attempts.
func retrying(next http.RoundTripper, retries int) http.RoundTripper {
	rc := retryablehttp.NewClient()
	rc.HTTPClient = &http.Client{Transport: next}
	rc.RetryMax = retries
	rc.RetryWaitMin = 100 * time.Millisecond
	rc.RetryWaitMax = time.Second
	rc.Logger = nil
	rc.CheckRetry = func(ctx context.Context, resp *http.Response, err error) (bool, error) {
		if resp != nil && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) {
			return false, nil
		}
		return retryablehttp.DefaultRetryPolicy(ctx, resp, err)
	}
	// Hand the last response back instead of a "giving up" error, so the
	// caller sees the server's status and problem document.
	rc.ErrorHandler = retryablehttp.PassthroughErrorHandler
	return &retryablehttp.RoundTripper{Client: rc}
}

// baseTransport is an http.Transport trusting caBundle (when set) or
// nothing at all (skipTLSVerify). A restricted transport (a namespaced
// Issuer's) dials through the policy's guard, which checks every address
// dialled (the directory, and every URL it hands out, redirects
// included), and uses no proxy from the environment (a proxy would make
// the connection on its behalf, unchecked).
func baseTransport(caBundle []byte, skipTLSVerify bool, policy netguard.Policy, restricted bool) (*http.Transport, error) {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = policy.Dialer(&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}, restricted)
	if restricted {
		t.Proxy = nil
	}
	t.TLSHandshakeTimeout = 10 * time.Second
	t.ResponseHeaderTimeout = 30 * time.Second
	// Every worker may talk to the same server at once: keep a connection
	// per worker (the default keeps 2, so a third concurrent step paid a
	// new TLS handshake each time).
	t.MaxIdleConnsPerHost = 32
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	switch {
	case skipTLSVerify:
		cfg.InsecureSkipVerify = true //nolint:gosec // the issuer asked for it (spec.acme.skipTLSVerify)
	case len(caBundle) > 0:
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caBundle) {
			return nil, errors.New("spec.acme.caBundle: no PEM certificate found")
		}
		cfg.RootCAs = pool
	}
	t.TLSClientConfig = cfg
	return t, nil
}

package acme

import (
	"encoding/base64"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/core/ports"
	"github.com/certfn/certfn/internal/localmode"
)

// hostCounter records every ACME HTTP round trip (every attempt, below
// the retry layers) per server host, with the fake-clock time it was
// made. Unlike the harness's recorder it wraps each client's own
// transport, so issuers of several servers (each with its own TLS
// settings) can share one runtime.
type hostCounter struct {
	clk ports.Clock
	mu  sync.Mutex
	at  map[string][]time.Time
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// wrap is a localmode ACMEOptions.WrapTransport.
func (h *hostCounter) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		h.mu.Lock()
		if h.at == nil {
			h.at = map[string][]time.Time{}
		}
		h.at[r.URL.Host] = append(h.at[r.URL.Host], h.clk.Now())
		h.mu.Unlock()
		return next.RoundTrip(r)
	})
}

// trips returns the fake-clock times of the round trips to host.
func (h *hostCounter) trips(host string) []time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]time.Time(nil), h.at[host]...)
}

// rounds returns the distinct fake-clock times of the round trips to host:
// one per attempt of the issuer step (the clock stands still during a
// step, whatever the HTTP libraries retry inside it).
func (h *hostCounter) rounds(host string) []time.Time {
	var out []time.Time
	for _, t := range h.trips(host) {
		if len(out) == 0 || !out[len(out)-1].Equal(t) {
			out = append(out, t)
		}
	}
	return out
}

// maxTripsPerAttempt bounds the round trips of one failing registration:
// acmez tries a request 3 times, and each GET goes through
// go-retryablehttp's 3 tries.
const maxTripsPerAttempt = 9

// brokenServer is an ACME directory URL that cannot work, with the phrases
// the issuer's Ready message must contain.
type brokenServer struct {
	name   string
	dirURL string
	want   []string
}

func (b brokenServer) host() string {
	u, _ := url.Parse(b.dirURL)
	return u.Host
}

// closedPort is a directory URL on a loopback port nobody listens on.
func closedPort(t *testing.T) brokenServer {
	return brokenServer{name: "closed-port", dirURL: fmt.Sprintf("https://127.0.0.1:%d/broken-dir", freePort(t)),
		want: []string{"cannot reach the ACME server", "connection refused"}}
}

// quietLog discards an HTTP server's error log (TLS handshake errors).
func quietLog() *log.Logger { return log.New(io.Discard, "", 0) }

// untrustedTLS is an HTTPS server whose certificate the issuer does not
// trust (no caBundle).
func untrustedTLS(t *testing.T) brokenServer {
	ts := httptest.NewUnstartedServer(http.NotFoundHandler())
	ts.Config.ErrorLog = quietLog()
	ts.StartTLS()
	t.Cleanup(ts.Close)
	return brokenServer{name: "untrusted-tls", dirURL: ts.URL + "/broken-dir",
		want: []string{"TLS certificate of the ACME server", "is not trusted", "spec.acme.caBundle", "certificate signed by unknown authority"}}
}

// answering is an HTTP server answering every request with status, the
// content type and body(n) for the n-th request.
func answering(t *testing.T, status int, contentType string, body func(n int64) string) string {
	var hits atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := hits.Add(1)
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		io.WriteString(w, body(n))
	}))
	t.Cleanup(ts.Close)
	return ts.URL + "/broken-dir"
}

func same(s string) func(int64) string { return func(int64) string { return s } }

func brokenIssuerYAML(name, dirURL, caBundle string) string {
	return fmt.Sprintf(`apiVersion: cert-manager.io/v1
kind: ClusterIssuer
metadata: {name: %s}
spec:
  acme:
    server: %s
    email: test@example.com
    privateKeySecretRef: {name: %s-account}%s
    solvers:
    - http01: {}
`, name, dirURL, name, caBundle)
}

func namedCertYAML(name, issuer string) string {
	return fmt.Sprintf(`apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: %s, namespace: default}
spec:
  secretName: %s-tls
  dnsNames: [%s.example.test]
  privateKey: {algorithm: ECDSA, size: 256}
  issuerRef: {name: %s, kind: ClusterIssuer}
`, name, name, name, issuer)
}

func (e *env) clusterIssuerReady(name string) *api.Condition {
	e.t.Helper()
	o, err := e.rt.Repo.Get(e.ctx, api.Key{Kind: api.KindClusterIssuer, Name: name})
	if err != nil {
		e.t.Fatal(err)
	}
	return api.FindCondition(o.(api.GenericIssuer).GetStatus().Conditions, api.IssuerConditionReady)
}

// An ACME server that cannot be used — nothing listening, a TLS
// certificate the issuer does not trust, garbage or no directory at the
// URL, a proxy's error page that differs on every request — leaves its
// issuer Ready=False with a reason a person understands, and a
// Certificate of that issuer says so in `certfn status`'s summary. The
// server is asked once per wait poll (10 minutes), never in a tight loop
// (the error page with a request id used to loop: each new message was
// written, and the write woke the issuer for another attempt at once).
// A server that comes back makes its issuer Ready on the next attempt,
// and the waiting Certificate is issued, without anything re-applied.
func TestUnusableACMEServer(t *testing.T) {
	counter := &hostCounter{}
	e := newEnv(t, envOpts{local: func(o *localmode.Options) {
		counter.clk = o.Clock
		o.ACME.WrapTransport = counter.wrap
	}})
	servers := []brokenServer{
		closedPort(t),
		untrustedTLS(t),
		{name: "garbage-json", dirURL: answering(t, 200, "application/json", same(`{"newNonce": 42, "meta": [`)),
			want: []string{"does not serve an ACME directory"}},
		{name: "not-a-directory", dirURL: answering(t, 200, "application/json", same(`{"hello": "world"}`)),
			want: []string{"does not serve an ACME directory"}},
		{name: "bad-gateway", dirURL: answering(t, 502, "text/html", func(n int64) string {
			return fmt.Sprintf("<html>502 Bad Gateway, request id %d%s</html>", n, strings.Repeat(" ", 1000))
		}), want: []string{"answered HTTP 502 (a server or proxy error)"}},
	}
	// A server down for maintenance (503 pages) that comes back as Pebble
	// once fixed is set: it redirects to Pebble's directory, whose URLs
	// point at Pebble. httptest servers share one certificate, so
	// Pebble's caBundle trusts both.
	var fixed atomic.Bool
	maint := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !fixed.Load() {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, "<html>down for maintenance</html>")
			return
		}
		http.Redirect(w, r, e.peb.dirURL, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(maint.Close)
	// Its directory path is its own: acmez caches directories process-wide
	// by URL for 12 h, and with -count > 1 a loopback port can come back
	// (a previous run's Pebble served https://127.0.0.1:<port>/dir).
	comeback := brokenServer{name: "comeback", dirURL: maint.URL + "/maintenance-dir", want: []string{"answered HTTP 503"}}
	servers = append(servers, comeback)

	start := e.clk.Now()
	for _, s := range servers {
		ca := ""
		if s.name == comeback.name {
			ca = "\n    caBundle: " + base64.StdEncoding.EncodeToString(e.peb.tlsPEM)
		}
		e.apply(brokenIssuerYAML(s.name, s.dirURL, ca))
		e.apply(namedCertYAML("cert-"+s.name, s.name))
	}
	// Ten simulated minutes (less one step) in steps of 5 s.
	e.until(120, 5*time.Second, func() bool { return false })

	for _, s := range servers {
		t.Run(s.name, func(t *testing.T) {
			c := e.clusterIssuerReady(s.name)
			if c == nil || c.Status != api.ConditionFalse {
				t.Fatalf("issuer Ready = %+v, want False", c)
			}
			t.Logf("Ready=False %s: %s", c.Reason, c.Message)
			if c.Reason != "ErrRegisterACMEAccount" {
				t.Errorf("reason %q, want ErrRegisterACMEAccount", c.Reason)
			}
			for _, w := range append([]string{s.dirURL}, s.want...) {
				if !strings.Contains(c.Message, w) {
					t.Errorf("Ready message %q does not contain %q", c.Message, w)
				}
			}
			// The server's answer itself (a page, a body) is never told.
			for _, body := range []string{"<html", "Bad Gateway", "down for maintenance", "newNonce", "hello"} {
				if strings.Contains(c.Message, body) {
					t.Errorf("Ready message %q echoes the server's answer (%q)", c.Message, body)
				}
			}
			if len(c.Message) > 800 {
				t.Errorf("Ready message of %d bytes", len(c.Message))
			}
			rounds, trips := counter.rounds(s.host()), counter.trips(s.host())
			t.Logf("%d attempts (%d round trips) in 10 simulated minutes", len(rounds), len(trips))
			if len(rounds) < 1 || len(rounds) > 2 || len(trips) > maxTripsPerAttempt*len(rounds) {
				t.Errorf("%d attempts with %d round trips in 10 simulated minutes, want 1 or 2 attempts of at most %d: %v",
					len(rounds), len(trips), maxTripsPerAttempt, rounds)
			}
			// `certfn status` explains the Certificate with the issuer's reason.
			rep, err := app.Explain(e.ctx, e.rt.Repo.Get, e.rt.Repo.EventsOf, nil, api.Key{Kind: api.KindCertificate, Namespace: "default", Name: "cert-" + s.name})
			if err != nil {
				t.Fatal(err)
			}
			if want := fmt.Sprintf("Not ready: issuer %q is not ready (%s): %s", s.name, c.Reason, c.Message); rep.Summary != want {
				t.Errorf("status summary %q, want %q", rep.Summary, want)
			}
			if rep.Permanent {
				t.Errorf("an unreachable ACME server is reported as permanent: a wait would give up on what may pass")
			}
		})
	}
	if n := len(e.orders()); n != 0 {
		t.Fatalf("%d Orders for issuers without an account: %s", n, e.describe(api.KindOrder))
	}

	// The server comes back: the next attempt (at the wait poll) registers
	// the account, and the waiting Certificate is issued.
	fixed.Store(true)
	if !e.until(200, 5*time.Second, func() bool { return e.ready("cert-" + comeback.name) }) {
		t.Fatalf("the issuer of a server that came back is not used: %+v\n%+v", e.clusterIssuerReady(comeback.name), e.cert("cert-"+comeback.name).Status.Conditions)
	}
	if c := e.clusterIssuerReady(comeback.name); c.Status != api.ConditionTrue {
		t.Fatalf("issuer Ready = %+v", c)
	}
	e.verify("cert-"+comeback.name+"-tls", "cert-"+comeback.name+".example.test")

	// The broken servers were asked again, never twice within 5 minutes.
	for _, s := range servers {
		if s.name == comeback.name {
			continue
		}
		rounds := counter.rounds(s.host())
		if len(rounds) < 2 {
			t.Errorf("%s: asked %d times in %s, want a retry after the wait poll", s.name, len(rounds), e.clk.Now().Sub(start))
		}
		for i := 1; i < len(rounds); i++ {
			if d := rounds[i].Sub(rounds[i-1]); d < 5*time.Minute {
				t.Errorf("%s: attempt %d only %s after the previous one", s.name, i+1, d)
			}
		}
		t.Logf("%s: attempts at %v", s.name, offsets(rounds, start))
	}
}

// offsets renders times relative to start.
func offsets(ts []time.Time, start time.Time) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = "+" + t.Sub(start).String()
	}
	return out
}

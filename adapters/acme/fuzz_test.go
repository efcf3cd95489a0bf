package acme

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mholt/acmez/v3/acme"

	"github.com/certfn/certfn/core/errs"
)

// maxErrorLen bounds the message of an error made from an ACME server's
// answer: it ends up in a status condition and an Event, so a server
// cannot make a record too large to store.
const maxErrorLen = 2048

// FuzzParseRetryAfter: a Retry-After header is the ACME server's to
// choose. Whatever it says, the delay is never negative nor beyond
// MaxRetryAfter (a huge number of seconds must not overflow into a
// negative or arbitrary delay), and a small number of seconds is taken
// as it is.
func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"", "0", "120", "-5", "soon", "Thu, 01 Jan 2026 00:01:00 GMT", "Wed, 31 Dec 2025 23:00:00 GMT",
		"86400", "604800", "9999999999", "18446744073", "9223372036854775807", "20000000000", "1e9", " 7", "Fri, 31 Dec 9999 23:59:59 GMT"} {
		f.Add(s)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, v string) {
		d := ParseRetryAfter(v, now)
		if d < 0 || d > MaxRetryAfter {
			t.Fatalf("ParseRetryAfter(%q) = %v, want 0 .. %v", v, d, MaxRetryAfter)
		}
		if n, err := strconv.Atoi(v); err == nil && n >= 0 && n <= int(MaxRetryAfter/time.Second) && d != time.Duration(n)*time.Second {
			t.Fatalf("ParseRetryAfter(%q) = %v, want %ds", v, d, n)
		}
	})
}

// FuzzMapError: whatever problem document an ACME server sends, mapError
// classifies it once, its message is bounded, a suggested delay is
// positive and at most MaxRetryAfter, and throttling (429, rateLimited,
// 503) is never permanent.
func FuzzMapError(f *testing.F) {
	for _, p := range []struct {
		status      int
		typ, detail string
		ra          time.Duration
	}{
		{429, acme.ProblemTypeRateLimited, "too many certificates", 0},
		{503, "", "down for maintenance", time.Minute},
		{400, acme.ProblemTypeMalformed, "bad request", 0},
		{403, acme.ProblemTypeUnauthorized, strings.Repeat("x", 100000), 0},
		{500, acme.ProblemTypeServerInternal, "oops", 0},
		{400, acme.ProblemTypeBadNonce, "", 0},
		{409, "urn:ietf:params:acme:error:alreadyReplaced", "replaced", 0},
		{0, "", "", 0},
	} {
		f.Add(p.status, p.typ, p.detail, int64(p.ra), 0)
		f.Add(p.status, p.typ, p.detail, int64(p.ra), 50)
	}
	c := &Client{dir: "https://acme.example/dir"}
	f.Fuzz(func(t *testing.T, status int, typ, detail string, ra int64, subproblems int) {
		p := acme.Problem{Status: status, Type: typ, Detail: detail}
		for i := 0; i < subproblems%100; i++ {
			p.Subproblems = append(p.Subproblems, acme.Subproblem{Problem: acme.Problem{Type: typ, Detail: detail}})
		}
		m := &meta{retryAfter: time.Duration(ra)}
		err := c.mapError("get order", fmt.Errorf("attempt 1: %w", p), m)
		if err == nil {
			t.Fatal("mapError returned nil")
		}
		if n := len(err.Error()); n > maxErrorLen {
			t.Fatalf("error message of %d bytes (max %d)", n, maxErrorLen)
		}
		if d, ok := errs.SuggestedDelay(err); ok && (d <= 0 || d > MaxRetryAfter) {
			t.Fatalf("suggested delay %v, want 0 < d ≤ %v", d, MaxRetryAfter)
		}
		if (status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable || typ == acme.ProblemTypeRateLimited) && errs.IsPermanent(err) {
			t.Fatalf("throttling classified permanent: %v", err)
		}
	})
}

const validRenewalInfo = `{"suggestedWindow":{"start":"2026-03-01T00:00:00Z","end":"2026-03-03T00:00:00Z"}}`

// renewalInfoServer is an ACME directory whose renewalInfo resource
// answers what the fuzzer chose.
type renewalInfoServer struct {
	mu         sync.Mutex
	status     int
	retryAfter string
	body       string
}

// FuzzRenewalInfo: whatever the server answers for renewal information
// (status, Retry-After, body), RenewalInfo never panics; an answer it
// takes has a usable window and a delay within 0 .. MaxRetryAfter; an
// error has a bounded message and, when it suggests a delay, one within
// MaxRetryAfter.
func FuzzRenewalInfo(f *testing.F) {
	for _, s := range []struct {
		status int
		ra     string
		body   string
	}{
		{200, "21600", validRenewalInfo},
		{200, "", `{"suggestedWindow":{"start":"2026-03-03T00:00:00Z","end":"2026-03-01T00:00:00Z"}}`},
		{200, "99999999999", `{"suggestedWindow":{"start":"2026-03-01T00:00:00Z","end":"2026-03-03T00:00:00Z"},"explanationURL":"https://x"}`},
		{200, "", `{"suggestedWindow":{}}`},
		{200, "", `not json`},
		{404, "", `{"type":"urn:ietf:params:acme:error:malformed","detail":"no such certificate"}`},
		{429, "99999999999", `{"type":"urn:ietf:params:acme:error:rateLimited","detail":"` + strings.Repeat("slow down ", 1000) + `"}`},
		{503, "", ``},
		{400, "", `{"type":"x","detail":"y","subproblems":[` + strings.Repeat(`{"type":"z","detail":"w"},`, 200) + `{}]}`},
	} {
		f.Add(s.status, s.ra, s.body)
	}
	srv := &renewalInfoServer{}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/dir" {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"newNonce":"%[1]s/nonce","newAccount":"%[1]s/acct","newOrder":"%[1]s/order","revokeCert":"%[1]s/revoke","keyChange":"%[1]s/key","renewalInfo":"%[1]s/ari/"}`, "http://"+r.Host)
			return
		}
		srv.mu.Lock()
		status, ra, body := srv.status, srv.retryAfter, srv.body
		srv.mu.Unlock()
		if ra != "" {
			w.Header().Set("Retry-After", ra)
		}
		if status >= 400 {
			w.Header().Set("Content-Type", "application/problem+json")
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	f.Cleanup(ts.Close)
	ari := &ariDirectory{next: captureTransport{next: http.DefaultTransport}, dir: ts.URL + "/dir"}
	hc := &http.Client{Transport: ari, Timeout: 5 * time.Second}
	c := &Client{dir: ts.URL + "/dir", hc: hc, ari: ari, ac: &acme.Client{Directory: ts.URL + "/dir", HTTPClient: hc}}
	leaf := testLeaf(f)
	f.Fuzz(func(t *testing.T, status int, ra, body string) {
		if status < 200 || status > 599 {
			status = 200 + (status%400+400)%400
		}
		if strings.ContainsAny(ra, "\r\n\x00") {
			ra = ""
		}
		srv.mu.Lock()
		srv.status, srv.retryAfter, srv.body = status, ra, body
		srv.mu.Unlock()
		ri, err := c.RenewalInfo(context.Background(), leaf)
		if body == validRenewalInfo && status == http.StatusOK && err != nil {
			t.Fatalf("a valid answer was refused: %v", err) // the harness itself works
		}
		if err != nil {
			if n := len(err.Error()); n > maxErrorLen {
				t.Fatalf("error message of %d bytes (max %d)", n, maxErrorLen)
			}
			if d, ok := errs.SuggestedDelay(err); ok && (d <= 0 || d > MaxRetryAfter) {
				t.Fatalf("suggested delay %v, want 0 < d ≤ %v", d, MaxRetryAfter)
			}
			return
		}
		if ri.WindowStart.IsZero() || !ri.WindowEnd.After(ri.WindowStart) {
			t.Fatalf("took an unusable window %s .. %s", ri.WindowStart, ri.WindowEnd)
		}
		if ri.RetryAfter < 0 || ri.RetryAfter > MaxRetryAfter {
			t.Fatalf("Retry-After %q taken as %v", ra, ri.RetryAfter)
		}
		if ri.CertificateID == "" {
			t.Fatal("no certificate identifier")
		}
	})
}

// testLeaf is a self-signed certificate with an authority key identifier
// (ARI's certificate identifier needs one).
func testLeaf(tb testing.TB) *x509.Certificate {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(42), Subject: pkix.Name{CommonName: "leaf"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), AuthorityKeyId: []byte{1, 2, 3, 4}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		tb.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

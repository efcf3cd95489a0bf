// Package http01 is certfn's HTTP-01 responder (the http01 function): it
// answers GET /.well-known/acme-challenge/{token} with the key
// authorization of a current, presented HTTP-01 Challenge for the host the
// request names, and 404 for anything else — no other path, no listing.
// It also holds the HTTP-01 self-check.
package http01

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/ports"
)

// PathPrefix is where ACME servers fetch HTTP-01 key authorizations.
const PathPrefix = "/.well-known/acme-challenge/"

// HostPathPrefix starts the path of a request redirected to the
// responder from the identifier's own web server, which names the host in
// the path because the Host header then names the responder:
// HostPathPrefix + <host> + PathPrefix + <token>. A redirect rule such as
// nginx's "return 302 https://<responder>/hosts/$host$request_uri;"
// produces it. Only the server that answers for <host> can send an ACME
// validator there, so the path's host is as trustworthy as a Host header.
const HostPathPrefix = "/hosts/"

// Tokens looks up the key authorization of a token.
type Tokens interface {
	// KeyAuthorization returns the key authorization for token when a
	// current, presented HTTP-01 Challenge for host (a CanonicalHost) has
	// it. A Challenge for another identifier never matches.
	KeyAuthorization(ctx context.Context, host, token string) (string, bool, error)
}

// Handler serves HTTP-01 tokens.
type Handler struct {
	Tokens Tokens
}

// ServeHTTP implements http.Handler: GET (or HEAD) of PathPrefix + a
// token in the base64url alphabet gets the key authorization as
// text/plain when a current Challenge for the request's host (its Host
// header, or the host named after HostPathPrefix) has that token; every
// other request gets 404 without a body that says why (405 for other
// methods on a token path).
func (h Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	host, token, ok := target(r)
	if !ok {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	ka, found, err := h.Tokens.KeyAuthorization(r.Context(), host, token)
	if err != nil {
		http.Error(w, "temporarily unavailable", http.StatusServiceUnavailable)
		return
	}
	if !found {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = io.WriteString(w, ka)
}

// target returns the canonical host and the token a request asks for.
func target(r *http.Request) (host, token string, ok bool) {
	path, rawHost := r.URL.Path, r.Host
	if rest, redirected := strings.CutPrefix(path, HostPathPrefix); redirected {
		i := strings.Index(rest, "/")
		if i < 0 {
			return "", "", false
		}
		rawHost, path = rest[:i], rest[i:]
	}
	token, ok = strings.CutPrefix(path, PathPrefix)
	if !ok || !validToken(token) {
		return "", "", false
	}
	host, ok = CanonicalHost(rawHost)
	return host, token, ok
}

// CanonicalHost returns the identifier a Host header (or a Challenge's
// spec.dnsName) names, for comparing the two: a DNS name in lower case
// without a port or a trailing dot; an IP address (RFC 8738: a Host
// header holds an IPv6 address in brackets) in its canonical text form,
// without brackets. ok is false for an empty or malformed host, a
// wildcard, and an IPv6 address with a zone.
func CanonicalHost(h string) (string, bool) {
	if strings.HasPrefix(h, "[") {
		end := strings.Index(h, "]")
		if end < 0 {
			return "", false
		}
		if rest := h[end+1:]; rest != "" && !validPort(rest) {
			return "", false
		}
		a, err := netip.ParseAddr(h[1:end])
		if err != nil || !a.Is6() || a.Zone() != "" {
			return "", false
		}
		return a.String(), true
	}
	if a, err := netip.ParseAddr(h); err == nil { // a bare IP (a Challenge's identifier)
		if a.Zone() != "" {
			return "", false
		}
		return a.Unmap().String(), true
	}
	if i := strings.LastIndexByte(h, ':'); i >= 0 {
		if !validPort(h[i:]) {
			return "", false
		}
		h = h[:i]
	}
	h = strings.ToLower(strings.TrimSuffix(h, "."))
	if h == "" || len(h) > 253 {
		return "", false
	}
	if a, err := netip.ParseAddr(h); err == nil {
		return a.Unmap().String(), a.Is4() || a.Is4In6()
	}
	for _, c := range h {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_') {
			return "", false
		}
	}
	return h, true
}

// validPort: ":" and 1 to 5 digits.
func validPort(p string) bool {
	if len(p) < 2 || len(p) > 6 || p[0] != ':' {
		return false
	}
	for _, c := range p[1:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// validToken: ACME tokens are base64url (RFC 8555 §8.3), at least 22 characters.
func validToken(t string) bool {
	if len(t) < 1 || len(t) > 256 {
		return false
	}
	for _, c := range t {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// Serves reports whether ch answers an HTTP-01 request of token for host
// (a CanonicalHost): a presented, not final HTTP-01 Challenge with that
// token for that identifier. A wildcard identifier is never served
// (RFC 8555 §8.3: wildcards are validated with DNS-01 only).
func Serves(ch *api.Challenge, host, token string) bool {
	if ch.Spec.Type != api.ACMEChallengeTypeHTTP01 || !ch.Status.Presented || ch.Status.State.IsFinal() ||
		ch.Spec.Token == "" || ch.Spec.Token != token || ch.Spec.Wildcard || strings.HasPrefix(ch.Spec.DNSName, "*") {
		return false
	}
	h, ok := CanonicalHost(ch.Spec.DNSName)
	return ok && h == host
}

// StoreTokens finds tokens by listing Challenges in the state store. The
// token map is cached for TTL (default 1 s); an unknown token refreshes it
// at most every MissRefresh (default 250 ms), so probing for tokens costs
// at most a few store reads per second. Safe for concurrent use.
type StoreTokens struct {
	Store ports.Store
	// Clock measures cache age (a wall clock: this is request-rate
	// bookkeeping, not domain time).
	Clock       ports.Clock
	TTL         time.Duration
	MissRefresh time.Duration

	mu     sync.Mutex
	tokens map[string]string
	at     time.Time
}

// KeyAuthorization implements Tokens.
func (s *StoreTokens) KeyAuthorization(ctx context.Context, host, token string) (string, bool, error) {
	k := tokenKey(host, token)
	ttl, miss := s.TTL, s.MissRefresh
	if ttl <= 0 {
		ttl = time.Second
	}
	if miss <= 0 {
		miss = 250 * time.Millisecond
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.Clock.Now()
	age := now.Sub(s.at)
	if s.tokens != nil && age < ttl {
		if ka, ok := s.tokens[k]; ok {
			return ka, true, nil
		}
		if age < miss {
			return "", false, nil
		}
	}
	m, err := s.load(ctx)
	if err != nil {
		return "", false, err
	}
	s.tokens, s.at = m, now
	ka, ok := m[k]
	return ka, ok, nil
}

// Invalidate drops the cache: the next lookup reads the store. The
// Challenge steps call it after presenting an HTTP-01 challenge when the
// responder runs in the same process.
func (s *StoreTokens) Invalidate() {
	s.mu.Lock()
	s.tokens = nil
	s.mu.Unlock()
}

// tokenKey keys the cache by identifier and token: a token is served only
// for its Challenge's host, and two Challenges with one token (a server
// chooses tokens) for different hosts do not hide each other.
func tokenKey(host, token string) string { return host + " " + token }

func (s *StoreTokens) load(ctx context.Context) (map[string]string, error) {
	recs, err := s.Store.List(ctx, ports.ListOptions{Kind: api.KindChallenge})
	if err != nil {
		return nil, fmt.Errorf("list challenges: %w", err)
	}
	m := map[string]string{}
	for _, rec := range recs {
		// Decoding only what is needed keeps this cheap.
		var c api.Challenge
		if err := json.Unmarshal(rec.Data, &c); err != nil {
			continue
		}
		host, ok := CanonicalHost(c.Spec.DNSName)
		if ok && Serves(&c, host, c.Spec.Token) {
			m[tokenKey(host, c.Spec.Token)] = c.Spec.Key
		}
	}
	return m, nil
}

// SelfCheck fetches http://<dnsName>/.well-known/acme-challenge/<token>
// once (plus one retry on a network error, through go-retryablehttp) and
// compares the body with the key authorization.
type SelfCheck struct {
	// Addr, when set, is dialled instead of <dnsName>:80 (the Host header
	// still names the identifier): for a responder on another port, and
	// for tests.
	Addr string
	// Timeout of one check (default 5 s).
	Timeout time.Duration
	// NoResponder, when set, says that no HTTP-01 responder runs in this
	// process (and how to start one): each failure's reason starts with
	// it, then "; " and what the check saw, so that a refused connection
	// or a failed lookup of the name does not look like a DNS problem.
	NoResponder string
	// AddrHint, when set, is appended ("; " and it) to each failure's
	// reason while Addr is not set and a responder runs (NoResponder is
	// empty): how to point the check elsewhere when <dnsName>:80 does not
	// reach the responder (local mode names --http01-self-check-addr).
	AddrHint string

	once sync.Once
	hc   *http.Client
}

func (s *SelfCheck) client() *http.Client {
	s.once.Do(func() {
		d := &net.Dialer{Timeout: 5 * time.Second}
		tr := &http.Transport{DisableKeepAlives: true, DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if s.Addr != "" {
				addr = s.Addr
			}
			return d.DialContext(ctx, network, addr)
		}}
		rc := retryablehttp.NewClient()
		rc.HTTPClient = &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		rc.RetryMax, rc.RetryWaitMin, rc.RetryWaitMax, rc.Logger = 1, 100*time.Millisecond, 500*time.Millisecond, nil
		rc.CheckRetry = func(ctx context.Context, resp *http.Response, err error) (bool, error) {
			if err != nil && ctx.Err() == nil {
				return true, nil // network error: one more try
			}
			return false, nil
		}
		rc.ErrorHandler = retryablehttp.PassthroughErrorHandler
		t := s.Timeout
		if t <= 0 {
			t = 5 * time.Second
		}
		s.hc = rc.StandardClient()
		s.hc.Timeout = t
	})
	return s.hc
}

// Check implements challenges.SelfChecker.
func (s *SelfCheck) Check(ctx context.Context, ch *api.Challenge) (bool, string, error) {
	ok, why, err := s.check(ctx, ch)
	switch {
	case ok || err != nil:
	case s.NoResponder != "":
		why = s.NoResponder + "; " + why
	case s.Addr == "" && s.AddrHint != "":
		why += "; " + s.AddrHint
	}
	return ok, why, err
}

func (s *SelfCheck) check(ctx context.Context, ch *api.Challenge) (bool, string, error) {
	url := "http://" + ch.Spec.DNSName + PathPrefix + ch.Spec.Token
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false, "", fmt.Errorf("self-check request for %s: %w", url, err)
	}
	resp, err := s.client().Do(req)
	if err != nil {
		return false, fmt.Sprintf("GET %s: %v", url, err), nil
	}
	defer resp.Body.Close() //nolint:errcheck
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Sprintf("GET %s: HTTP %d", url, resp.StatusCode), nil
	}
	if strings.TrimSpace(string(body)) != ch.Spec.Key {
		return false, fmt.Sprintf("GET %s: the body is not the expected key authorization", url), nil
	}
	return true, "", nil
}

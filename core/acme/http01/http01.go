// Package http01 is certfn's HTTP-01 responder (DESIGN.md §4, the http01
// function): it answers GET /.well-known/acme-challenge/{token} with the
// key authorization of a current, presented HTTP-01 Challenge, and 404 for
// anything else — no other path, no listing. It also holds the HTTP-01
// self-check.
package http01

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/certfn/certfn/core/api"
	"github.com/certfn/certfn/core/ports"
)

// PathPrefix is where ACME servers fetch HTTP-01 key authorizations.
const PathPrefix = "/.well-known/acme-challenge/"

// Tokens looks up the key authorization of a token.
type Tokens interface {
	// KeyAuthorization returns the key authorization for token when a
	// current, presented HTTP-01 Challenge has it.
	KeyAuthorization(ctx context.Context, token string) (string, bool, error)
}

// Handler serves HTTP-01 tokens.
type Handler struct {
	Tokens Tokens
}

// ServeHTTP implements http.Handler: GET (or HEAD) of PathPrefix + a
// token in the base64url alphabet gets the key authorization as
// text/plain; every other request gets 404 (405 for other methods on a
// token path).
func (h Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	token, ok := strings.CutPrefix(r.URL.Path, PathPrefix)
	if !ok || !validToken(token) {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	ka, found, err := h.Tokens.KeyAuthorization(r.Context(), token)
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
func (s *StoreTokens) KeyAuthorization(ctx context.Context, token string) (string, bool, error) {
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
		if ka, ok := s.tokens[token]; ok {
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
	ka, ok := m[token]
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

func (s *StoreTokens) load(ctx context.Context) (map[string]string, error) {
	recs, err := s.Store.List(ctx, ports.ListOptions{Kind: api.KindChallenge})
	if err != nil {
		return nil, fmt.Errorf("list challenges: %w", err)
	}
	m := map[string]string{}
	for _, rec := range recs {
		// Decoding only what is needed keeps this cheap.
		var c struct {
			Spec struct {
				Type  api.ACMEChallengeType `json:"type"`
				Token string                `json:"token"`
				Key   string                `json:"key"`
			} `json:"spec"`
			Status api.ChallengeStatus `json:"status"`
		}
		if err := json.Unmarshal(rec.Data, &c); err != nil {
			continue
		}
		if c.Spec.Type == api.ACMEChallengeTypeHTTP01 && c.Status.Presented && !c.Status.State.IsFinal() && c.Spec.Token != "" {
			m[c.Spec.Token] = c.Spec.Key
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
	if !ok && err == nil && s.NoResponder != "" {
		why = s.NoResponder + "; " + why
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

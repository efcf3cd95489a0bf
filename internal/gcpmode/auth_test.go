package gcpmode_test

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"google.golang.org/api/idtoken"
	"google.golang.org/api/option"

	"github.com/certfn/certfn/adapters/httpapi"
	"github.com/certfn/certfn/core/app"
	"github.com/certfn/certfn/internal/gcpmode"
)

const audience = "https://certfn-api-abc-ew.a.run.app"

// signer makes RS256 ID tokens and serves their key as Google's JWK set.
type signer struct {
	key *rsa.PrivateKey
	srv *httptest.Server
}

func newSigner(t *testing.T) *signer {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	s := &signer{key: k}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		b64 := base64.RawURLEncoding.EncodeToString
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": []map[string]string{{"kid": "k1", "kty": "RSA", "alg": "RS256", "use": "sig",
			"n": b64(k.N.Bytes()), "e": b64(big.NewInt(int64(k.E)).Bytes())}}})
	}))
	t.Cleanup(s.srv.Close)
	return s
}

// validator is idtoken's validator fetching Google's keys from s (every
// request of its client goes to s).
func (s *signer) validator(t *testing.T) *idtoken.Validator {
	t.Helper()
	u, _ := url.Parse(s.srv.URL)
	hc := &http.Client{Transport: rewrite{u}}
	v, err := idtoken.NewValidator(context.Background(), option.WithHTTPClient(hc))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

type rewrite struct{ to *url.URL }

func (r rewrite) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.URL.Scheme, req.URL.Host = r.to.Scheme, r.to.Host
	return http.DefaultTransport.RoundTrip(req)
}

func (s *signer) token(t *testing.T, claims map[string]any) string {
	t.Helper()
	b64 := base64.RawURLEncoding.EncodeToString
	h, _ := json.Marshal(map[string]string{"alg": "RS256", "kid": "k1", "typ": "JWT"})
	p, _ := json.Marshal(claims)
	signing := b64(h) + "." + b64(p)
	sum := sha256.Sum256([]byte(signing))
	sig, err := rsa.SignPKCS1v15(rand.Reader, s.key, crypto.SHA256, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	return signing + "." + b64(sig)
}

func claims(mut func(map[string]any)) map[string]any {
	c := map[string]any{"iss": "https://accounts.google.com", "aud": audience, "sub": "1234567890",
		"email": "ci@proj-1.iam.gserviceaccount.com", "email_verified": true,
		"iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix()}
	if mut != nil {
		mut(c)
	}
	return c
}

func TestGoogleAuthenticator(t *testing.T) {
	s := newSigner(t)
	other := newSigner(t)
	auth := gcpmode.GoogleAuthenticator(s.validator(t), []string{audience}, map[string]bool{"admin@example.com": true})
	for _, tc := range []struct {
		name   string
		header string
		user   string   // "" = refused
		groups []string // must be among the caller's groups
		want   string   // error substring
	}{
		{"service account", "Bearer " + s.token(t, claims(nil)), "ci@proj-1.iam.gserviceaccount.com", []string{"gcp:project:proj-1", "system:authenticated"}, ""},
		{"admin user", "Bearer " + s.token(t, claims(func(c map[string]any) { c["email"] = "Admin@Example.com" })), "admin@example.com", []string{app.SuperuserGroup}, ""},
		{"no header", "", "", nil, "no Google ID token"},
		{"basic auth", "Basic YWxpY2U6cHc=", "", nil, "no Google ID token"},
		{"other audience", "Bearer " + s.token(t, claims(func(c map[string]any) { c["aud"] = "https://elsewhere" })), "", nil, "audience"},
		{"expired", "Bearer " + s.token(t, claims(func(c map[string]any) { c["exp"] = time.Now().Add(-time.Hour).Unix() })), "", nil, "expired"},
		{"signed by another key", "Bearer " + other.token(t, claims(nil)), "", nil, "not valid"},
		{"not Google's issuer", "Bearer " + s.token(t, claims(func(c map[string]any) { c["iss"] = "https://evil.example" })), "", nil, "issuer"},
		{"unverified e-mail", "Bearer " + s.token(t, claims(func(c map[string]any) { c["email_verified"] = false })), "", nil, "not verified"},
		{"no e-mail", "Bearer " + s.token(t, claims(func(c map[string]any) { delete(c, "email") })), "", nil, "no e-mail"},
		{"garbage", "Bearer not.a.jwt", "", nil, "not valid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/v1/certificates", nil)
			r.Host = "certfn-api-abc-ew.a.run.app"
			if tc.header != "" {
				r.Header.Set("Authorization", tc.header)
			}
			c, err := auth(r)
			if tc.user == "" {
				if !errors.Is(err, httpapi.ErrUnauthenticated) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("err = %v, want unauthenticated containing %q", err, tc.want)
				}
				return
			}
			if err != nil || c.Username != tc.user {
				t.Fatalf("caller %+v, err %v; want %s", c, err, tc.user)
			}
			for _, g := range tc.groups {
				found := false
				for _, h := range c.Groups {
					found = found || h == g
				}
				if !found {
					t.Errorf("groups %v lack %s", c.Groups, g)
				}
			}
		})
	}
}

// The audience is fixed at start, never taken from the request: a token
// minted for another service is refused even with that service's Host
// header, and without a configured audience every request is refused.
func TestGoogleAuthenticatorFixedAudience(t *testing.T) {
	s := newSigner(t)
	forOther := s.token(t, claims(func(c map[string]any) { c["aud"] = "https://other.example" }))
	forUs := s.token(t, claims(nil))
	for _, tc := range []struct {
		name      string
		audiences []string
		host      string
		token     string
		ok        bool
	}{
		{"another service's token replayed with its Host", []string{audience}, "other.example", forOther, false},
		{"another service's token with our Host", []string{audience}, "certfn-api-abc-ew.a.run.app", forOther, false},
		{"our token through any Host", []string{audience}, "other.example", forUs, true},
		{"one of several audiences", []string{"https://api.example.com", audience}, "api.example.com", forUs, true},
		{"no audience configured, token for the Host", nil, "other.example", forOther, false},
		{"empty audience configured", []string{" "}, "certfn-api-abc-ew.a.run.app", forUs, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			auth := gcpmode.GoogleAuthenticator(s.validator(t), tc.audiences, nil)
			r := httptest.NewRequest("GET", "/v1/certificates", nil)
			r.Host = tc.host
			r.Header.Set("Authorization", "Bearer "+tc.token)
			_, err := auth(r)
			if (err == nil) != tc.ok || err != nil && !errors.Is(err, httpapi.ErrUnauthenticated) {
				t.Fatalf("err %v, want ok=%v", err, tc.ok)
			}
			if len(tc.audiences) == 0 && !strings.Contains(err.Error(), "CERTFN_API_AUDIENCE") {
				t.Fatalf("err %v, want it to name CERTFN_API_AUDIENCE", err)
			}
		})
	}
}
